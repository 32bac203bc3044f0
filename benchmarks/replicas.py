"""N HTTP replicas of the server behind HAProxy, on free loopback ports, for the scale benchmark and its test.

`cluster(n, root)` starts `n` replicas (`mcp-codetools serve --transport http --port 0`; each prints where it
listens), writes a copy of deploy/haproxy/haproxy.cfg into a temporary folder with those ports (and its own
front, peer and admin socket), starts `haproxy -db` on it, and waits until HAProxy sees every replica up.
Every process runs in its own process group; leaving the `with` block, however it is left, kills each group
and reaps it, and removes the folder (with the replicas' scratch folders: a killed one leaves its own).
`install_stop_handler()` makes SIGTERM and SIGHUP unwind the same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "deploy" / "haproxy" / "haproxy.cfg"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 10
_REPLICAS = re.compile(r"( *)# replicas: start\n.*?# replicas: end\n", re.S)


@dataclass
class Process:
    """One started process (its own group), its output kept in memory by a reader thread."""

    name: str
    proc: subprocess.Popen[bytes]
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return "".join(self.lines)

    def kill(self) -> None:
        """SIGKILL the whole group now and reap the leader (a crash, as far as anyone else can tell)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._close_output()

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL what is left of it (a replica's Bash jobs too), and reap the leader."""
        if self.proc.returncode is None:  # not reaped yet: the group id is still this process's own
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while not _exited(self.proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._close_output()

    def _close_output(self) -> None:
        """Close the output pipe once its reader has seen it end (the group is dead: it ends at once)."""
        if self.reader is not None:
            self.reader.join(timeout=STOP_TIMEOUT_S)
        if self.proc.stdout is not None and (self.reader is None or not self.reader.is_alive()):
            self.proc.stdout.close()


def _exited(pid: int) -> bool:
    """Whether child `pid` has exited, without reaping it (a zombie keeps its pid and group id reserved)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


@dataclass
class Replica(Process):
    url: str = ""
    port: int = 0


@dataclass
class Cluster:
    """The running replicas and the balancer in front of them."""

    replicas: list[Replica]
    haproxy: Process | None
    url: str
    admin_socket: Path | None
    folder: Path

    def pids(self) -> list[int]:
        return [p.pid for p in self.replicas] + ([self.haproxy.pid] if self.haproxy else [])

    def admin(self, command: str) -> str:
        """One command on HAProxy's admin socket (e.g. `show servers state`), and its answer."""
        assert self.admin_socket is not None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(self.admin_socket))
            sock.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def servers_up(self) -> dict[str, bool]:
        """Each replica's name and whether HAProxy's checks have it up (`show stat`, CSV)."""
        lines = self.admin("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        name, status = header.index("svname"), header.index("status")
        up: dict[str, bool] = {}
        for line in lines[1:]:
            cells = line.split(",")
            if len(cells) > status and cells[0] == "replicas" and cells[name] not in ("FRONTEND", "BACKEND"):
                up[cells[name]] = cells[status] == "UP"
        return up


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _spawn(name: str, argv: list[str], env: dict[str, str], cwd: Path) -> Process:
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group: killpg reaches its children, and a ^C here does not
        bufsize=0,
    )
    return Process(name, proc)


def _read_until_url(process: Process, deadline: float) -> str:
    """The replica's start-up line names its URL; keep reading its output in a thread afterwards."""
    stream = process.proc.stdout
    assert stream is not None
    while True:
        readable, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        raw = stream.readline() if readable else b""
        if not raw:
            raise RuntimeError(f"{process.name} printed no URL within {START_TIMEOUT_S} s:\n{process.output()}")
        line = raw.decode(errors="replace")
        process.lines.append(line)
        if "serving MCP over HTTP at http://" in line:
            process.reader = threading.Thread(target=_drain, args=(process,), daemon=True)
            process.reader.start()
            return line[line.index("http://") :].split(";")[0].strip()


def _drain(process: Process) -> None:
    assert process.proc.stdout is not None
    for raw in iter(process.proc.stdout.readline, b""):
        process.lines.append(raw.decode(errors="replace"))


def haproxy_config(
    template: str, replicas: list[tuple[str, int]], front: int, peer: int, rundir: Path, *, sticky: bool = True
) -> str:
    """The template with these replicas, front port, peer port and admin socket folder filled in.

    `sticky=False` drops the stickiness rules and balances at random: the control run, where state
    must land on the wrong replica (if it did not, the benchmark could not tell). Not round robin: two
    clients calling in step were each sent to the same replica every time, and the control saw nothing
    (a tiny run in CI, 2026-12-07).
    """
    if not sticky:
        template = re.sub(r"(?m)^ *(stick |stick-table |use-server ).*\n", "", template)
        template = re.sub(r"(?m)^( *)balance leastconn.*$", r"\1balance random", template)
    match = _REPLICAS.search(template)
    if match is None:
        raise ValueError("the HAProxy template has no '# replicas: start' ... '# replicas: end' block")
    indent = match.group(1)
    servers = "".join(f"{indent}server {name} 127.0.0.1:{port}\n" for name, port in replicas)
    text = template[: match.start()] + f"{indent}# replicas: start\n{servers}{indent}# replicas: end\n"
    text += template[match.end() :]
    for name, value in (
        ("MCP_LB_BIND", f"127.0.0.1:{front}"),
        ("MCP_LB_PEER", f"127.0.0.1:{peer}"),
        ("MCP_LB_RUNDIR", str(rundir)),
    ):
        text, count = re.subn(r"\$\{" + name + r"-[^}]*\}", value, text)
        if count != 1:
            raise ValueError(f"the HAProxy template should use ${{{name}-...}} once, not {count} times")
    return text


def _server_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CODETOOLS_")}
    return {**env, "PYTHONUNBUFFERED": "1", **(extra or {})}


def start_replica(name: str, root: Path, env: dict[str, str] | None = None) -> Replica:
    """One `mcp-codetools serve --transport http` on a free loopback port, in its own group.

    It is started with `--replica NAME`, the name HAProxy's config gives it, so the 2026-07-28 state ids it
    mints (`st_NAME_...`) route back to it.
    """
    argv = [sys.executable, "-m", "mcp_codetools", "serve", "--transport", "http", "--port", "0", "--root", str(root)]
    argv += ["--replica", name]
    base = _spawn(name, argv, _server_env(env), root)
    replica = Replica(base.name, base.proc, base.lines)
    try:
        replica.url = _read_until_url(replica, time.monotonic() + START_TIMEOUT_S)
    except BaseException:
        replica.stop()
        raise
    replica.port = int(replica.url.rsplit(":", 1)[1].split("/")[0])
    return replica


@contextlib.contextmanager
def cluster(
    n: int,
    root: Path,
    *,
    balancer: bool = True,
    sticky: bool = True,
    env: dict[str, str] | None = None,
    backends: list[tuple[str, int]] | None = None,
) -> Iterator[Cluster]:
    """`n` replicas serving `root`, behind HAProxy unless `balancer` is false (then `url` is the first replica).

    `sticky=False`: HAProxy without its stickiness rules (see `haproxy_config`). `backends` (name, port): HAProxy
    in front of servers already listening there instead of `n` started replicas (a test of the routing alone).
    """
    started: list[Process] = []
    folder = Path(tempfile.mkdtemp(prefix="mcp-scale-lb-"))
    try:
        replicas: list[Replica] = []
        # The replicas' scratch folders go here, so those of a killed replica go with the folder.
        (folder / "tmp").mkdir()
        env = {**(env or {}), "TMPDIR": str(folder / "tmp")}
        for i in range(n if backends is None else 0):
            replica = start_replica(f"r{i + 1}", root, env)
            started.append(replica)
            replicas.append(replica)
        names = [(r.name, r.port) for r in replicas] if backends is None else backends
        if not balancer:
            yield Cluster(replicas, None, replicas[0].url, None, folder)
            return
        haproxy = shutil.which("haproxy")
        if haproxy is None:
            raise RuntimeError("haproxy is not installed (Debian: apt-get install haproxy)")
        front = free_port()
        shutil.copytree(TEMPLATE.parent / "errors", folder / "errors")
        config = folder / "haproxy.cfg"
        text = haproxy_config(TEMPLATE.read_text(), names, front, free_port(), folder, sticky=sticky)
        config.write_text(text, encoding="utf-8")
        lb = _spawn("haproxy", [haproxy, "-db", "-f", str(config)], dict(os.environ), folder)
        started.append(lb)
        threading.Thread(target=_drain, args=(lb,), daemon=True).start()
        running = Cluster(replicas, lb, f"http://127.0.0.1:{front}/mcp", folder / "mcp-lb.sock", folder)
        _wait_until_up(running, len(names))
        yield running
    finally:
        for process in reversed(started):
            process.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_until_up(running: Cluster, count: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    assert running.haproxy is not None
    while True:
        if running.haproxy.proc.poll() is not None:
            raise RuntimeError(f"haproxy exited ({running.haproxy.proc.returncode}):\n{running.haproxy.output()}")
        with contextlib.suppress(OSError):
            up = running.servers_up()
            if len(up) == count and all(up.values()):
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"HAProxy did not see every replica up within {START_TIMEOUT_S} s")
        time.sleep(0.1)


def install_stop_handler() -> None:
    """SIGTERM and SIGHUP raise SystemExit in the main thread, so `cluster` cleans up as for any other exit."""

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
