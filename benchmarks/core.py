"""What a run shares: the scratch root, the servers, their live connections, and what was measured."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio

from benchmarks.servers import Conn, ServerSpec, connect
from benchmarks.stats import summary

PEER_KEYS = ("before", "fs", "dc")
"""Columns beside ours; "before" is our server at another commit (`--against`), for before/after in one run."""
MIN_SAMPLES = 30


def nth(table: Mapping[str, Sequence[float] | None], key: str, i: int) -> float | None:
    """Item `i` of `table[key]`, or None when that server had no number (n/a)."""
    value = table.get(key)
    return value[i] if value else None


@dataclass
class Row:
    """One line of the table: our number, the baseline measured in the same run, peers, the target."""

    workload: str
    metric: str
    ours: float | None
    base: float | None = None
    base_label: str = ""
    peers: dict[str, float | None] = field(default_factory=dict)
    target: str = ""
    met: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ours is None or self.base is None or self.base == 0:
            return None
        return self.ours / self.base


@dataclass
class Series:
    """Raw samples behind a row (seconds), kept for the details section."""

    workload: str
    subject: str
    label: str
    samples: list[float]

    def summary(self) -> dict[str, float]:
        return summary(self.samples)


@dataclass
class Context:
    quick: bool
    root: Path
    scratch: Path
    errlog: TextIO
    specs: dict[str, ServerSpec]
    corpus: Path
    rg: str | None
    subject_limit_s: float = 180.0
    """How long one server may take over one workload before it is shown as n/a."""
    budget_s: float = 40.0
    """Sampling of one server in one workload stops after this long (with at least MIN_SAMPLES)."""
    rows: list[Row] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    _conns: dict[str, Conn] = field(default_factory=dict)
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    def scale(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    @property
    def peers(self) -> list[str]:
        return [key for key in PEER_KEYS if key in self.specs]

    def label(self, key: str) -> str:
        return self.specs[key].label if key in self.specs else key

    async def open_all(self) -> None:
        """Start every server for the long-lived connections; one that cannot start is left out.

        Done up front, outside any workload's time limit: a connection's task group must not live inside a
        cancel scope that ends before it.
        """
        for key in list(self.specs):
            try:
                self._conns[key] = await self._stack.enter_async_context(connect(self.specs[key], self.errlog))
            except Exception as exc:
                reason = f"{self.label(key)} did not start: {type(exc).__name__}: {str(exc)[:300]}"
                self.note(reason + " (left out of the run)")
                if key == "ours":
                    self.failures.append(reason)
                del self.specs[key]

    async def conn(self, key: str) -> Conn:
        """The long-lived connection to server `key` (see open_all)."""
        if key not in self._conns:
            raise RuntimeError(f"{self.label(key)} is not running")
        return self._conns[key]

    @asynccontextmanager
    async def fresh(self, key: str) -> AsyncIterator[Conn]:
        """A new server process for one measurement (cold start, peak memory).

        Quick runs (the smoke test) hand out the long-lived connection instead: a Python MCP server costs
        about a second to start, and quick numbers only show that the machinery works.
        """
        if self.quick:
            yield await self.conn(key)
            return
        async with connect(self.specs[key], self.errlog) as conn:
            yield conn

    @asynccontextmanager
    async def attempt(self, key: str, what: str) -> AsyncIterator[None]:
        """Run one server's part of a workload; a failure or overrun becomes a note and n/a, not a crash.

        A failure of our own server is also a failure of the run (the smoke test must see it).
        """
        try:
            with anyio.fail_after(self.subject_limit_s):
                yield
        except Exception as exc:
            reason = (
                f"did not finish within {self.subject_limit_s:g} s"
                if isinstance(exc, TimeoutError)
                else f"{type(exc).__name__}: {str(exc)[:300]}"
            )
            self.note(f"{what}, {self.label(key)}: {reason} (shown as n/a)")
            if key == "ours":
                self.failures.append(f"{what}: {reason}")

    def enough(self, count: int, spent_s: float) -> bool:
        """Whether a slow server has given enough samples: MIN_SAMPLES, and its time budget is spent."""
        return count >= MIN_SAMPLES and spent_s > self.budget_s

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._stack.aclose()
        self._conns.clear()

    def record(self, workload: str, subject: str, label: str, samples: Sequence[float]) -> None:
        if samples:
            self.series.append(Series(workload, subject, label, list(samples)))

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    def note(self, text: str) -> None:
        self.notes.append(text)
