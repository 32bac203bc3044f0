"""The scale benchmark runs end to end in a tiny mode: 2 replicas behind HAProxy, 2 clients, 20 calls a run.

Both eras: 2025 sessions stuck by `Mcp-Session-Id`, and 2026-07-28 clients passing back replica-named state
ids that HAProxy routes by `Mcp-Param-State-Id`. It checks what the benchmark checks (no state on the wrong
replica, a killed replica's clients told to start a new session or state, the other clients untouched, whole
files; the runs without stickiness or handle routing do see wrong-replica errors), and that it leaves no
process and no file behind. Skipped where HAProxy is not installed.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import facilities

REPO = Path(__file__).resolve().parent.parent
LIMIT_S = 240

pytestmark = pytest.mark.serial  # replicas, HAProxy and clients in a time limit: not beside other heavy tests


def need_haproxy() -> None:
    if shutil.which("haproxy") is None:
        facilities.missing("haproxy", "it is not installed (Debian: apt-get install haproxy)")


@pytest.fixture(autouse=True)
def haproxy() -> None:
    need_haproxy()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temporary folder with a short path: HAProxy's admin socket path must fit in about 100 bytes."""
    folder = Path(tempfile.mkdtemp(prefix="scale-", dir="/tmp" if Path("/tmp").is_dir() else None))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_scale_tiny_run_holds_every_check_and_leaves_nothing(short_tmp: Path) -> None:
    argv = [sys.executable, "-m", "benchmarks.scale", "--replicas", "2", "--clients", "2", "--calls", "20"]
    # Routing is what is checked: no throughput baseline (two replica starts), clusters shared where a run
    # allows it (three instead of six), and no sandbox around the replicas' Bash calls (a third of the calls;
    # the sandbox has its own tests).
    argv += ["--no-baseline", "--reuse-replicas", "--no-sandbox"]
    proc = subprocess.Popen(
        [*argv, "--json", "--time-limit", "60"],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(short_tmp)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the script unwinds: its replicas and HAProxy are killed and reaped
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"no result within {LIMIT_S} s:\n{err[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    report = json.loads(out)
    assert report["problems"] == []
    by_era = {era: [o for o in report["outcomes"] if o["era"] == era] for era in ("2025", "2026")}
    for era, told in (("2025", "start a new session"), ("2026", "start a new state")):
        assert len(by_era[era]) == 3, [o["label"] for o in report["outcomes"]]
        steady, killed, control = by_era[era]

        assert steady["calls"] == 20 and steady["wrong_replica"] == [] and steady["other_errors"] == []
        assert steady["switched_sessions"] == 0 and len(steady["sessions_per_replica"]) >= 1, steady

        assert killed["killed"] and killed["affected_clients"] >= 1
        assert len(killed["affected_saw"]) == killed["affected_clients"]
        assert all(told in saw.lower() for saw in killed["affected_saw"]), killed["affected_saw"]
        assert killed["unaffected_errors"] == [] and killed["wrong_replica"] == []
        assert killed["files_whole"] == killed["files_checked"] == 2 and killed["temp_files_left"] == []
        assert killed["calls"] == 20  # the lost client started again and finished its calls

        assert control["wrong_replica"], f"{era}: without routing the checks must see state on the wrong replica"
    assert any("[handle wrong_replica]" in e for e in by_era["2026"][2]["wrong_replica"]), "answered as misrouted"

    pids = [pid for outcome in report["outcomes"] for pid in outcome["pids"]]
    assert pids and not [pid for pid in pids if alive(pid)]
    assert list(short_tmp.iterdir()) == []


def test_the_template_is_valid_and_outlasts_the_longest_call(short_tmp: Path) -> None:
    from benchmarks.replicas import TEMPLATE, haproxy_config
    from mcp_codetools.settings import Settings

    text = haproxy_config(TEMPLATE.read_text(), [("r1", 8801), ("r2", 8802)], 8800, 8899, short_tmp)
    (short_tmp / "haproxy.cfg").write_text(text, encoding="utf-8")
    shutil.copytree(TEMPLATE.parent / "errors", short_tmp / "errors")
    checked = subprocess.run(
        ["haproxy", "-c", "-f", str(short_tmp / "haproxy.cfg")], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    minutes = {
        line.split()[1]: int(line.split()[2].removesuffix("m"))
        for line in text.splitlines()
        if line.strip().startswith(("timeout client ", "timeout server "))
    }
    longest_call_s = Settings().bash_max_timeout_ms / 1000
    assert minutes.keys() == {"client", "server"}
    assert all(value * 60 > longest_call_s + 60 for value in minutes.values()), minutes


class _Answer(http.server.BaseHTTPRequestHandler):
    """200 and an empty JSON object to anything: a stand-in replica (HAProxy names the one it chose)."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        with contextlib.suppress(ConnectionError):  # HAProxy's health check may hang up before the body
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def stand_ins(count: int) -> Iterator[list[tuple[str, int]]]:
    """`count` HTTP servers in threads of this process, named r1, r2, ... as the replicas are."""
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer) for _ in range(count)]
    threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    try:
        yield [(f"r{i + 1}", server.server_address[1]) for i, server in enumerate(servers)]
    finally:
        for server, thread in zip(servers, threads, strict=True):
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)


def test_a_2026_state_handle_header_reaches_the_replica_it_names(tmp_path: Path) -> None:
    """HAProxy's routing alone, in front of stand-ins: two replica starts cost ~3 CPU-s, and the tiny run above
    checks real replicas behind the same config (no call of its steady 2026 run reaches the wrong one)."""
    import httpx2

    from benchmarks.replicas import cluster

    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with stand_ins(2) as backends, cluster(2, tmp_path, backends=backends) as running:
        with httpx2.Client(timeout=30) as http_client:
            served = [
                http_client.post(
                    running.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={**accept, "mcp-param-state-id": f"st_{name}_0f0f"},
                ).headers.get("x-mcp-replica")
                for name in ("r2", "r1", "r2")
            ]  # fmt: skip
        pids = running.pids()
    assert served == ["r2", "r1", "r2"]
    assert not [pid for pid in pids if alive(pid)]
