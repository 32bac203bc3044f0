"""The whole test suite's wall time, CPU and the machine's idle share: `python -m benchmarks.suite_time [WORKERS]`.

The suite is CPU-bound on a small machine, so a wall time alone does not say whether more workers would help:
the idle share of every core meanwhile (from /proc/stat, Linux) does. CPU is pytest's and every process it
reaped. WORKERS is pytest-xdist's `-n` (default `auto`, as the README's test command).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _cpu_times() -> tuple[int, int] | None:
    """All cores' time and their idle time (with I/O wait), in ticks; None without /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            ticks = [int(x) for x in stat.readline().split()[1:]]
    except OSError:
        return None
    return sum(ticks), ticks[3] + ticks[4]


def main(argv: list[str]) -> int:
    workers = argv[0] if argv else "auto"
    before, load = _cpu_times(), os.getloadavg()[0]
    started = time.monotonic()
    argv_ = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers, *argv[1:]]
    done = subprocess.run(argv_, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - started
    after = _cpu_times()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    idle = "n/a"
    if before is not None and after is not None and after[0] > before[0]:
        idle = f"{100 * (after[1] - before[1]) / (after[0] - before[0]):.0f}%"
    summary = next((line for line in reversed(done.stdout.splitlines()) if " in " in line), done.stdout[-300:])
    print(
        f"-n {workers}: wall {wall:.0f} s, CPU {used.ru_utime + used.ru_stime:.0f} s, machine idle {idle}, "
        f"load {load:.1f} -> {os.getloadavg()[0]:.1f}; {summary}"
    )
    print("\n".join(line for line in done.stdout.splitlines() if line.startswith("FAILED")))
    if done.returncode:  # what failed and why (a random draw may not come again), on stderr
        failures = done.stdout.partition("= FAILURES =")[2].partition("short test summary info")[0]
        print(failures or done.stdout[-5000:], file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
