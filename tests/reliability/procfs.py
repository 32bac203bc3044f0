"""What /proc says about a process: memory, open descriptors and the processes below it (Linux, no psutil)."""

from __future__ import annotations

import os
from dataclasses import dataclass

PROC = "/proc"


@dataclass(frozen=True, slots=True)
class Memory:
    """Resident set size now and at its peak, in KiB."""

    rss_kib: int
    hwm_kib: int


def memory(pid: int) -> Memory:
    """VmRSS and VmHWM of `pid` from /proc/<pid>/status."""
    values: dict[str, int] = {}
    with open(f"{PROC}/{pid}/status", encoding="ascii", errors="replace") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
    return Memory(values["VmRSS"], values["VmHWM"])


def fd_count(pid: int) -> int:
    return len(os.listdir(f"{PROC}/{pid}/fd"))


def fd_targets(pid: int) -> list[str]:
    """Where each open descriptor points, for a readable message when counts differ."""
    targets = []
    for name in sorted(os.listdir(f"{PROC}/{pid}/fd"), key=int):
        try:
            targets.append(f"{name} -> {os.readlink(f'{PROC}/{pid}/fd/{name}')}")
        except OSError:
            continue
    return targets


@dataclass(frozen=True, slots=True)
class ProcInfo:
    pid: int
    state: str
    ppid: int
    pgrp: int
    command: str


def process_table() -> dict[int, ProcInfo]:
    table: dict[int, ProcInfo] = {}
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/stat", "rb") as handle:
                raw = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        comm = raw[raw.find(b"(") + 1 : raw.rfind(b")")].decode(errors="replace")
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) >= 3:
            table[int(name)] = ProcInfo(int(name), fields[0].decode(), int(fields[1]), int(fields[2]), comm)
    return table


def descendants(pid: int) -> list[ProcInfo]:
    """Every process below `pid` (children, grandchildren...), zombies included."""
    table = process_table()
    children: dict[int, list[ProcInfo]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info)
    found: list[ProcInfo] = []
    stack = list(children.get(pid, []))
    while stack:
        info = stack.pop()
        found.append(info)
        stack.extend(children.get(info.pid, []))
    return found


def live_descendants(pid: int) -> list[ProcInfo]:
    return [info for info in descendants(pid) if info.state not in "ZX"]


def group_members(pgid: int) -> list[ProcInfo]:
    """Live processes (not zombies) whose process group is `pgid`, wherever their parent is."""
    return [info for info in process_table().values() if info.pgrp == pgid and info.state not in "ZX"]


def alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")
