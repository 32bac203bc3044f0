"""
Running hostile calls through the pipeline and checking what must hold after each one.

`Arena` is a session over the hostile workspace (workspace.py) with a snapshot of everything outside
the root. `Arena.call` runs one call and checks: a ToolOutput came back, no error was logged, and no
internal error was answered, unless the failure has the signature of a bug an xfail test already pins
(`known_bug`), which is counted instead. `Arena.check_world` checks that nothing outside the root
changed, that no temporary file was left, and that the session still answers.
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import ToolOutput
from tests.reliability import procfs
from tests.reliability.report import Figures
from tests.reliability.workspace import SECRET_MARKERS, Layout, Snapshot, temp_leftovers

CALL_DEADLINE_S = 60.0


class ErrorLog(logging.Handler):
    """Collects ERROR records of the server's loggers."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass(frozen=True)
class KnownBug:
    """The signature of a bug an xfail test pins: the exception the server logged, and where it came from."""

    line: str
    kind: type[BaseException]
    text: str = ""
    frame: str = ""
    """A function name that must be in the logged traceback."""

    def matches(self, exc: BaseException | None) -> bool:
        if not isinstance(exc, self.kind) or self.text not in str(exc):
            return False
        frames = [f.name for f in traceback.extract_tb(exc.__traceback__)]
        return not self.frame or self.frame in frames


KNOWN_BUGS: tuple[KnownBug, ...] = ()
"""Bugs pinned by strict xfail tests. Remove an entry with its fix: then any such error fails the run."""


def known_bug(output: ToolOutput, records: list[logging.LogRecord]) -> str | None:
    """The pinned bug an internal error comes from, judged by the exception the server logged."""
    if output.meta.get("errorCode") != "internal_error" or not records:
        return None
    exc = records[-1].exc_info[1] if records[-1].exc_info else None
    return next((bug.line for bug in KNOWN_BUGS if bug.matches(exc)), None)


def describe(name: str, args: Mapping[str, Any] | None, limit: int = 300) -> str:
    shown = repr(args)
    return f"{name}({shown[:limit]}{'...' if len(shown) > limit else ''})"


@dataclass
class Arena:
    layout: Layout
    session: CodeSession
    pipeline: Pipeline
    figures: Figures
    suite: str
    before: Snapshot
    log: ErrorLog = field(default_factory=ErrorLog)
    calls: int = 0

    @classmethod
    def open(cls, layout: Layout, figures: Figures, suite: str) -> Arena:
        session = CodeSession(Settings(roots=(layout.root,)))
        arena = cls(layout, session, Pipeline(default_tools()), figures, suite, cls.outside(layout))
        logging.getLogger("mcp_codetools").addHandler(arena.log)
        return arena

    async def aclose(self) -> None:
        logging.getLogger("mcp_codetools").removeHandler(self.log)
        await self.session.aclose()

    @staticmethod
    def outside(layout: Layout) -> Snapshot:
        return Snapshot.of(layout.tmp, exclude=layout.root)

    async def call(self, name: str, args: Mapping[str, Any] | None) -> ToolOutput:
        """Run one call (placeholders in `args` filled in) and check it ended as a result."""
        args = self.layout.expand(args)
        self.log.records.clear()
        with anyio.fail_after(CALL_DEADLINE_S):
            output = await self.pipeline.run(self.session, name, args)
        self.calls += 1
        self.figures.count(self.suite, calls=1, inputs=1)
        assert isinstance(output, ToolOutput), describe(name, args)
        assert isinstance(output.text, str) and isinstance(output.meta, dict)
        tool = name if name in self.pipeline.tools else "(unknown tool)"
        self.figures.results[(tool, str(output.meta.get("errorCode", "error")) if output.is_error else "ok")] += 1
        leaked = [marker for marker in SECRET_MARKERS if marker in output.text]
        assert not leaked, f"{describe(name, args)} leaked outside content {leaked}: {output.text[:300]}"
        bug = known_bug(output, self.log.records)
        if bug is not None:
            self.figures.known_bug(bug)
            return output
        logged = [r.getMessage() for r in self.log.records]
        assert output.meta.get("errorCode") != "internal_error", f"{describe(name, args)}: {output.text} {logged}"
        assert not logged, f"{describe(name, args)} logged errors: {logged}"
        return output

    async def check_world(self, context: str = "") -> None:
        changes = self.before.changes(self.outside(self.layout))
        assert not changes, f"written outside the root {context}: {changes[:10]}"
        leftovers = temp_leftovers(self.layout.root)
        assert not leftovers, f"temporary files left {context}: {leftovers[:5]}"
        canary = await self.call("Read", {"file_path": str(self.layout.canary), "offset": 1, "limit": 5})
        assert not canary.is_error, f"the session stopped answering {context}: {canary.text}"
        self.session.ledger.forget(self.layout.canary)


async def no_live_children(seconds: float = 10) -> None:
    """Wait (bounded) until this process has no live descendants; fail naming them otherwise."""
    with anyio.move_on_after(seconds):
        while procfs.live_descendants(os.getpid()):  # noqa: ASYNC110 - bounded poll of /proc
            await anyio.sleep(0.05)
    live = procfs.live_descendants(os.getpid())
    assert not live, f"processes outlived the session: {live}"


def tool_names() -> list[str]:
    return [tool.name for tool in default_tools()]


def tool_named(name: str) -> Any:
    return next(tool for tool in default_tools() if tool.name == name)


def has_tool(name: str) -> bool:
    return name in tool_names()


def relative(path: Path, layout: Layout) -> str:
    return str(path.relative_to(layout.root))
