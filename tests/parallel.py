"""How the suite runs on several pytest-xdist workers (`-n auto --dist worksteal`, pyproject.toml's addopts).

- worksteal hands each worker a contiguous half of the collection and lets an idle worker take the tail of a
  busy one's: a module's tests mostly stay together, so a module-scoped fixture (the built wheel, the
  container engine) is seldom built twice. (`--dist loadgroup` would pin groups to one worker, but pytest 9.2
  builds node ids in a way pytest-xdist 3.8's group suffix no longer reaches: its groups are ignored.)
- Tests marked `serial` hold something the machine has once (Docker's daemon and its containers, a cluster of
  replicas behind HAProxy in a time limit): a file lock shared by the run's workers lets one run at a time.
- The slowest modules are put first (SLOW_FIRST), so the run does not end waiting on one started last.
- `-n auto` starts one worker more than there are cores: the tests wait on the processes they start part of
  the time, and one worker a core left 11% of a quiet 2-core machine idle (a whole run: 7 min 49 s on 2 workers,
  7 min 22 s on 3 with 3% idle, the same 812 CPU-s, 2026-12-07).
- A run that writes the reliability report runs in one process: the report is built from what its tests
  record in that process. So does a run of one test file with `-n auto`: starting the workers (each imports
  and collects) would cost more than they save. `-n 0` runs anything in one process, `-n 4` on 4 workers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

SERIAL = "serial"
SERIAL_WAIT_S = 1800
"""How long a serial test waits for the one before it (the lock is held for one test at a time)."""
SLOW_FIRST = (
    "tests/protocol/test_start_snapshot.py",
    "tests/ecosystem/test_inspector.py",
    "tests/protocol/test_http_isolation.py",
    "tests/protocol/test_protocol_2026.py",
    "tests/ecosystem/test_wheel.py",
    "tests/test_quality.py",
    # Single tests of 10-45 s (a whole run at load ~2, 2026-12-07): started last they left one core idle
    # for up to 47 s at the end of a run.
    "tests/test_scale_smoke.py",
    "tests/reliability/test_soak.py",
    "tests/tools/test_edit_corpus.py",
    "tests/reliability/test_protocol_abuse.py",
    "tests/test_benchmarks_smoke.py",
    "tests/reliability/test_sigkill.py",
)
"""Node id prefixes of the slowest modules (from `--durations`), in the order they go to the workers."""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not hasattr(config.option, "numprocesses"):
        return  # pytest-xdist is not installed (or -p no:xdist)
    if config.getoption("--reliability-report", default=None) or os.environ.get("MCP_CODETOOLS_RELIABILITY_REPORT"):
        config.option.numprocesses = 0


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    files = {arg.split("::", 1)[0] for arg in config.args}
    if len(files) == 1 and Path(config.invocation_params.dir, *files).is_file():
        return 0
    return usable_cores() + 1


def usable_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest modules first; the rest keep the collection's order (every worker sorts alike)."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def _one_serial_test_at_a_time(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """A test marked serial holds the run's lock (in the workers' shared temporary folder) while it runs."""
    if request.node.get_closest_marker(SERIAL) is None or "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    from filelock import FileLock

    with FileLock(tmp_path_factory.getbasetemp().parent / "serial.lock", timeout=SERIAL_WAIT_S):
        yield
