"""A builtin that changes nothing, run by the waiting bash itself, which then waits for the next command.

Starting bash is most of an `echo hi` (issue 38). The waiting bash (`warm.py`) hides the start from the call that
takes it, but each call used it up: the next one was started during the call, ~1.3 ms of bash's CPU and ~0.4 ms
of the server's on a machine whose two cores the call, its client and that start all share. Given bashes from a
pool that cost nothing to start, `echo hi` took 0.75-0.8x as long back to back. Run in a subshell of the waiting
bash instead, it paid bash's fork and the subshell's exit: ~0.75 ms from command to status, against ~0.06 ms
when the waiting bash runs it itself.

A command that `forkless.starts_no_process` (one printing builtin, plain words) and `changes_nothing` cannot
tell the waiting bash from a bash started for it: that bash has run nothing but the wrapper's reads, in the
same folder with the same environment, and the command leaves no variable, option or folder changed behind it
(`$_` and `$?` are the wrapper's again before the next command, as before the first). So the waiting bash
evaluates it and writes its exit status on the cwd pipe; by then every byte it printed is in the output pipe.
The call answers at that line: no exit to wait for, no group to check (nothing was forked), and the same bash
waits for the next command. A bash that printed something at its start (a locale it cannot set) is not used
so: a bash started for each command would print that each time.

Only where the output, the status and bash's exit can be watched as one (`output_or_exit`: Linux); elsewhere
the command is run as any other (`running.run`), and the waiting bash is used once.
"""

from __future__ import annotations

import os
import signal
import time

from mcp_codetools.shell.capture import OutputCapture
from mcp_codetools.shell.output_or_exit import OutputOrExit
from mcp_codetools.shell.running import READ_CHUNK, RunResult, read_ready
from mcp_codetools.shell.warm import WarmShell

STATUS_MAX = 64
"""A status line is at most `255\\n`; more means the pipe holds what the wrapper did not write."""


def changes_nothing(command: str) -> bool:
    """Whether a forkless `command` leaves bash as it found it: all but `printf -v NAME`, which sets a variable."""
    return not command.startswith("printf -")


def can_run(shell: WarmShell) -> bool:
    """Whether `shell` can run a command in place here (its output, status and exit watched as one)."""
    return shell.together is not None and shell.command_w is not None


async def run(
    shell: WarmShell, command: str, *, capture: OutputCapture, timeout_s: float
) -> tuple[RunResult, bool] | None:
    """Run `command` (forkless, `changes_nothing`) in `shell`; the result, and whether `shell` waits for another.

    None when it was not sent (the bash is gone, or this platform cannot watch it so): it ran nothing, and `shell`
    was stopped. When it is not kept (it timed out or died, or the call was cancelled) it was stopped here.
    """
    together = shell.together
    if together is None or not can_run(shell):
        shell.discard()
        return None
    try:
        together.watch_also(shell.cwd_r)
    except OSError:  # (no memory for it)
        shell.discard()
        return None
    started = time.monotonic()
    try:
        # A builtin runs no program, so a read-only command's git variables are not exported for it (they
        # would stay in the bash for the next command).
        shell.send(command, False, window=False, in_place=True)
    except Exception:  # it ran nothing (gone, or the command cannot be encoded)
        together.unwatch(shell.cwd_r)
        shell.discard()
        return None
    together.restart()
    try:
        try:
            status = await _status(shell, together, capture, started + timeout_s)
        finally:
            together.unwatch(shell.cwd_r)
        if status is not None:
            return RunResult(status, False, False, None, time.monotonic() - started), True
        _drain_now(shell.out_r, capture)  # what it printed before it was stopped
    except BaseException:  # cancelled: the bash is stopped with its group
        shell.discard()
        raise
    finally:
        capture.close()
    timed_out = shell.proc.poll() is None and time.monotonic() >= started + timeout_s
    shell.discard()  # kills the group and reaps bash
    code = -signal.SIGKILL if timed_out or shell.proc.returncode is None else shell.proc.returncode
    return RunResult(code, timed_out, False, None, time.monotonic() - started), False


async def _status(shell: WarmShell, together: OutputOrExit, capture: OutputCapture, deadline: float) -> int | None:
    """The command's exit status once its line comes, its output read; None at the deadline or at bash's exit."""
    pending = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        readable, exited = await together.wait(left)
        if readable and read_ready(shell.out_r, capture):
            together.output_ended()  # bash's own output ended: it is exiting, and its pidfd will say so
        try:
            pending += os.read(shell.cwd_r, STATUS_MAX)
        except BlockingIOError:
            pass
        if pending.endswith(b"\n"):
            if len(pending) > STATUS_MAX or not pending[:-1].isdigit():
                return None  # not the wrapper's line: the bash is stopped, never trusted again
            _drain_now(shell.out_r, capture)
            return int(pending)
        if exited:
            return None


def _drain_now(fd: int, capture: OutputCapture) -> None:
    """Read what the pipe holds now (the command has ended: nothing more is coming from it)."""
    while True:
        try:
            data = os.read(fd, READ_CHUNK)
        except OSError:  # BlockingIOError: all of it read
            return
        if not data:
            return
        capture.feed(data)
