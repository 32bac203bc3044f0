"""One `bash -c` in its own process group, that can neither hang the call nor outlive it.

How a command runs:
- `bash -c` in a new session (so it has its own process group and no controlling terminal), stdin from
  /dev/null, stdout and stderr on one pipe so their order is kept. The command runs through `eval` in
  a fixed wrapper, so its syntax errors are its own and the wrapper always reports the final working
  directory (`pwd -P`) on a private pipe; a command that calls `exit` simply leaves the cwd unchanged.
- The environment is the server's own minus its secrets (every `MCP_CODETOOLS_*TOKEN*` variable and the
  names the `bash_env_exclude` setting lists), plus markers that keep tools from waiting for a terminal
  (`TERM=dumb`, `PAGER=cat`, `GIT_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`, `GIT_EDITOR=true`) and
  `MCP_CODETOOLS=1`. Read-only commands also get `GIT_OPTIONAL_LOCKS=0`, since they may run in parallel.
- Two more entries mark every process a command starts, so they can be found again in the process
  table (procs.py: /proc, or psutil) whatever group, session or parent they move to:
  `MCP_CODETOOLS_SESSION` (one per session) and `MCP_CODETOOLS_CALL` (one per foreground call or
  background job).
- The call waits for bash itself to exit (a pidfd on Linux: no thread, no polling), not for end of file:
  a grandchild such as `sleep 300 &` keeps the pipe open but cannot keep the call waiting. After bash
  exits, the pipe is drained until end of file for at most `DRAIN_S`, then anything still alive in
  its group or carrying the call's marker is stopped.

With the sandbox on (`shell.sandbox`), the process started is bwrap or the Landlock launcher, with bash
inside it: the group, the markers (on the sandbox's environment allow-list) and the cwd pipe (an
inherited fd) all carry through, and /proc shows bwrap's PID-namespace processes under their host pids,
so the scans below find them as they find any other.

Every exit path stops the command the same way: SIGTERM to the group, to descendants that left it (found
in the process table while bash is alive) and to every process carrying the call's marker (`setsid -f`, double-forked
daemons), SIGKILL after `TERM_GRACE_S`, then reap. On cancellation this runs in a shielded scope, so a
cancelled call still leaves no process behind. The session's marker is the last net: when the session
ends, whatever still carries it is stopped.

Not covered: a process that clears its environment (`env -i`, or exec with an empty one) AND leaves the
group AND is orphaned before anything looks (`env -i setsid -f daemon`): no marker, no group, no parent
link remains to find it by. Where no process table can be read (Linux with /proc absent: procs.py,
"none"), only the group and the members of the command's session are found (`getsid` needs no /proc),
and members count as alive until their group is gone, zombies too, so the stop errs toward signalling
in vain. A process that left the session (`setsid`) is not found for its call; the server adopts such
orphans (adoption.py) and stops them when it exits. On macOS psutil reads the table and
the environments, so the markers hold there as on Linux. And if
the server itself is SIGKILLed nothing can stop its children. A cgroup would close the first gap, but an
unprivileged server can rarely create one, so the markers are what is relied on.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import secrets
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcp_codetools.shell import adoption, container, procs
from mcp_codetools.shell.capture import OutputCapture
from mcp_codetools.shell.sandbox import Confinement

BASH = shutil.which("bash") or "/bin/bash"
TERM_GRACE_S = 1.0
KILL_WAIT_S = 2.0
DRAIN_S = 0.2
RESCAN_ROUNDS = 3
"""Times the marker scan is repeated after the KILL, for processes a carrier started while it was dying."""
PROGRESS_INTERVAL_S = 2.0
READ_CHUNK = 1 << 16
READS_PER_WAKE = 16
"""At most this many reads (1 MiB) before yielding, so a flood cannot starve other calls."""

ENV_OVERRIDES = {
    "MCP_CODETOOLS": "1",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
}

SESSION_VAR = "MCP_CODETOOLS_SESSION"
CALL_VAR = "MCP_CODETOOLS_CALL"
_OWN_PREFIX = "MCP_CODETOOLS_"
_SECRET_WORD = "TOKEN"

_WRAPPER = '__mcp_c=$1; shift; eval "$__mcp_c"\n__mcp_rc=$?\nbuiltin pwd -P >&{fd} 2>/dev/null\nexit $__mcp_rc\n'

Progress = Callable[[float, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a foreground command ended."""

    returncode: int
    """As Popen reports it: negative for a signal that ended bash."""
    timed_out: bool
    leftovers_stopped: bool
    """Processes the command left in its group were still running after it exited, and were stopped."""
    final_cwd: str | None
    """bash's working directory when it finished (None when it exited early, was killed or was detached)."""
    elapsed_s: float
    detached: bool = False
    """Still running at the return-after budget, it was handed to `detach` (and goes on as a background job)."""


@dataclass(frozen=True, slots=True)
class Detached:
    """A foreground command still running at its return-after budget, handed over whole to a new owner.

    The owner takes the process, its exit watcher and both pipes: everything the command printed before
    the handover is in the call's capture, everything after is still in (or yet to come through) `out_fd`,
    so no byte is lost or read twice. `cwd_fd` must stay open until bash exits, or its final `pwd` would
    end it with SIGPIPE; its content is not used (a detached command does not move the session's cwd).
    """

    proc: subprocess.Popen[bytes]
    watcher: ExitWatcher
    marker: Marker
    out_fd: int
    cwd_fd: int
    started: float
    """`time.monotonic()` when it started: its timeout counts from there."""
    deadline: float
    """`time.monotonic()` at which it is to be stopped (its timeout)."""
    pid_namespace: bool
    confinement: Confinement | None = None
    """The sandbox it runs in: its new owner stops a container's processes inside the container."""


@dataclass(frozen=True, slots=True)
class Marker:
    """An environment entry that every process of a call (or session) inherits, to find them in the process table."""

    name: str
    value: str
    since: procs.Since | None = None
    """When every carrier was forked after a known process (a call's bash), only newer pids are read."""

    @property
    def entry(self) -> str:
        """`NAME=value`, as the marker appears in a process's environment."""
        return f"{self.name}={self.value}"

    @classmethod
    def new(cls, name: str) -> Marker:
        """A marker named `name` with a fresh random value, so no unrelated process carries it."""
        return cls(name, secrets.token_hex(16))

    def started(self, first_pid: int, forks_before: int | None) -> Marker:
        """This marker, knowing that its first carrier is `first_pid` (`forks_before`: `procs.fork_count()`)."""
        return dataclasses.replace(self, since=procs.Since(first_pid, forks_before))


def command_env(
    *, read_only: bool, session_marker: Marker | None = None, exclude: Collection[str] = ()
) -> dict[str, str]:
    """The environment a command runs with: the server's own without its secrets, plus the markers."""
    env = {name: value for name, value in os.environ.items() if not is_secret(name, exclude)}
    # Markers the server inherited (it runs inside another server's call) are not this session's.
    env.pop(SESSION_VAR, None)
    env.pop(CALL_VAR, None)
    env.update(ENV_OVERRIDES)
    if session_marker is not None:
        env[session_marker.name] = session_marker.value
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def is_secret(name: str, exclude: Collection[str] = ()) -> bool:
    """The server's own secrets (`MCP_CODETOOLS_*TOKEN*`, e.g. the HTTP bearer token) and excluded names."""
    upper = name.upper()
    return name in exclude or (upper.startswith(_OWN_PREFIX) and _SECRET_WORD in upper)


def with_marker(env: Mapping[str, str], marker: Marker) -> dict[str, str]:
    """`env` plus the marker's entry."""
    return {**env, marker.name: marker.value}


def spawn(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    output_fd: int,
    cwd_fd: int | None = None,
    confinement: Confinement | None = None,
) -> subprocess.Popen[bytes]:
    """Start `command`; its group id is its pid. With `cwd_fd`, bash reports its final cwd there.

    With a `confinement`, bash runs inside the sandbox (bwrap or the Landlock launcher is the process
    started, and bash its descendant: the group, the markers and the cwd pipe all carry through).

    Raises:
        OSError: the cwd is gone, the command is too long for an argument, bash is missing.
        RuntimeError: a sandboxed spawn outside the event loop's thread (see `require_loop_thread`).
    """
    if confinement is not None and confinement.container is not None:
        # No descriptor crosses `docker exec`: the container's wrapper opens CALL_FD on a file for the cwd.
        wrapper = _WRAPPER.format(fd=container.CALL_FD)
        argv = [BASH, "-c", command] if cwd_fd is None else [BASH, "-c", wrapper, "bash", command]
        argv, env = confinement.wrap(argv, cwd=cwd, env=env)
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=output_fd, stderr=output_fd, env=env, start_new_session=True
        )
    argv = [BASH, "-c", command] if cwd_fd is None else [BASH, "-c", _WRAPPER.format(fd=cwd_fd), "bash", command]
    if confinement is not None:
        require_loop_thread()
        argv, env = confinement.wrap(argv, cwd=cwd, env=env)
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=output_fd,
        stderr=output_fd,
        pass_fds=() if cwd_fd is None else (cwd_fd,),
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


def require_loop_thread() -> None:
    """Refuse to start a sandboxed command from a thread that may end before it.

    bwrap's `--die-with-parent` is a parent-death signal, and Linux sends it when the *thread* that forked
    the process exits, not the process: a command spawned from a worker thread (which anyio retires when
    idle) would be killed mid-run. The event loop's thread lives as long as the server.
    """
    try:
        anyio.get_current_task()
    except Exception:
        raise RuntimeError(
            "a sandboxed command must be started from the event loop's thread: bwrap's --die-with-parent "
            "would kill it when a shorter-lived thread exits"
        ) from None


async def run(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    capture: OutputCapture,
    progress: Progress | None = None,
    confinement: Confinement | None = None,
    return_after_s: float | None = None,
    detach: Callable[[Detached], None] | None = None,
) -> RunResult:
    """Run `command` to its end or its timeout, capturing output; never leaves a process running.

    With `detach`, a command still running after `return_after_s` (when that is before its timeout) is
    handed to `detach` instead (synchronously, so nothing can come between), and the result says so.
    """
    marker = Marker.new(CALL_VAR)
    out_r, out_w = os.pipe()
    cwd_r, cwd_w = os.pipe()
    handed = False
    try:
        try:
            forks = procs.fork_count()
            proc = spawn(
                command, cwd=cwd, env=with_marker(env, marker), output_fd=out_w, cwd_fd=cwd_w, confinement=confinement
            )
        finally:
            os.close(out_w)
            os.close(cwd_w)
        marker = marker.started(proc.pid, forks)
        os.set_blocking(out_r, False)
        os.set_blocking(cwd_r, False)
        started = time.monotonic()
        watcher = ExitWatcher(proc)
        namespace = confinement is not None and confinement.pid_namespace
        return_at = None
        if detach is not None and return_after_s is not None and return_after_s < timeout_s:
            return_at = started + return_after_s
        try:
            timed_out, leftovers = await _supervise(
                proc,
                watcher,
                marker,
                out_r,
                capture,
                timeout_s,
                progress,
                started,
                namespace,
                return_at,
                confinement=confinement,
            )
            if return_at is not None and not timed_out and proc.returncode is None and detach is not None:
                detach(
                    Detached(proc, watcher, marker, out_r, cwd_r, started, started + timeout_s, namespace, confinement)
                )
                handed = True
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stop(proc, watcher, marker, confinement)
            raise
        finally:
            if not handed:
                watcher.close()
            capture.close()
        final_cwd = None if timed_out or handed else _read_cwd(cwd_r)
        box = confinement.container if confinement is not None else None
        if box is not None and not handed:
            final_cwd = None if timed_out else box.final_cwd(marker.entry)
            leftovers = box.finish(marker.entry) or leftovers
        return RunResult(
            returncode=proc.returncode if proc.returncode is not None else -signal.SIGKILL,
            timed_out=timed_out,
            leftovers_stopped=leftovers,
            final_cwd=final_cwd,
            elapsed_s=time.monotonic() - started,
            detached=handed,
        )
    finally:
        if not handed:
            os.close(out_r)
            os.close(cwd_r)


async def _supervise(
    proc: subprocess.Popen[bytes],
    watcher: ExitWatcher,
    marker: Marker,
    out_r: int,
    capture: OutputCapture,
    timeout_s: float,
    progress: Progress | None,
    started: float,
    namespace: bool = False,
    return_at: float | None = None,
    *,
    confinement: Confinement | None = None,
) -> tuple[bool, bool]:
    """Wait for exit or timeout while pumping output; returns (timed_out, leftovers_stopped).

    At `return_at` (before the timeout) with the command still running, the pump stops between two reads
    and nothing is stopped: the caller hands the command over (both False; `proc.returncode` still None).
    """
    eof = anyio.Event()
    leftovers = False
    deadline = started + timeout_s
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, out_r, capture, eof)
        exited = await _wait_with_progress(watcher, capture, min(deadline, return_at or deadline), progress, started)
        if not exited and return_at is not None and return_at < deadline:
            tg.cancel_scope.cancel()  # the pump's only wait is for readability: no read is ever half done
            return False, False
        if exited:
            proc.poll()
            if namespace:
                await namespace_teardown(proc.pid, marker)
            remaining = await Leftovers.find(proc.pid, marker)
            if remaining:
                # Leftovers keep the pipe open, so end of file will not come: give what they are about to
                # print (`echo A && sleep 300 &` prints A a moment after bash exits) the drain bound, then
                # stop them. Without leftovers the pipe ends at once and there is no wait at all.
                with anyio.move_on_after(DRAIN_S):
                    await eof.wait()
                await remaining.stop()
                leftovers = True
        else:
            await stop(proc, watcher, marker, confinement)
        with anyio.move_on_after(DRAIN_S):
            await eof.wait()
        tg.cancel_scope.cancel()
    return not exited, leftovers


async def _wait_with_progress(
    watcher: ExitWatcher, capture: OutputCapture, deadline: float, progress: Progress | None, started: float
) -> bool:
    next_tick = started + PROGRESS_INTERVAL_S
    while True:
        now = time.monotonic()
        if now >= deadline:
            return False
        if await watcher.wait(min(deadline, next_tick) - now):
            return True
        if progress is not None and time.monotonic() >= next_tick:
            next_tick += PROGRESS_INTERVAL_S
            await progress(time.monotonic() - started, capture.last_line())


async def _pump(fd: int, capture: OutputCapture, eof: anyio.Event) -> None:
    while True:
        await anyio.wait_readable(fd)
        for _ in range(READS_PER_WAKE):
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                break
            if not data:
                eof.set()
                return
            capture.feed(data)


def _read_cwd(fd: int) -> str | None:
    try:
        raw = os.read(fd, 65536)
    except BlockingIOError:
        return None
    lines = os.fsdecode(raw).splitlines()
    return lines[-1] if lines else None


class ExitWatcher:
    """Waits for a child to exit without reaping it, so its pid (and group id) stays reserved meanwhile."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # not Linux, or a kernel before 5.3: poll instead
            self._pidfd = None

    def exited(self) -> bool:
        """Whether the child has exited, looked at without reaping it."""
        if self.proc.returncode is not None:
            return True
        if not hasattr(os, "waitid"):  # macOS before Python 3.13: reaping is the only way to look
            return self.proc.poll() is not None
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    async def wait(self, timeout: float) -> bool:
        """True once the child has exited (within `timeout` seconds)."""
        if self.exited():
            return True
        if timeout <= 0:
            return False
        if self._pidfd is not None:
            with anyio.move_on_after(timeout):
                await anyio.wait_readable(self._pidfd)
                return True
            return False
        deadline = time.monotonic() + timeout
        delay = 0.002
        while time.monotonic() < deadline:
            await anyio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            if self.exited():
                return True
            delay = min(delay * 2, 0.05)
        return self.exited()

    def close(self) -> None:
        """Close the pidfd, if one was opened."""
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


async def stop(
    proc: subprocess.Popen[bytes],
    watcher: ExitWatcher,
    marker: Marker | None = None,
    confinement: Confinement | None = None,
) -> None:
    """Stop a command and everything it started: TERM, a grace period, KILL, reap. Idempotent.

    In a container, the command's group and its marker's carriers are stopped inside it first (killing
    the local `exec` client would leave them running there).
    """
    if confinement is not None and confinement.container is not None and marker is not None:
        await confinement.container.stop_call(marker.entry)
    strays: list[int] = []
    if proc.returncode is None and not watcher.exited():
        strays = stray_descendants(proc.pid)
        signal_group(proc.pid, signal.SIGTERM)
        signal_pids(strays, signal.SIGTERM)
        if not await watcher.wait(TERM_GRACE_S):
            signal_group(proc.pid, signal.SIGKILL)
            await watcher.wait(KILL_WAIT_S)
    proc.poll()
    await stop_remaining(proc.pid, marker)
    signal_pids(strays, signal.SIGKILL)


async def namespace_teardown(pgid: int, marker: Marker) -> None:
    """Wait (bounded) for a sandbox's PID namespace to be gone after its wrapper exited.

    The command is the namespace's first process (`--as-pid-1`), and the kernel finishes that process's
    exit only once everything else in the namespace is dead, so normally nothing is left to see and this
    costs one signal-0 probe. Were bwrap to report before that (as it does with its own init process in
    the namespace), what is seen is the teardown, not leftovers: waiting keeps a finished command from
    being reported as having left processes. Anything still there after the bound is stopped as usual.
    """
    remaining = await Leftovers.find(pgid, marker)
    if remaining:
        await remaining.gone_within(KILL_WAIT_S)
        for carrier in remaining.carriers:
            carrier.close()


async def stop_remaining(pgid: int | None, marker: Marker | None) -> bool:
    """After the group leader is reaped: stop what is alive in the group or carries `marker`. True if any was."""
    remaining = await Leftovers.find(pgid, marker)
    if not remaining:
        return False
    await remaining.stop()
    return True


class _Carrier:
    """A process found by its marker, held by a pidfd so a reused pid can never be signalled by mistake."""

    def __init__(self, pid: int, pidfd: int | None) -> None:
        self.pid = pid
        self.pidfd = pidfd

    @classmethod
    def open(cls, pid: int, marker: Marker) -> _Carrier | None:
        """Hold `pid` if it still carries the marker once held (it may have exited and the pid been reused)."""
        return cls._hold(pid, lambda: procs.carries(pid, marker.name, marker.value))

    @classmethod
    def in_session(cls, pid: int, sid: int) -> _Carrier | None:
        """Hold `pid` if it is still in session `sid` once held."""

        def same_session() -> bool:
            try:
                return os.getsid(pid) == sid
            except OSError:
                return False

        return cls._hold(pid, same_session)

    @classmethod
    def _hold(cls, pid: int, still: Callable[[], bool]) -> _Carrier | None:
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            return None
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # a thread id (probed, not listed): its process is found by its own pid
                return None
            pidfd = None  # a kernel before 5.3: fall back to the pid (kill() on a thread id signals its process)
        except AttributeError:  # not Linux
            pidfd = None
        if not still():
            if pidfd is not None:
                os.close(pidfd)
            return None
        return cls(pid, pidfd)

    def send(self, sig: int) -> None:
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def exited(self) -> bool:
        if self.pidfd is not None:  # readable once the process has exited, reaped or not
            return bool(select.select([self.pidfd], [], [], 0)[0])
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _find_carriers(marker: Marker | None, pgid: int | None, known: Collection[int] = ()) -> list[_Carrier]:
    """Carriers of `marker` not in `known`, held; blocking: reads the process table (see `_carriers_of`).

    Where no table can list them (procs.py, "none"), what can still be found is: the members of the
    command's session (its sid is `pgid`) that moved to another group.
    """
    found = []
    if marker is not None:
        for pid in procs.carriers(marker.name, marker.value, marker.since) or []:
            if pid not in known:
                carrier = _Carrier.open(pid, marker)
                if carrier is not None:
                    found.append(carrier)
    if pgid is not None and procs.table() == "none":
        for pid in procs.session_members(pgid):
            if pid not in known and _pgid(pid) != pgid:
                carrier = _Carrier.in_session(pid, pgid)
                if carrier is not None:
                    found.append(carrier)
    return found


async def _carriers_of(marker: Marker | None, pgid: int | None, known: Collection[int] = ()) -> list[_Carrier]:
    """Carriers of `marker` (and, without a process table, members of session `pgid`) not in `known`, held.

    A call's scan on /proc reads the few pids allocated since its bash, cheap enough for the event loop
    (it runs after every command); any other reads the whole table, so it runs in a worker thread.
    """
    if marker is None and (pgid is None or procs.table() != "none"):
        return []
    if marker is not None and marker.since is not None and marker.since.forks is not None:
        return _find_carriers(marker, pgid, known)
    return await anyio.to_thread.run_sync(_find_carriers, marker, pgid, known)


class Leftovers:
    """What a command left running: live members of its group and every process that carries its marker."""

    def __init__(self, pgid: int | None, marker: Marker | None, group: bool, carriers: list[_Carrier]) -> None:
        self.pgid = pgid
        self.marker = marker
        self.group = group
        self.carriers = carriers

    @classmethod
    async def find(cls, pgid: int | None, marker: Marker | None) -> Leftovers:
        """What of the group and the marker's carriers is still alive now."""
        group = pgid is not None and _group_alive(pgid)
        return cls(pgid, marker, group, await _carriers_of(marker, pgid))

    def __bool__(self) -> bool:
        return self.group or bool(self.carriers)

    async def stop(self) -> None:
        """TERM, the grace period, then KILL for what is left, including carriers started meanwhile."""
        try:
            self._send(signal.SIGTERM)
            gone = await self.gone_within(TERM_GRACE_S)
            for _ in range(RESCAN_ROUNDS):
                late = await self._late_carriers()
                if gone and not late:
                    return
                self.carriers.extend(late)
                self._send(signal.SIGKILL)
                gone = await self.gone_within(KILL_WAIT_S)
        finally:
            adoption.reap([carrier.pid for carrier in self.carriers])
            for carrier in self.carriers:
                carrier.close()

    async def _late_carriers(self) -> list[_Carrier]:
        known = {carrier.pid for carrier in self.carriers if not carrier.exited()}
        return await _carriers_of(self.marker, self.pgid, known)

    def _send(self, sig: int) -> None:
        if self.pgid is not None:
            signal_group(self.pgid, sig)
        for carrier in self.carriers:
            carrier.send(sig)

    def _alive(self) -> bool:
        if self.pgid is not None and _group_alive(self.pgid):
            return True
        return not all(carrier.exited() for carrier in self.carriers)

    async def gone_within(self, seconds: float) -> bool:
        """Poll until nothing is left alive; False when something still is after `seconds`."""
        deadline = time.monotonic() + seconds
        delay = 0.005
        while self._alive():
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.1)
        return True


def signal_name(number: int) -> str:
    """The signal's name (`SIGTERM`), or its number when it has none."""
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals have no name
        return f"signal {number}"


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to a process group; one already gone (or no longer ours) is no error."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stray_descendants(pid: int) -> list[int]:
    """Descendants of `pid` that left its process group (`setsid`), so a group signal misses them."""
    return [child for child in procs.descendants(pid) if _pgid(child) != pid]


def signal_pids(pids: list[int], sig: int) -> None:
    """Send `sig` to each pid; one already gone (or no longer ours) is no error."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _group_alive(pgid: int) -> bool:
    """Whether group `pgid` has a live (not zombie) member; by signal alone where /proc cannot tell."""
    adoption.reap_group(pgid)  # an adopted member that died is the server's zombie, which signal 0 still finds
    if not _group_exists(pgid):  # one system call answers the common case: the group is gone
        return False
    members = procs.group_members(pgid)
    return members is None or bool(members)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
