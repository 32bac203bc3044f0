"""Process-table questions the signal API cannot answer: group members, descendants, marker carriers.

`os.killpg(pgid, 0)` tells whether a group has members, but zombies count, and orphans are reaped by
init on its own schedule (here about every 2 s), so waiting for it to fail would wait for init. These
helpers look at the state of each member instead. They are used only on the rare paths: leftovers after
a command, timeouts, cancellation.

`carriers` finds processes by a marker in their environment, whatever their group, session or parent:
the one question a group signal and a walk of descendants cannot answer for a process that both left
the group (`setsid`) and was orphaned (a double fork). A process's environment is the one it was started
with: readable for processes of this user, never a zombie's (so zombies never count), and inherited
through fork and exec unless a program clears it (`env -i`).

Where the table comes from is chosen once, by what works here (`table()`), never by the platform's name:
- "proc": /proc read directly (Linux). Kept beside psutil because it is faster where it matters: a call's
  carriers were all forked after its bash, and Linux hands out pids in cyclic order, so `Since` narrows
  the scan to the pids allocated since then (a few probes instead of the table). Measured here with 86
  processes: a full marker scan 0.84 ms against psutil's 3.2 ms; the narrowed one some 30 us. When more
  processes were forked meanwhile than there are pids (the window may have wrapped), the table is read.
- "psutil": the cross-platform library (macOS reads environments through sysctl). It has no pid window;
  `Since.started` leaves out processes created before the call, so only newer ones have their
  environment read.
- "none": Linux with /proc absent or empty (psutil reads /proc there too). Nothing but signals and the
  session probe below can be known: group members count as alive until the group is gone (zombies too),
  no descendant or carrier can be listed (`carriers` answers None), and a process that left both the
  command's group and its session (`setsid`) cannot be found. `session_members` probes pids from the
  command's first one with `getsid`, which needs no /proc, for members that moved to another group of
  the command's session (job control, double forks that kept the session).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from typing import Literal

_PROC = "/proc"
_RESERVED_PIDS = 300
"""Pids below this are skipped when allocation wraps; a margin for the wrap check."""
_PROBE_LIMIT = 64
SESSION_PROBE = 2048
"""Pids after a command's first one whose session `session_members` asks (the "none" table only)."""
CREATED_MARGIN_S = 1.0
"""How much earlier than the call a process may seem to have started (clock granularity) and still be read."""

Table = Literal["proc", "psutil", "none"]
Entry = tuple[int, str, int, int]
"""(pid, state letter, ppid, pgrp); a zombie's state is "Z"."""


@functools.lru_cache(maxsize=1)
def _detect() -> Table:
    try:
        with open(f"{_PROC}/self/stat", "rb"):
            pass
        return "proc"
    except OSError:
        pass
    try:
        import psutil

        psutil.Process(os.getpid()).environ()
        if psutil.pids():
            return "psutil"
    except Exception:
        pass
    return "none"


_CHOICES: dict[str, Table] = {"proc": "proc", "psutil": "psutil", "none": "none"}
FORCED: Table | None = _CHOICES.get(os.environ.get("MCP_CODETOOLS_PROCESS_TABLE", ""))
"""A table chosen instead of the one that works (MCP_CODETOOLS_PROCESS_TABLE=psutil or none), so tests and
benchmarks can run each where /proc works."""


def table() -> Table:
    """Where process facts come from here: "proc", "psutil" or "none" (see the module docstring)."""
    return FORCED or _detect()


def _entries() -> list[Entry] | None:
    """Every process, or None when no table can be read."""
    kind = table()
    if kind == "proc":
        return _proc_entries()
    if kind == "psutil":
        return _psutil_entries()
    return None


def _proc_entries() -> list[Entry] | None:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    found: list[Entry] = []
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
            found.append((int(name), fields[0].decode(), int(fields[1]), int(fields[2])))
    return found


def _psutil_entries() -> list[Entry] | None:
    import psutil

    found: list[Entry] = []
    try:
        processes = list(psutil.process_iter(["ppid", "status"]))
    except psutil.Error:
        return None
    for process in processes:
        status = process.info.get("status")
        ppid = process.info.get("ppid")
        if ppid is None or status is None:
            continue
        try:
            pgrp = os.getpgid(process.pid)
        except OSError:
            continue
        state = "Z" if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD) else "R"
        found.append((process.pid, state, ppid, pgrp))
    return found


def group_members(pgid: int) -> list[int] | None:
    """Pids of the live (not zombie) processes in group `pgid`; None when no table can tell."""
    entries = _entries()
    if entries is None:
        return None
    return [pid for pid, state, _, pgrp in entries if pgrp == pgid and state not in "ZX"]


def descendants(pid: int) -> list[int]:
    """Live descendants of `pid`, whatever group or session they moved to (`setsid`, double fork aside)."""
    entries = _entries()
    if entries is None:
        return []
    children: dict[int, list[int]] = {}
    live: set[int] = set()
    for child, state, parent, _ in entries:
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


def session_members(sid: int, *, probe: int = SESSION_PROBE) -> list[int]:
    """Pids in session `sid` (the command's: started with `start_new_session`, so its sid is its pid).

    Asks `getsid` of each pid from `sid` on, `probe` of them: no table needed, so this is what the "none"
    table has. Zombies count (nothing tells them apart here), which errs toward a signal sent in vain.
    """
    found = []
    for pid in range(sid, sid + probe):
        try:
            if os.getsid(pid) == sid:
                found.append(pid)
        except OSError:
            continue
    return found


@dataclass(frozen=True, slots=True)
class Since:
    """A point in pid allocation: the first process of a call, and the kernel's fork count before it."""

    first_pid: int
    forks: int | None
    """`fork_count()` read just before the first process was started (None where it cannot be read)."""
    started: float = field(default_factory=time.time)
    """The wall clock then: a process created before it cannot carry the call's marker."""


def carriers(name: str, value: str, since: Since | None = None) -> list[int] | None:
    """Pids of the live processes whose environment holds `name=value` (this process aside); None without a table.

    With `since`, only processes forked since then are looked at (see the module docstring). A process
    caught between two programs is left out; `scan` says which those were.
    """
    found = scan(name, value, since)
    return None if found is None else found[0]


def scan(name: str, value: str, since: Since | None = None) -> tuple[list[int], list[int]] | None:
    """(carriers, unsure): `carriers`' answer, and the pids whose environment could not be told just now.

    An unsure process is one in the middle of `execve` (see `holding`): ask again a moment later.
    """
    kind = table()
    if kind == "none":
        return None
    me = os.getpid()
    if kind == "psutil":
        pids = _psutil_candidates(since)
    elif os.path.isdir(_PROC):
        pids = _candidates(since)
    else:
        return None
    found: list[int] = []
    unsure: list[int] = []
    for pid in pids:
        if pid != me:
            answer = holding(pid, name, value)
            if answer != "no":
                (found if answer == "yes" else unsure).append(pid)
    return found, unsure


def _psutil_candidates(since: Since | None) -> list[int]:
    import psutil

    if since is None:
        return psutil.pids()
    oldest = since.started - CREATED_MARGIN_S
    found = []
    for process in psutil.process_iter(["create_time"]):
        created = process.info.get("create_time")
        if created is None or created >= oldest:  # unknown counts as new: read rather than miss it
            found.append(process.pid)
    return found


def _psutil_holding(pid: int, name: str, value: str) -> Holding:
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return "no"
        environment = process.environ()
    except psutil.Error:  # gone, a zombie, or not ours to read
        return "no"
    if environment.get(name) == value:
        return "yes"
    return "no" if environment else "unsure"  # empty: maybe between two programs, as on Linux


def _candidates(since: Since | None) -> list[int]:
    """The pids to look at: those allocated since `since` when that can be told, else every one listed."""
    window = _window(since)
    if window == _NONE_FORKED:
        return []
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
    """Processes forked since boot (the `processes` line of /proc/stat); None without the "proc" table."""
    if table() != "proc":
        return None
    try:
        data = _read_proc("stat")
        at = data.index(b"\nprocesses ") + len(b"\nprocesses ")
        return int(data[at : data.index(b"\n", at)])
    except (OSError, ValueError):
        return None


def last_pid() -> int | None:
    """The pid the kernel handed out last (Linux's ns_last_pid); None without the "proc" table."""
    return _read_int("sys/kernel/ns_last_pid") if table() == "proc" else None


_NONE_FORKED = (1, 0)
"""`_window`'s answer when nothing at all was forked since `since`: no pid to look at."""


def _window(since: Since | None) -> tuple[int, int] | None:
    """(first, last) pid allocated since `since`, cyclically; None when every pid must be looked at.

    `_NONE_FORKED` when the kernel's fork count has not moved since then: no process (nor thread) was
    created anywhere, so none can carry a marker given after that point. Commands of builtins only (`echo
    hi` in a warm bash) end so; with other forks on the machine the window is scanned as usual (issue 38).
    """
    if since is None or since.forks is None:
        return None
    forks = fork_count()
    if forks is None:
        return None
    if forks == since.forks:
        return _NONE_FORKED
    last, pid_max = _read_int("sys/kernel/ns_last_pid"), _read_int("sys/kernel/pid_max")
    if last is None or pid_max is None:
        return None
    if forks - since.forks >= pid_max - _RESERVED_PIDS:  # enough forks to come round to `first_pid` again
        return None
    return since.first_pid, last


def _read_int(name: str) -> int | None:
    try:
        return int(_read_proc(name))
    except (OSError, ValueError):
        return None


def _read_proc(name: str) -> bytes:
    """All of /proc/`name`, read with plain system calls.

    A Bash call reads four or more of these after its command, and a buffered file object made each read
    cost about three times as much (40-120 µs here).
    """
    fd = os.open(f"{_PROC}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


Holding = Literal["yes", "no", "unsure"]
"""Whether a process carries a marker; "unsure" while it cannot be told (see `holding`)."""

_PF_KTHREAD = 0x00200000
"""The kernel-thread bit of a process's flags (the 7th field after the name in /proc/<pid>/stat)."""


def carries(pid: int, name: str, value: str) -> bool:
    """Whether process `pid` (still) carries `name=value` in its environment."""
    return holding(pid, name, value) == "yes"


def holding(pid: int, name: str, value: str) -> Holding:
    """Whether process `pid` carries `name=value`: "yes", "no", or "unsure" when it is between two programs.

    While a process runs `execve` its environment reads empty (or cut short, or the read fails with
    ESRCH) for a moment: the old program's memory is gone and the new one's is not yet set up. Measured
    here on a process that execs in a loop, 5% of reads missed a marker it always had. Such a process is
    "unsure", never "no": a `setsid -f` escapee caught so would otherwise outlive its call.
    """
    kind = table()
    if kind == "psutil":
        return _psutil_holding(pid, name, value)
    if kind != "proc":
        return "no"
    entry = f"{name}={value}".encode()
    try:
        raw = _read_proc(f"{pid}/environ")
    except ProcessLookupError:
        raw = b""
    except OSError:  # gone, or not ours to read
        return "no"
    # A fast substring test first; then whole entries only, so `X=ab` never matches `X=abc` or `YX=ab`.
    if entry in raw and entry in raw.split(b"\0"):
        return "yes"
    if raw.endswith(b"\0"):  # a whole environment, without the marker
        return "no"
    return "unsure" if _may_be_between_programs(pid) else "no"


def _may_be_between_programs(pid: int) -> bool:
    """Whether an empty environment may be a passing `execve`, not a zombie's or a kernel thread's for good."""
    try:
        raw = _read_proc(f"{pid}/stat")
    except OSError:
        return False
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return fields[0] not in (b"Z", b"X") and not int(fields[6]) & _PF_KTHREAD
    except (IndexError, ValueError):
        return False
