"""What the tests know about processes, with /proc where it is mounted and without it where it is not.

The lane that runs the tests with /proc empty (.ci/run) must still check that processes are gone, or its
tests could not fail: without /proc, a pidfd tells a live process from a zombie (it is readable once
the process has exited), and a group's members are found by asking `getpgid` of the pids after its
leader. Children of this process are listed only with /proc; without it only unreaped ones are seen.
"""

from __future__ import annotations

import os
import select
from pathlib import Path

HAS_PROC = os.path.isdir("/proc/self")
WORKS_WITHOUT_PROC = True  # tests/platform_marks.py: using these helpers does not make a test need /proc
GROUP_PROBE = 4096
"""Pids after a group's leader probed for members without /proc (tests start few processes meanwhile)."""


def table() -> list[tuple[int, str, int, int]]:
    """(pid, state, ppid, pgrp) of every process, read from /proc (empty without it)."""
    found: list[tuple[int, str, int, int]] = []
    if not HAS_PROC:
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        found.append((int(entry), fields[0].decode(), int(fields[1]), int(fields[2])))
    return found


def stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgrp) of a process from /proc, or None when it is gone (or /proc is absent)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[2])


def alive(pid: int) -> bool:
    """Running or stopped, not a zombie waiting for its parent or init to reap it."""
    if HAS_PROC:
        info = stat(pid)
        return info is not None and info[0] not in "ZX"
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        return not select.select([fd], [], [], 0)[0]
    finally:
        os.close(fd)


def live_in_group(pgid: int) -> list[int]:
    """Live members of group `pgid`."""
    if HAS_PROC:
        return [pid for pid, state, _, pgrp in table() if pgrp == pgid and state not in "ZX"]
    found = []
    for pid in range(pgid, pgid + GROUP_PROBE):
        try:
            if os.getpgid(pid) == pgid and alive(pid):
                found.append(pid)
        except OSError:
            continue
    return found


def children_of(parent: int) -> list[tuple[int, str]]:
    """Children of `parent`, zombies included; without /proc only this process's unreaped children."""
    if HAS_PROC:
        return [(pid, state) for pid, state, ppid, _ in table() if ppid == parent]
    if parent != os.getpid():
        return []
    try:
        info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return []
    return [] if info is None else [(info.si_pid, "Z")]
