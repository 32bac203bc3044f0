"""3b. The dispatcher's own cost per call, measured in-process (issue 3).

Method: the same Read of a 50-line file through `Pipeline.run`, alternating call by call between a session
with the real `Dispatcher` and a session whose dispatcher is replaced by a pass-through (numbers the call,
enters at once, commits the session changes at the end). The overhead is the difference of the medians.
A second number times `admit` + `slot` + `discard` alone in a tight loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks import fixtures
from benchmarks.core import Context, Row
from benchmarks.stats import median
from mcp_codetools.dispatcher import Dispatcher
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools

NAME = "dispatcher"
TITLE = "3b. Dispatcher overhead (in-process)"
TARGET_MS = 0.1


class _Ticket:
    __slots__ = ("changes", "label", "queued_ms", "safe", "seq", "started")

    def __init__(self, seq: int, label: str) -> None:
        self.seq = seq
        self.label = label
        self.safe = False
        self.started = False
        self.queued_ms = 0.0
        self.changes: list[Callable[[], None]] = []


class _Slot:
    def __init__(self, ticket: _Ticket) -> None:
        self.ticket = ticket

    async def __aenter__(self) -> _Ticket:
        self.ticket.started = True
        return self.ticket

    async def __aexit__(self, *exc: object) -> None:
        _commit(self.ticket)


def _commit(ticket: _Ticket) -> None:
    for change in ticket.changes:
        change()
    ticket.changes.clear()


class PassThrough:
    """Stands in for the Dispatcher: every call runs at once, changes are committed when it ends."""

    def __init__(self) -> None:
        self._seq = 0

    def admit(self, label: str = "?") -> _Ticket:
        self._seq += 1
        return _Ticket(self._seq, label)

    def slot(self, ticket: _Ticket, *, safe: bool) -> _Slot:
        ticket.safe = safe
        return _Slot(ticket)

    def discard(self, ticket: _Ticket) -> None:
        _commit(ticket)


async def _tight_loop(n: int) -> float:
    dispatcher = Dispatcher()
    start = time.perf_counter()
    for _ in range(n):
        ticket = dispatcher.admit("Read")
        async with dispatcher.slot(ticket, safe=True):
            pass
        dispatcher.discard(ticket)
    return (time.perf_counter() - start) / n


async def run(ctx: Context) -> None:
    n = ctx.scale(4000, 300)
    path = fixtures.write_source(ctx.root / "dispatch" / "target.py", 50, 5)
    pipeline = Pipeline(default_tools())
    settings = Settings(roots=(ctx.root,))
    real = CodeSession(settings)
    bypass = CodeSession(settings)
    bypass._dispatcher = PassThrough()  # type: ignore[assignment]
    timings: dict[str, list[float]] = {"real": [], "bypass": []}
    arms: list[tuple[str, CodeSession]] = [("real", real), ("bypass", bypass)]
    for i in range(n + 200):
        # Alternate the offset so no call gets the "unchanged" notice, and the arm order each round.
        args: dict[str, Any] = {"file_path": str(path), "offset": 1 + i % 2}
        for name, session in arms if i % 2 else arms[::-1]:
            start = time.perf_counter()
            output = await pipeline.run(session, "Read", args)
            elapsed = time.perf_counter() - start
            if output.is_error:
                raise RuntimeError(f"in-process Read failed: {output.text[:300]}")
            if i >= 200:
                timings[name].append(elapsed)
    for session in (real, bypass):
        await session.aclose()
    ctx.record(TITLE, "Pipeline.run, real Dispatcher", "Read 50 lines", timings["real"])
    ctx.record(TITLE, "Pipeline.run, pass-through", "Read 50 lines", timings["bypass"])
    real_ms = median(timings["real"]) * 1000
    bypass_ms = median(timings["bypass"]) * 1000
    overhead = real_ms - bypass_ms
    loop_us = await _tight_loop(n * 5) * 1e6
    ctx.add(Row(TITLE, "Pipeline.run(Read 50 lines), median (ms)", real_ms, bypass_ms, "dispatcher bypassed"))
    ctx.add(
        Row(
            TITLE,
            "dispatcher's own overhead per call (ms)",
            overhead,
            target=f"< {TARGET_MS:g} ms",
            met=overhead < TARGET_MS,
            note=f"difference of medians over {n} calls each; admit+slot+discard alone: {loop_us:.1f} µs/call",
        )
    )
