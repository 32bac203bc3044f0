"""
The reliability suite's plumbing: long mode, outcome bookkeeping, and the report written at the end.

Long mode (`--run-slow`, or `MCP_CODETOOLS_RELIABILITY_LONG=1`) makes the suites bigger: more fuzz
examples, more SIGKILL trials, the 100,000-call soak. The report is written only when asked
(`--reliability-report PATH` or `MCP_CODETOOLS_RELIABILITY_REPORT=PATH`), and only after a run that
executed every test module of this folder with nothing deselected; a plain run writes no file.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.reliability.harness import Arena, no_live_children
from tests.reliability.report import (
    FIGURES,
    REPORT_OPTION,
    Figures,
    long_mode_requested,
    record_outcome,
    requested_path,
    suite_of,
)
from tests.reliability.report import write_report as _write_report
from tests.reliability.workspace import Layout, build

HERE = Path(__file__).resolve().parent
_state: dict[str, object] = {
    "selected": set(),
    "deselected": 0,
    "started": time.monotonic(),
    "path": None,
    "written": None,
}


def _is_ours(nodeid_or_path: str | os.PathLike[str]) -> bool:
    path = Path(str(nodeid_or_path).split("::", 1)[0])
    if not path.is_absolute():
        path = Path.cwd() / path
    return path.resolve().is_relative_to(HERE)


def pytest_configure(config: pytest.Config) -> None:
    FIGURES.long_mode = bool(config.getoption("--run-slow", default=False)) or long_mode_requested()
    _state["started"] = time.monotonic()
    try:  # resolved now, against the folder pytest was started in, before any test changes directory
        _state["path"] = requested_path(
            config.getoption(REPORT_OPTION, default=None), os.environ, config.invocation_params.dir
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_deselected(items: list[pytest.Item]) -> None:
    ours = [item for item in items if _is_ours(item.path)]
    _state["deselected"] = int(_state["deselected"]) + len(ours)  # type: ignore[call-overload]


def pytest_collection_finish(session: pytest.Session) -> None:
    _state["selected"] = {Path(item.path).name for item in session.items if _is_ours(item.path)}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _is_ours(report.fspath):
        return
    if report.when != "call" and report.outcome == "passed":
        record_outcome(FIGURES, report.nodeid, suite_of(report.fspath), "passed", report.duration, "")
        return
    outcome = report.outcome
    reason = ""
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.outcome == "skipped" else "failed"
        reason = str(report.wasxfail).removeprefix("reason: ")
    elif outcome == "skipped" and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    record_outcome(FIGURES, report.nodeid, suite_of(report.fspath), outcome, report.duration, reason)


def _whole_suite_ran() -> bool:
    modules = {p.name for p in HERE.glob("test_*.py")}
    return bool(modules) and _state["selected"] == modules and _state["deselected"] == 0


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = _state["path"]
    if not isinstance(path, Path) or not FIGURES.outcomes or not _whole_suite_ran():
        return
    wall = time.monotonic() - float(_state["started"])  # type: ignore[arg-type]
    _state["written"] = _write_report(FIGURES, wall_s=wall, path=path)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _state["path"] is None:
        return
    written = _state["written"]
    if written is not None:
        terminalreporter.write_line(f"reliability report written to {written}")
    else:
        terminalreporter.write_line("reliability report not written: the run did not execute the whole suite")


@pytest.fixture(scope="session")
def figures() -> Figures:
    return FIGURES


@pytest.fixture
def layout(tmp_path: Path, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    """The hostile workspace around `root` (workspace.py); HOME points beside it, so `~` leads outside too."""
    built = build(tmp_path, root, outside)
    monkeypatch.setenv("HOME", str(built.home))
    return built


@pytest.fixture
async def arena(layout: Layout, figures: Figures, suite: str) -> AsyncIterator[Arena]:
    """A session over the hostile workspace whose calls are checked (harness.py); no child may outlive it."""
    opened = Arena.open(layout, figures, suite)
    try:
        yield opened
    finally:
        await opened.aclose()
    await no_live_children()


@pytest.fixture
def suite(request: pytest.FixtureRequest) -> str:
    """This test's suite name, for counters."""
    return suite_of(str(request.path))
