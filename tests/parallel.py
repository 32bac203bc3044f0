"""How the suite runs on several pytest-xdist workers (`-n auto --dist loadgroup`, pyproject.toml's addopts).

- Tests marked `serial` share one worker and run one after another: they hold something the machine has once
  (Docker's daemon and its containers, HAProxy's fixed ports, a whole-tree ruff or mypy run).
- A module whose tests share a module- or class-scoped fixture (a built wheel, a container engine) runs on
  one worker: spread over several, or interleaved with other modules, it would build that fixture again each
  time its tests came back.
- The slowest tests are sent first (SLOW_FIRST), so the run does not end waiting on one long test started last.
- A run that writes the reliability report runs in one process: the report is built from what its tests
  record in that process.
"""

from __future__ import annotations

import os

import pytest

SERIAL_GROUP = "serial"
SLOW_FIRST = ("tests/test_quality.py",)
"""Node id prefixes of the slowest tests (from `--durations`), in the order they are sent to the workers."""


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    if not hasattr(config.option, "numprocesses"):
        return  # pytest-xdist is not installed (or -p no:xdist)
    if config.getoption("--reliability-report", default=None) or os.environ.get("MCP_CODETOOLS_RELIABILITY_REPORT"):
        config.option.numprocesses = 0


def _shares_fixtures(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definitions[-1].scope in ("module", "class", "package") for definitions in info.name2fixturedefs.values()
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Pin each test that must share a worker to its group, and put the slowest tests first."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.get_closest_marker(SERIAL_GROUP) is not None:
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))
        elif _shares_fixtures(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))

    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)  # stable: the rest keep the collection's order
