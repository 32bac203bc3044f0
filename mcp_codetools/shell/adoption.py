"""Where no process table can be read, the server adopts its commands' orphans, so none outlives it (Linux).

With /proc (or psutil on macOS) a process that left its command's group and session (`setsid`) is found
by the marker in its environment (reaping.py). Linux with /proc absent or empty has no way to list
processes or read their environments (procs.py, "none"), so such a process is out of reach, and once
its parent exits it belongs to init. Being a child subreaper (`PR_SET_CHILD_SUBREAPER`, Linux 3.4+)
changes that: an orphan of any command the server started is re-parented to the server instead, and
"is it my child" needs no table: `waitid` on a pid that is not a child answers ECHILD.

So, in that case only (`adopt` is a no-op wherever a table works, and off Linux):
- `sweep`, at the server's exit, stops every child the server still has and each child's group, round
  after round (a stopped child's own orphans are adopted in turn), and reaps them. Children are found by
  probing the pids allocated since `adopt` (each allocated pid is also a thread id, so a new thread's id
  tells where allocation is now), at about 1.2 us a pid: a few ms for a short session, some 5 s if
  the server ran while the whole pid space (4,194,304 pids) came round.
- An adopted orphan that dies becomes the server's zombie until reaped: `reap_group` and `reap` reap
  those of a command's group and of the processes stopped for it, never the group's leader (bash),
  which is its Popen's to reap. One that ends by itself, in a session of its own, stays a zombie until
  `sweep`.
A process cannot be attributed to one call or session without a table, so a process that escaped with
`setsid` lives until the server exits, not until its call ends (reaping.py says what is found sooner).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time

from mcp_codetools.shell import procs

logger = logging.getLogger(__name__)

_PR_SET_CHILD_SUBREAPER = 36
_PID_MAX_LIMIT = 4_194_304
"""The most pids a 64-bit Linux allows (pid_max itself is in /proc, which is absent here)."""
SWEEP_ROUNDS = 4
SWEEP_BOUND_S = 10.0
REAP_WAIT_S = 2.0

_first_pid: int | None = None
"""The newest pid when the server began adopting; None while it is not adopting."""


def newest_pid() -> int:
    """A pid just allocated: a new thread's id (Linux gives threads ids from the pids' own counter)."""
    found: list[int] = []
    thread = threading.Thread(target=lambda: found.append(threading.get_native_id()), name="pid-probe")
    thread.start()
    thread.join()
    return found[0]


def adopt() -> bool:
    """Become the child subreaper where no process table can be read; True when the server now adopts."""
    global _first_pid
    if _first_pid is not None:
        return True
    if not sys.platform.startswith("linux") or procs.table() != "none":
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        if prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (OSError, AttributeError) as exc:
        logger.warning("cannot adopt orphaned processes (%s): a command's setsid process may outlive the server", exc)
        return False
    _first_pid = newest_pid()
    return True


def adopting() -> bool:
    """Whether orphans of the server's commands are re-parented to it (see `adopt`)."""
    return _first_pid is not None


def _child_state(pid: int) -> str | None:
    """The state of a child of this process: "live" or "zombie"; None for any other pid."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (ChildProcessError, OSError):
        return None
    return "live" if info is None else "zombie"


def _reap_one(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def reap_group(pgid: int) -> None:
    """Reap the exited children in group `pgid`, its leader excepted, so that the group can end."""
    if not adopting():
        return
    while True:
        try:
            info = os.waitid(os.P_PGID, pgid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == pgid:  # none exited; or the leader, which its Popen reaps
            return
        _reap_one(info.si_pid)


def reap(pids: list[int]) -> None:
    """Reap those of `pids` that are exited children of this process (stopped carriers of a command)."""
    if not adopting():
        return
    for pid in pids:
        if _child_state(pid) == "zombie":
            _reap_one(pid)


def _window() -> range | tuple[range, range]:
    assert _first_pid is not None
    now = newest_pid()
    if now >= _first_pid:
        return range(_first_pid, now + 1)
    return range(_first_pid, _PID_MAX_LIMIT + 1), range(2, now + 1)  # allocation wrapped since then


def _children(deadline: float) -> list[int]:
    window = _window()
    spans = window if isinstance(window, tuple) else (window,)
    me = os.getpid()
    found = []
    for span in spans:
        for pid in span:
            if pid != me and _child_state(pid) is not None:
                found.append(pid)
            if not pid % 65536 and time.monotonic() > deadline:
                return found
    return found


def sweep() -> int:
    """At the server's exit: SIGKILL every child still there, and its group, then reap. Returns how many.

    Only while adopting; never raises (the exit must go on).
    """
    if not adopting():
        return 0
    stopped = 0
    deadline = time.monotonic() + SWEEP_BOUND_S
    try:
        own_group = os.getpgrp()
        for _ in range(SWEEP_ROUNDS):
            children = _children(deadline)
            if not children:
                break
            for pid in children:
                try:
                    group = os.getpgid(pid)
                    if group != own_group:
                        os.killpg(group, signal.SIGKILL)
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            stopped += len(children)
            _reap_all(children)
            if time.monotonic() > deadline:
                break
    except Exception:
        logger.exception("stopping the adopted processes at exit failed")
    if stopped:
        logger.info("stopped %d process(es) the server's commands left behind", stopped)
    return stopped


def _reap_all(pids: list[int]) -> None:
    """Wait (bounded) for killed children to exit, and reap them."""
    waiting = set(pids)
    end = time.monotonic() + REAP_WAIT_S
    delay = 0.001
    while waiting and time.monotonic() < end:
        for pid in list(waiting):
            state = _child_state(pid)
            if state == "zombie":
                _reap_one(pid)
            if state != "live":
                waiting.discard(pid)
        if waiting:
            time.sleep(delay)  # SIGKILL lands at once; only a process stuck in the kernel takes longer
            delay = min(delay * 2, 0.05)
