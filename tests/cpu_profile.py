"""Opt-in: the CPU each test costs, with the processes it started, for finding what makes the suite slow.

The suite is CPU-bound on 2 cores, so wall times (`--durations`) mislead: a test waiting on a loaded machine
looks slow without costing anything. With MCP_CODETOOLS_TEST_CPU=PATH, every test (setup, call and teardown)
appends one JSON line to PATH: its node id, its xdist worker, when it started (epoch seconds), wall seconds,
the CPU seconds of the pytest process itself and of the children it reaped meanwhile
(`getrusage(RUSAGE_CHILDREN)`: servers, subprocesses and their reaped descendants). A module or session
fixture's processes count for the test whose teardown reaps them. Each xdist worker appends to the same file
(one write a line). Rank the files with `python -m tests.cpu_profile PATH [N]`; `PATH --tail` says when each
worker went idle and which tests ended last.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV = "MCP_CODETOOLS_TEST_CPU"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    path = os.environ.get(ENV)
    if not path:
        yield
        return
    started, wall, (own, children) = time.time(), time.monotonic(), _cpu()
    yield
    wall_after, (own_after, children_after) = time.monotonic(), _cpu()
    line = json.dumps({
        "test": item.nodeid,
        "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
        "started": round(started, 3),
        "wall": round(wall_after - wall, 3),
        "self": round(own_after - own, 3),
        "children": round(children_after - children, 3),
    })  # fmt: skip
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


def rank(path: Path, top: int = 40) -> str:
    """The test files by CPU seconds (self + children), most first, with the suite's total."""
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        row = files[entry["test"].split("::", 1)[0]]
        row[0] += entry["self"] + entry["children"]
        row[1] += entry["children"]
        row[2] += entry["wall"]
        row[3] += 1
    ordered = sorted(files.items(), key=lambda kv: -kv[1][0])
    total = sum(row[0] for row in files.values())
    lines = [f"{'cpu s':>8} {'child s':>8} {'wall s':>8} {'tests':>6}  file   (total {total:.0f} CPU s)"]
    lines += [f"{r[0]:8.1f} {r[1]:8.1f} {r[2]:8.1f} {int(r[3]):6d}  {name}" for name, r in ordered[:top]]
    return "\n".join(lines)


def tail(path: Path, top: int = 15) -> str:
    """When each worker went idle, and the tests that ended last: the suite's wall past its CPU / cores."""
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    timed = [entry for entry in entries if "started" in entry]
    if not timed:
        return "no start times in this record (made before they were kept)"
    origin = min(entry["started"] for entry in timed)
    ends: dict[str, float] = defaultdict(float)
    for entry in timed:
        ends[entry["worker"]] = max(ends[entry["worker"]], entry["started"] + entry["wall"] - origin)
    lines = [
        "worker ends (s after the first test): " + ", ".join(f"{w or 'main'} {t:.0f}" for w, t in sorted(ends.items()))
    ]
    last = sorted(timed, key=lambda entry: -(entry["started"] + entry["wall"]))[:top]
    lines += [
        f"{entry['started'] - origin:7.1f} +{entry['wall']:6.1f} s  {entry['worker']:>4}  {entry['test']}"
        for entry in last
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[2:3] == ["--tail"]:
        print(tail(Path(sys.argv[1])))
    else:
        print(rank(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
