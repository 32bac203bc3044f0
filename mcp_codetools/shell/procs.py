"""Process-table questions the signal API cannot answer, read from /proc (Linux).

`os.killpg(pgid, 0)` tells whether a group has members, but zombies count, and orphans are reaped by
init on its own schedule (here about every 2 s), so waiting for it to fail would wait for init. These
helpers look at the state of each member instead. They cost a scan of /proc (a few ms), so they are used
only on the rare paths: leftovers after a command, timeouts, cancellation. Where /proc is missing they
return None and callers fall back to signals alone.

`carriers` finds processes by a marker in their environment, whatever their group, session or parent:
the one question a group signal and a walk of descendants cannot answer for a process that both left
the group (`setsid`) and was orphaned (a double fork). It reads `/proc/<pid>/environ`, the environment
a process was started with: readable for processes this user may trace, empty for a zombie (so zombies
never count), and inherited through fork and exec unless a program clears it (`env -i`).

Reading every process's environment costs about 10 us a process, too much after every command on a busy
machine. A call's carriers were all forked after its bash, and Linux hands out pids in cyclic order, so
`Since` narrows the scan to the pids allocated since then; when more processes were forked meanwhile than
there are pids (the window may have wrapped onto itself), the whole table is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_PROC = "/proc"
_RESERVED_PIDS = 300
"""Pids below this are skipped when allocation wraps; a margin for the wrap check."""
_PROBE_LIMIT = 64


def _entries() -> list[tuple[int, str, int, int]] | None:
    """(pid, state, ppid, pgrp) of every process, or None without /proc."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    table: list[tuple[int, str, int, int]] = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split at the last ")".
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) >= 3:
            table.append((int(name), fields[0].decode(), int(fields[1]), int(fields[2])))
    return table


def group_members(pgid: int) -> list[int] | None:
    """Pids of the live (not zombie) processes in group `pgid`; None when /proc cannot tell."""
    table = _entries()
    if table is None:
        return None
    return [pid for pid, state, _, pgrp in table if pgrp == pgid and state not in "ZX"]


def descendants(pid: int) -> list[int]:
    """Live descendants of `pid`, whatever group or session they moved to (`setsid`, double fork aside)."""
    table = _entries()
    if table is None:
        return []
    children: dict[int, list[int]] = {}
    live: set[int] = set()
    for child, state, parent, _ in table:
        children.setdefault(parent, []).append(child)
        if state not in "ZX":
            live.add(child)
    found: list[int] = []
    stack = list(children.get(pid, []))
    while stack:
        current = stack.pop()
        if current in live:
            found.append(current)
        stack.extend(children.get(current, []))
    return found


@dataclass(frozen=True, slots=True)
class Since:
    """A point in pid allocation: the first process of a call, and the kernel's fork count before it."""

    first_pid: int
    forks: int
    """`fork_count()` read just before the first process was started."""


def carriers(name: str, value: str, since: Since | None = None) -> list[int] | None:
    """Pids of the live processes whose environment holds `name=value` (this process aside); None without /proc.

    With `since`, only processes forked since then are looked at (see the module docstring).
    """
    if not os.path.isdir(_PROC):
        return None
    entry = f"{name}={value}".encode()
    me = os.getpid()
    return [pid for pid in _candidates(since) if pid != me and _holds(pid, entry)]


def _candidates(since: Since | None) -> list[int]:
    """The pids to look at: those allocated since `since` when that can be told, else every one listed."""
    window = _window(since)
    if window is not None:
        first, last = window
        if 0 <= last - first <= _PROBE_LIMIT:  # a few pids: trying each is cheaper than listing /proc
            return list(range(first, last + 1))
    try:
        pids = [int(name) for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return []
    if window is None:
        return pids
    first, last = window
    if first <= last:
        return [pid for pid in pids if first <= pid <= last]
    return [pid for pid in pids if pid >= first or pid <= last]  # allocation wrapped past pid_max since `first`


def fork_count() -> int | None:
    """Processes forked since boot (the `processes` line of /proc/stat)."""
    try:
        with open(f"{_PROC}/stat", "rb") as handle:
            for line in handle:
                if line.startswith(b"processes "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _window(since: Since | None) -> tuple[int, int] | None:
    """(first, last) pid allocated since `since`, cyclically; None when every pid must be looked at."""
    if since is None:
        return None
    last, pid_max, forks = _read_int("sys/kernel/ns_last_pid"), _read_int("sys/kernel/pid_max"), fork_count()
    if last is None or pid_max is None or forks is None:
        return None
    if forks - since.forks >= pid_max - _RESERVED_PIDS:  # enough forks to come round to `first_pid` again
        return None
    return since.first_pid, last


def _read_int(name: str) -> int | None:
    try:
        with open(f"{_PROC}/{name}", "rb") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return None


def carries(pid: int, name: str, value: str) -> bool:
    """Whether process `pid` (still) carries `name=value` in its environment."""
    return _holds(pid, f"{name}={value}".encode())


def _holds(pid: int, entry: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:  # gone, or not ours to read
        return False
    # A fast substring test first; then whole entries only, so `X=ab` never matches `X=abc` or `YX=ab`.
    return entry in raw and entry in raw.split(b"\0")
