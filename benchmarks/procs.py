"""Processes of a benchmark run: finding a spawned server's pid, its peak memory, and leaving nothing behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


def children(parent: int | None = None) -> set[int]:
    """Pids whose parent is `parent` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses; the fields after the last ')' are fixed.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent:
            found.add(int(entry.name))
    return found


def status_kib(pid: int, field: str) -> int | None:
    """A `VmXxx:` line of /proc/<pid>/status in KiB (VmHWM is the peak resident set)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid: int | str = "self") -> float | None:
    """CPU time used so far by every thread of a process (scheduler statistics, nanosecond resolution)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as handle:
                total += int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def reap_leftovers(known: set[int]) -> list[str]:
    """Terminate children of this process that were not there at `known` time; return what was ended."""
    ended: list[str] = []
    for pid in children() - known:
        ended.append(f"{pid} {cmdline(pid)}")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and children() - known:
        time.sleep(0.05)
    for pid in children() - known:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return ended


def run_timed(argv: list[str], cwd: str | None = None) -> tuple[float, int, bytes]:
    """Spawn `argv`, read all its output, wait: (seconds, peak RSS of the child in KiB, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=cwd)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, _, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = 0  # reaped above; keep Popen from waiting again
    proc.stdout.close()
    return elapsed, usage.ru_maxrss, out
