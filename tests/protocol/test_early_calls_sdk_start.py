"""When the SDK's import starts at a start from the snapshot: not while only early calls come (it would take
the interpreter from them), at once when a line needs the SDK, and when the wire has gone quiet.

`EarlyCalls` runs in process on a stream of lines the test feeds; `start_sdk` records its calls.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.protocol import early_calls
from mcp_codetools.protocol.early_calls import EarlyCalls
from mcp_codetools.protocol.fast_start import EarlyStart, SnapshotAnswers
from mcp_codetools.protocol.wire import WireStream
from mcp_codetools.session import CodeSession
from tests.gates import Gates
from tests.protocol.snapshot_runs import handshake

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"
NEVER_IDLE_S = 3600.0
"""An idle delay no test reaches: the import then starts only for a line that needs it."""
SNAPSHOT = {
    "handshake": {VERSION: {"initialize": {"protocolVersion": VERSION}, "tools/list": {"tools": []}}},
    "modern": {},
    "discover": {},
}
BOUND_S = 10


class _Wire:
    """The two ends of `WireStream` that `EarlyCalls` uses: lines in from the test, answers out to it."""

    def __init__(self) -> None:
        self.send, self.lines = anyio.create_memory_object_stream[bytes](100)
        self.said: list[dict[str, Any]] = []
        self._changed = anyio.Event()

    async def read_line(self) -> bytes:
        try:
            return await self.lines.receive()
        except anyio.EndOfStream:
            raise EOFError from None

    async def say(self, data: bytes) -> None:
        self.said.append(json.loads(data))
        self._changed.set()
        self._changed = anyio.Event()

    async def answer_to(self, request_id: int) -> dict[str, Any]:
        with anyio.fail_after(BOUND_S):
            while not any(m.get("id") == request_id for m in self.said):
                await self._changed.wait()
        return next(m for m in self.said if m.get("id") == request_id)

    async def feed(self, *messages: dict[str, Any]) -> None:
        for message in messages:
            await self.send.send(json.dumps(message).encode())


def _read(request_id: int, key: str) -> dict[str, Any]:
    params = {"name": "Read", "arguments": {"key": key}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


class _Run:
    """`EarlyCalls.serve` in a task; the snapshot's answers given to it as if its thread had read nothing."""

    def __init__(self, pipeline: Pipeline, session: CodeSession, idle_start_s: float) -> None:
        early = SimpleNamespace(answers=SnapshotAnswers(SNAPSHOT), verdicts=[], lost_track=False)
        self.wire = _Wire()
        self.calls = EarlyCalls(
            cast(EarlyStart, early), pipeline, session, cast(WireStream, self.wire), idle_start_s=idle_start_s
        )
        self.sdk_ready = anyio.Event()
        self.started = anyio.Event()
        self.started_with_running: list[int] = []

    def start_sdk(self) -> None:
        self.started_with_running.append(self.calls._running)
        self.started.set()

    async def serve(self) -> None:
        try:
            await self.calls.serve(self.sdk_ready, self.start_sdk)
        finally:
            self.wire.send.close()
            self.wire.lines.close()

    async def finish(self) -> None:
        self.sdk_ready.set()
        await self.wire.send.aclose()


async def test_early_calls_alone_do_not_start_the_sdk_a_line_that_needs_it_does(
    session: CodeSession, gates: Gates
) -> None:
    run = _Run(Pipeline([gates.tool("Read", safe=True)]), session, NEVER_IDLE_S)
    gates.open("a")
    async with anyio.create_task_group() as tg:
        tg.start_soon(run.serve)
        await run.wire.feed(*handshake(VERSION), _read(3, "a"))
        await run.wire.answer_to(3)
        await anyio.wait_all_tasks_blocked()
        assert not run.started.is_set(), "the import would have competed with the next early call"
        assert run.calls.calm.is_set(), "nothing runs or waits: an import under way may go on"
        await run.wire.feed({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        with anyio.fail_after(BOUND_S):
            await run.started.wait()
        await run.finish()
    assert run.calls.answered == 1
    assert json.loads(cast(bytes, run.calls.for_sdk()[-1]))["method"] == "ping"


async def test_a_line_that_needs_the_sdk_starts_it_while_an_early_call_still_runs(
    session: CodeSession, gates: Gates
) -> None:
    run = _Run(Pipeline([gates.tool("Read", safe=True)]), session, NEVER_IDLE_S)
    async with anyio.create_task_group() as tg:
        tg.start_soon(run.serve)
        await run.wire.feed(*handshake(VERSION), _read(3, "held"))
        with anyio.fail_after(BOUND_S):
            await gates.until(lambda: "held" in gates.running)
        assert not run.calls.calm.is_set(), "an import under way would wait"
        await run.wire.feed({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        with anyio.fail_after(BOUND_S):
            await run.started.wait()
        assert run.started_with_running == [1], "not starved by the call that holds"
        assert run.calls.calm.is_set(), "nor is its import held back by it"
        gates.open("held")
        await run.wire.answer_to(3)
        await run.finish()


async def test_a_quiet_wire_starts_the_sdk_without_a_line_for_it(session: CodeSession, gates: Gates) -> None:
    run = _Run(Pipeline([gates.tool("Read", safe=True)]), session, 0.0)
    gates.open("a")
    async with anyio.create_task_group() as tg:
        tg.start_soon(run.serve)
        await run.wire.feed(*handshake(VERSION), _read(3, "a"))
        with anyio.fail_after(BOUND_S):
            await run.started.wait()
        assert run.started_with_running == [0]
        await run.finish()
    assert run.calls.answered == 1


async def test_the_end_of_input_starts_the_sdk(session: CodeSession, gates: Gates) -> None:
    run = _Run(Pipeline([gates.tool("Read", safe=True)]), session, NEVER_IDLE_S)
    async with anyio.create_task_group() as tg:
        tg.start_soon(run.serve)
        await run.wire.feed(*handshake(VERSION))
        await run.wire.send.aclose()
        with anyio.fail_after(BOUND_S):
            await run.started.wait()
        run.sdk_ready.set()


class _Grace:
    """An end-of-input grace the test runs out: endless until the first answer, over after it."""

    made: list[_Grace] = []

    def __init__(self, ended_at: float) -> None:
        self.answers = 0
        _Grace.made.append(self)

    def answered(self, now: float) -> None:
        self.answers += 1

    def left(self, now: float) -> float:
        return 0.0 if self.answers else 3600.0


async def test_after_the_end_of_input_each_answer_renews_the_grace_and_its_end_cancels_the_rest(
    session: CodeSession, gates: Gates, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flat second from the end of input lost piped calls at load 15-17: the wait runs by answers now."""
    monkeypatch.setattr(early_calls, "EndOfInputGrace", _Grace)
    _Grace.made.clear()
    run = _Run(Pipeline([gates.tool("Read", safe=True)]), session, NEVER_IDLE_S)
    async with anyio.create_task_group() as tg:
        tg.start_soon(run.serve)
        await run.wire.feed(*handshake(VERSION), _read(3, "a"), _read(4, "b"))
        with anyio.fail_after(BOUND_S):
            await gates.until(lambda: {"a", "b"} <= set(gates.running))
        await run.wire.send.aclose()
        with anyio.fail_after(BOUND_S):
            await run.started.wait()
        gates.open("a")
        await run.wire.answer_to(3)
        run.sdk_ready.set()
    assert [grace.answers for grace in _Grace.made] == [1], "the answer to 3 was counted"
    assert not any(m.get("id") == 4 for m in run.wire.said), "4 was cancelled once the grace ran out"
    assert run.calls.answered == 1
