"""The dispatcher's rule, observed through the order in which gated tool bodies start and finish."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from mcp_codetools import pipeline as pipeline_module
from mcp_codetools.config import Settings
from mcp_codetools.dispatcher import Dispatcher
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput

pytestmark = pytest.mark.anyio


class GateInput(ToolInput):
    key: str = Field(description="which gate")


class Board:
    """Gates the test opens one by one, and the log of what started and finished."""

    def __init__(self) -> None:
        self.gates: dict[str, anyio.Event] = {}
        self.started: list[str] = []
        self.finished: list[str] = []
        self.running: set[str] = set()
        self.max_running = 0
        self.cleaned: list[str] = []
        self.committed: list[str] = []

    def gate(self, key: str) -> anyio.Event:
        return self.gates.setdefault(key, anyio.Event())


class GateTool(Tool[GateInput]):
    input_model = GateInput
    description = "test tool"
    board: ClassVar[Board]
    safe: ClassVar[bool]

    def is_concurrency_safe(self, args: GateInput) -> bool:
        return self.safe

    async def call(self, args: GateInput, ctx: CallContext, prepared: None) -> ToolOutput:
        board = self.board
        board.started.append(args.key)
        board.running.add(args.key)
        board.max_running = max(board.max_running, len(board.running))
        key = args.key
        ctx.defer(lambda: board.committed.append(key))
        try:
            await board.gate(key).wait()
        finally:
            board.running.discard(key)
            board.cleaned.append(key)
        board.finished.append(key)
        return ToolOutput(f"done {key}")


def make_pipeline(board: Board) -> Pipeline:
    class SafeGate(GateTool):
        name = "R"
        title = "R"
        safe = True

    class UnsafeGate(GateTool):
        name = "W"
        title = "W"
        safe = False

    SafeGate.board = board
    UnsafeGate.board = board
    return Pipeline([SafeGate(), UnsafeGate(), *default_tools()])


@pytest.fixture
def board() -> Board:
    return Board()


def session_with(root: Path, limit: int = 10, queue_timeout: float = 600.0) -> CodeSession:
    return CodeSession(Settings(roots=(root,), max_concurrency=limit, queue_timeout_s=queue_timeout))


async def settle() -> None:
    """Wait until every other task is blocked (anyio's version sleeps 0.1 s per retry; this spins)."""
    this = asyncio.current_task()
    for _ in range(10_000):
        await anyio.lowlevel.checkpoint()
        waiting = (task._fut_waiter for task in asyncio.all_tasks() if task is not this)  # type: ignore[attr-defined]
        if all(waiter is not None and not waiter.done() for waiter in waiting):
            return
    raise AssertionError("tasks never settled")


async def test_burst_runs_as_batches_in_order(board: Board, root: Path) -> None:
    pipe = make_pipeline(board)
    session = session_with(root)
    calls = [("R", "A"), ("R", "B"), ("W", "C"), ("R", "D")]
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for tool, key in calls:
                tg.start_soon(pipe.run, session, tool, {"key": key})
            await settle()
            assert sorted(board.started) == ["A", "B"]
            board.gate("B").set()
            await settle()
            assert "C" not in board.started, "a write must wait for every earlier call"
            board.gate("A").set()
            await settle()
            assert board.started[-1] == "C" and "D" not in board.started
            board.gate("C").set()
            await settle()
            assert board.started[-1] == "D"
            board.gate("D").set()
    assert board.committed == ["A", "B", "C", "D"]


async def test_read_edit_read_of_one_file_sees_the_edit(root: Path) -> None:
    f = root / "a.txt"
    f.write_text("value = 1\n", encoding="utf-8")
    pipe = Pipeline(default_tools())
    session = session_with(root)
    await pipe.run(session, "Read", {"file_path": str(f)})
    results: dict[int, ToolOutput] = {}

    async def run(i: int, name: str, args: dict[str, Any]) -> None:
        results[i] = await pipe.run(session, name, args)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, 0, "Read", {"file_path": str(f), "limit": 5})
            tg.start_soon(run, 1, "Edit", {"file_path": str(f), "old_string": "value = 1", "new_string": "value = 2"})
            tg.start_soon(run, 2, "Read", {"file_path": str(f), "limit": 10})
    assert results[0].text == "1\tvalue = 1"
    assert not results[1].is_error, results[1].text
    assert results[2].text == "1\tvalue = 2"


async def test_limit_caps_parallel_safe_calls(board: Board, root: Path) -> None:
    pipe = make_pipeline(board)
    session = session_with(root, limit=3)
    keys = [f"k{i}" for i in range(7)]
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for key in keys:
                tg.start_soon(pipe.run, session, "R", {"key": key})
            await settle()
            assert board.started == keys[:3], "safe calls start in arrival order up to the limit"
            board.gate("k1").set()
            await settle()
            assert board.started == keys[:4]
            for key in keys:
                board.gate(key).set()
    assert board.max_running == 3


async def test_undecidable_calls_are_not_safe(board: Board, root: Path) -> None:
    pipe = make_pipeline(board)
    session = session_with(root)
    outputs: list[ToolOutput] = []

    async def bad() -> None:
        outputs.append(await pipe.run(session, "R", {"key": 5, "extra": True}))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipe.run, session, "R", {"key": "A"})
            tg.start_soon(bad)
            tg.start_soon(pipe.run, session, "R", {"key": "B"})
            await settle()
            assert board.started == ["A"], "an invalid call between two reads separates them"
            assert not outputs
            board.gate("A").set()
            await settle()
            assert outputs and outputs[0].is_error
            assert board.started == ["A", "B"]
            board.gate("B").set()


async def test_session_changes_commit_in_arrival_order(board: Board, root: Path) -> None:
    pipe = make_pipeline(board)
    session = session_with(root)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for key in ("first", "second", "third"):
                tg.start_soon(pipe.run, session, "R", {"key": key})
            await settle()
            board.gate("third").set()
            board.gate("second").set()
            await settle()
            assert board.finished == ["third", "second"]
            assert board.committed == [], "later calls wait for the first before committing"
            board.gate("first").set()
    assert board.committed == ["first", "second", "third"]


async def test_cancelling_a_queued_call_removes_it(board: Board, root: Path) -> None:
    pipe = make_pipeline(board)
    session = session_with(root)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipe.run, session, "W", {"key": "one"})
            queued = anyio.CancelScope()

            async def cancellable() -> None:
                with queued:
                    await pipe.run(session, "W", {"key": "two"})

            tg.start_soon(cancellable)
            tg.start_soon(pipe.run, session, "W", {"key": "three"})
            await settle()
            queued.cancel()
            await settle()
            board.gate("one").set()
            await settle()
            assert board.started == ["one", "three"]
            board.gate("three").set()
    assert session.dispatcher.snapshot() == []


async def test_cancelling_a_running_call_cleans_up_and_frees_the_slot(board: Board, root: Path) -> None:
    pipe = make_pipeline(board)
    session = session_with(root)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            running = anyio.CancelScope()

            async def cancellable() -> None:
                with running:
                    await pipe.run(session, "W", {"key": "long"})

            tg.start_soon(cancellable)
            tg.start_soon(pipe.run, session, "W", {"key": "next"})
            await settle()
            assert board.started == ["long"]
            running.cancel()
            await settle()
            assert board.cleaned == ["long"]
            assert board.started == ["long", "next"]
            board.gate("next").set()
    assert "long" not in board.finished


async def test_a_call_that_waits_too_long_says_what_it_waited_for(board: Board, root: Path) -> None:
    pipe = make_pipeline(board)
    session = session_with(root, queue_timeout=0.05)
    outputs: list[ToolOutput] = []
    answered = anyio.Event()

    async def late() -> None:
        outputs.append(await pipe.run(session, "R", {"key": "late"}))
        answered.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipe.run, session, "W", {"key": "slow"})
            tg.start_soon(late)
            await answered.wait()
            board.gate("slow").set()
    assert outputs[0].is_error
    assert outputs[0].meta["errorCode"] == "queue_timeout"
    assert "#1 W (running)" in outputs[0].text


async def test_progress_is_reported_for_long_calls(board: Board, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline_module, "PROGRESS_INTERVAL_S", 0.01)
    pipe = make_pipeline(board)
    session = session_with(root)
    reports: list[tuple[float, str | None]] = []
    enough = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        reports.append((value, message))
        if len(reports) >= 3:
            enough.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: pipe.run(session, "W", {"key": "long"}, progress=progress))
            await enough.wait()
            board.gate("long").set()
    assert [value for value, _ in reports[:3]] == [1.0, 2.0, 3.0]
    assert reports[0][1] == "W: running"


async def test_timing_goes_into_meta(root: Path) -> None:
    f = root / "t.txt"
    f.write_text("x\n", encoding="utf-8")
    out = await Pipeline(default_tools()).run(session_with(root), "Read", {"file_path": str(f)})
    timing = out.meta["timing"]
    assert timing["seq"] == 1 and timing["queuedMs"] >= 0 and timing["runMs"] >= 0


def check_rule(order: list[tuple[str, bool]], board: Board, limit: int) -> None:
    """The rule, checked against what is running right now (all tasks blocked)."""
    finished = set(board.finished)
    running = board.running
    started = set(board.started)
    for index, (key, safe) in enumerate(order):
        earlier = order[:index]
        if key in running:
            if safe:
                assert all(k in finished for k, s in earlier if not s), f"{key} overtook an unsafe call"
            else:
                assert all(k in finished for k, _ in earlier), f"unsafe {key} started before earlier calls ended"
                assert running == {key}, f"unsafe {key} did not run alone"
        elif key not in started:
            # Nothing eligible may be left waiting.
            if safe:
                blocked = any(k not in finished for k, s in earlier if not s) or len(running) >= limit
                blocked = blocked or any(k not in started for k, s in earlier if s)
            else:
                blocked = any(k not in finished for k, _ in earlier)
            assert blocked, f"{key} could start but was left waiting"
    assert len(running) <= limit


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kinds=st.lists(st.booleans(), min_size=1, max_size=12),
    limit=st.integers(min_value=1, max_value=4),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_random_bursts_keep_the_rule(kinds: list[bool], limit: int, seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)

    async def scenario() -> None:
        board = Board()
        pipe = make_pipeline(board)
        session = session_with(tmp_path, limit=limit)
        order = [(f"c{i}", safe) for i, safe in enumerate(kinds)]
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for key, safe in order:
                    tg.start_soon(pipe.run, session, "R" if safe else "W", {"key": key})
                while len(board.finished) < len(order):
                    await settle()
                    check_rule(order, board, limit)
                    assert board.running, "nothing runs but calls remain: deadlock"
                    board.gate(rng.choice(sorted(board.running))).set()
                    await settle()
        assert board.committed == [key for key, _ in order]

    anyio.run(scenario)


def test_dispatcher_bookkeeping_is_empty_after_a_run() -> None:
    dispatcher = Dispatcher(limit=2)
    ticket = dispatcher.admit("x")
    dispatcher.discard(ticket)
    assert dispatcher.snapshot() == []
