"""
Process-table questions the signal API cannot answer, read from /proc (Linux).

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
"""

from __future__ import annotations

import os

_PROC = "/proc"


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


def carriers(name: str, value: str) -> list[int] | None:
    """Pids of the live processes whose environment holds `name=value` (this process aside); None without /proc."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    entry = f"{name}={value}".encode()
    me = os.getpid()
    pids = (int(name) for name in names if name.isdigit())
    return [pid for pid in pids if pid != me and _holds(pid, entry)]


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
