"""One `bash -c` in its own process group, that can neither hang the call nor outlive it.

How a command runs: spawning.py starts it (its own session and group, the environment and its markers,
the cwd report), then the call waits for bash itself to exit (a pidfd on Linux: no thread, no polling),
not for end of file: a grandchild such as `sleep 300 &` keeps the pipe open but cannot keep the call
waiting. After bash exits, the pipe is drained until end of file for at most `DRAIN_S`, then anything
still alive in its group or carrying the call's marker is stopped (reaping.py, which also says what no
stop can find). Where the pipe and the pidfd can be watched as one (output_or_exit.py), one task waits for
both and reads as it wakes; elsewhere a pump task reads while the call waits for the exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcp_codetools.shell import procs
from mcp_codetools.shell.capture import OutputCapture
from mcp_codetools.shell.exit_watcher import ExitWatcher
from mcp_codetools.shell.output_or_exit import OutputOrExit
from mcp_codetools.shell.reaping import Leftovers, namespace_teardown, stop
from mcp_codetools.shell.sandbox import Confinement
from mcp_codetools.shell.spawning import CALL_VAR, Marker, spawn, with_marker
from mcp_codetools.shell.warm import READY, WarmShell

DRAIN_S = 0.2
PROGRESS_INTERVAL_S = 2.0
READ_CHUNK = 1 << 16
READS_PER_WAKE = 16
"""At most this many reads (1 MiB) before yielding, so a flood cannot starve other calls."""

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
    warm: tuple[WarmShell, bool] | None = None,
    forks: bool = True,
) -> RunResult:
    """Run `command` to its end or its timeout, capturing output; never leaves a process running.

    With `detach`, a command still running after `return_after_s` (when that is before its timeout) is
    handed to `detach` instead (synchronously, so nothing can come between), and the result says so.
    `warm`: a bash already started for this call (`warm.WarmSlot.take`), and whether it is to export the
    read-only git variables; it gets the command instead of a new bash being started.
    `forks=False` (`forkless.starts_no_process`, unconfined only): nothing can have left the group, so after
    the exit only the group is checked, not the process table for the marker.
    """
    if warm is not None:
        try:
            warm[0].send(command, warm[1], window=forks)
        except Exception:  # it ran nothing (gone, or the command cannot be encoded): start one as before
            warm[0].discard()
            warm = None
    together: OutputOrExit | None = None
    watcher: ExitWatcher | None = None
    if warm is not None:
        proc, marker, out_r, cwd_r = warm[0].proc, warm[0].marker, warm[0].out_r, warm[0].cwd_r
        watcher, together = warm[0].watcher, warm[0].together  # opened at its start: this call owns them now
        if together is not None:
            together.restart()
    else:
        proc, marker, out_r, cwd_r = _spawn(command, cwd, env, confinement)
    handed = False
    try:
        started = time.monotonic()
        if watcher is None:
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
                forks=forks,
                together=together,
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


def _spawn(
    command: str, cwd: Path, env: Mapping[str, str], confinement: Confinement | None
) -> tuple[subprocess.Popen[bytes], Marker, int, int]:
    """A new bash for `command`: the process, its call marker, and the read ends of its output and cwd pipes."""
    marker = Marker.new(CALL_VAR)
    out_r, out_w = os.pipe()
    cwd_r, cwd_w = os.pipe()
    try:
        try:
            forks = procs.fork_count()
            proc = spawn(
                command, cwd=cwd, env=with_marker(env, marker), output_fd=out_w, cwd_fd=cwd_w, confinement=confinement
            )
        finally:
            os.close(out_w)
            os.close(cwd_w)
    except BaseException:
        os.close(out_r)
        os.close(cwd_r)
        raise
    os.set_blocking(out_r, False)
    os.set_blocking(cwd_r, False)
    return proc, marker.started(proc.pid, forks), out_r, cwd_r


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
    forks: bool = True,
    together: OutputOrExit | None = None,
) -> tuple[bool, bool]:
    """Wait for exit or timeout while pumping output; returns (timed_out, leftovers_stopped).

    At `return_at` (before the timeout) with the command still running, the pump stops between two reads
    and nothing is stopped: the caller hands the command over (both False; `proc.returncode` still None).
    `together`: the set opened ahead (a waiting bash's), else it is opened here; closed here either way.
    """
    if together is None:
        together = OutputOrExit.open(out_r, watcher.pidfd)
    if together is not None:
        try:
            return await _supervise_together(
                together,
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
                confinement,
                forks,
            )
        finally:
            together.close()
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
            remaining = await Leftovers.find(proc.pid, marker if forks else None)
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
        if not eof.is_set():
            # Only then: the pump has returned at end of file, and anyio's cancel formats the task's repr
            # for its reason (~0.1 ms, a tenth of an `echo hi` call's own work).
            tg.cancel_scope.cancel()
    return not exited, leftovers


async def _supervise_together(
    together: OutputOrExit,
    proc: subprocess.Popen[bytes],
    watcher: ExitWatcher,
    marker: Marker,
    out_r: int,
    capture: OutputCapture,
    timeout_s: float,
    progress: Progress | None,
    started: float,
    namespace: bool,
    return_at: float | None,
    confinement: Confinement | None,
    forks: bool = True,
) -> tuple[bool, bool]:
    """`_supervise` with one wait for output and exit: the same steps, without a pump task."""
    deadline = started + timeout_s
    until = min(deadline, return_at or deadline)
    next_tick = started + PROGRESS_INTERVAL_S
    eof = exited = False
    while not exited:
        now = time.monotonic()
        if now >= until:
            break
        readable, exited = await together.wait(min(until, next_tick) - now)
        if readable and not eof:
            eof = read_ready(out_r, capture)
            if eof:
                together.output_ended()
        if progress is not None and not exited and time.monotonic() >= next_tick:
            next_tick += PROGRESS_INTERVAL_S
            await progress(time.monotonic() - started, capture.last_line())
    if not exited:
        if return_at is not None and return_at < deadline:
            return False, False  # handed over between two reads: nothing read twice or lost
        await stop(proc, watcher, marker, confinement)
        if not eof:
            await _drain(out_r, capture)
        return True, False
    proc.poll()
    if namespace:
        await namespace_teardown(proc.pid, marker)
    leftovers = False
    remaining = await Leftovers.find(proc.pid, marker if forks else None)
    if remaining:
        # As in `_supervise`: what they are about to print gets the drain bound, then they are stopped.
        if not eof:
            eof = await _drain(out_r, capture)
        await remaining.stop()
        leftovers = True
    if not eof:
        await _drain(out_r, capture)
    return False, leftovers


def read_ready(fd: int, capture: OutputCapture) -> bool:
    """Read what the pipe holds, at most `READS_PER_WAKE` chunks; True at end of file."""
    for _ in range(READS_PER_WAKE):
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return False
        if not data:
            return True
        capture.feed(data)
    return False


async def _drain(fd: int, capture: OutputCapture) -> bool:
    """Read until end of file for at most `DRAIN_S`; True if it came."""
    with anyio.move_on_after(DRAIN_S):
        while not read_ready(fd, capture):
            await anyio.wait_readable(fd)
        return True
    return False


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
    lines = [line for line in os.fsdecode(raw).splitlines() if line != READY]  # a waiting bash's first line
    return lines[-1] if lines else None
