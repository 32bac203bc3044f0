"""
One `bash -c` in its own process group, that can neither hang the call nor outlive it.

How a command runs:
- `bash -c` in a new session (so it has its own process group and no controlling terminal), stdin from
  /dev/null, stdout and stderr on one pipe so their order is kept. The command runs through `eval` in
  a fixed wrapper, so its syntax errors are its own and the wrapper always reports the final working
  directory (`pwd -P`) on a private pipe; a command that calls `exit` simply leaves the cwd unchanged.
- The environment is the server's own, plus markers that keep tools from waiting for a terminal
  (`TERM=dumb`, `PAGER=cat`, `GIT_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`, `GIT_EDITOR=true`) and
  `MCP_CODETOOLS=1`. Read-only commands also get `GIT_OPTIONAL_LOCKS=0`, since they may run in parallel.
- The call waits for bash itself to exit (a pidfd on Linux: no thread, no polling), not for end of file:
  a grandchild such as `sleep 300 &` keeps the pipe open but cannot keep the call waiting. After bash
  exits, the pipe is drained until end of file for at most `DRAIN_S`, then anything still alive in
  its group is stopped.

Every exit path stops the group the same way: SIGTERM to the group (and to descendants that left it
with `setsid`, found in /proc while bash is alive), SIGKILL after `TERM_GRACE_S`, then reap. On
cancellation this runs in a shielded scope, so a cancelled call still leaves no process behind.
Known limits: a process that both leaves the group and is orphaned before bash exits (a double-forked
daemon) is not tracked, and if the server itself is SIGKILLed nothing can stop its children.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcp_codetools.shell import procs
from mcp_codetools.shell.capture import OutputCapture

BASH = shutil.which("bash") or "/bin/bash"
TERM_GRACE_S = 1.0
KILL_WAIT_S = 2.0
DRAIN_S = 0.2
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
    """bash's working directory when it finished (None when it exited early or was killed)."""
    elapsed_s: float


def command_env(*, read_only: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ENV_OVERRIDES)
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def spawn(
    command: str, *, cwd: Path, env: Mapping[str, str], output_fd: int, cwd_fd: int | None = None
) -> subprocess.Popen[bytes]:
    """Start `command`; its group id is its pid. With `cwd_fd`, bash reports its final cwd there.

    Raises:
        OSError: the cwd is gone, the command is too long for an argument, bash is missing.
    """
    argv = [BASH, "-c", command] if cwd_fd is None else [BASH, "-c", _WRAPPER.format(fd=cwd_fd), "bash", command]
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


async def run(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    capture: OutputCapture,
    progress: Progress | None = None,
) -> RunResult:
    """Run `command` to its end or its timeout, capturing output; never leaves a process running."""
    out_r, out_w = os.pipe()
    cwd_r, cwd_w = os.pipe()
    try:
        try:
            proc = spawn(command, cwd=cwd, env=env, output_fd=out_w, cwd_fd=cwd_w)
        finally:
            os.close(out_w)
            os.close(cwd_w)
        os.set_blocking(out_r, False)
        os.set_blocking(cwd_r, False)
        started = time.monotonic()
        watcher = ExitWatcher(proc)
        try:
            timed_out, leftovers = await _supervise(proc, watcher, out_r, capture, timeout_s, progress, started)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stop(proc, watcher)
            raise
        finally:
            watcher.close()
            capture.close()
        return RunResult(
            returncode=proc.returncode if proc.returncode is not None else -signal.SIGKILL,
            timed_out=timed_out,
            leftovers_stopped=leftovers,
            final_cwd=None if timed_out else _read_cwd(cwd_r),
            elapsed_s=time.monotonic() - started,
        )
    finally:
        os.close(out_r)
        os.close(cwd_r)


async def _supervise(
    proc: subprocess.Popen[bytes],
    watcher: ExitWatcher,
    out_r: int,
    capture: OutputCapture,
    timeout_s: float,
    progress: Progress | None,
    started: float,
) -> tuple[bool, bool]:
    """Wait for exit or timeout while pumping output; returns (timed_out, leftovers_stopped)."""
    eof = anyio.Event()
    leftovers = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, out_r, capture, eof)
        exited = await _wait_with_progress(watcher, capture, started + timeout_s, progress, started)
        if exited:
            proc.poll()
            if _group_exists(proc.pid):
                # Leftovers keep the pipe open, so end of file will not come: give what they are about to
                # print (`echo A && sleep 300 &` prints A a moment after bash exits) the drain bound, then
                # stop them. Without leftovers the pipe ends at once and there is no wait at all.
                with anyio.move_on_after(DRAIN_S):
                    await eof.wait()
                leftovers = await stop_leftovers(proc.pid)
        else:
            await stop(proc, watcher)
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
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


async def stop(proc: subprocess.Popen[bytes], watcher: ExitWatcher) -> None:
    """Stop a command and everything it started: TERM, a grace period, KILL, reap. Idempotent."""
    strays: list[int] = []
    if proc.returncode is None and not watcher.exited():
        strays = stray_descendants(proc.pid)
        signal_group(proc.pid, signal.SIGTERM)
        signal_pids(strays, signal.SIGTERM)
        if not await watcher.wait(TERM_GRACE_S):
            signal_group(proc.pid, signal.SIGKILL)
            await watcher.wait(KILL_WAIT_S)
    proc.poll()
    await stop_leftovers(proc.pid)
    signal_pids(strays, signal.SIGKILL)


async def stop_leftovers(pgid: int) -> bool:
    """After the group leader is reaped: stop what is still alive in the group. True if anything was."""
    members = procs.group_members(pgid)
    if members is None:
        if not _group_exists(pgid):
            return False
    elif not members:
        return False
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    delay = 0.005
    while time.monotonic() < deadline:
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.1)
        remaining = procs.group_members(pgid)
        if remaining == [] or (remaining is None and not _group_exists(pgid)):
            return True
    signal_group(pgid, signal.SIGKILL)
    return True


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # real-time signals have no name
        return f"signal {number}"


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stray_descendants(pid: int) -> list[int]:
    """Descendants of `pid` that left its process group (`setsid`), so a group signal misses them."""
    return [child for child in procs.descendants(pid) if _pgid(child) != pid]


def signal_pids(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


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
