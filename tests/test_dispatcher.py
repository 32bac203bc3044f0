"""The dispatcher's rule, observed through the order in which gated tool bodies start and finish."""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_codetools import pipeline as pipeline_module
from mcp_codetools.dispatcher import Dispatcher
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import ToolOutput
from tests.clocks import SteppingClock
from tests.gates import Gates

pytestmark = pytest.mark.anyio


def make_pipeline(gates: Gates) -> Pipeline:
    """`R` calls are concurrency-safe, `W` calls are not; both wait for their gate."""
    return Pipeline([gates.tool("R", safe=True), gates.tool("W"), *default_tools()])


def session_with(root: Path, limit: int = 10, queue_timeout: float = 600.0) -> CodeSession:
    return CodeSession(Settings(roots=(root,), max_concurrency=limit, queue_timeout_s=queue_timeout))


def let_go(session: CodeSession) -> list[bool]:
    """Whether the dispatcher has let each unfinished call start, in arrival order (its decision, made at once)."""
    return [started for *_, started in session.dispatcher.snapshot()]


async def test_burst_runs_as_batches_in_order(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root)
    calls = [("R", "A"), ("R", "B"), ("W", "C"), ("R", "D")]
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for tool, key in calls:
                gates.submit(tg, pipe, session, tool, key)
            await gates.settle(session.dispatcher)
            assert sorted(gates.started) == ["A", "B"]
            assert let_go(session) == [True, True, False, False]
            gates.open("B")
            await gates.settle(session.dispatcher)
            assert "C" not in gates.started, "a write must wait for every earlier call"
            assert let_go(session) == [True, False, False]
            gates.open("A")
            await gates.settle(session.dispatcher)
            assert gates.started[-1] == "C" and "D" not in gates.started
            assert let_go(session) == [True, False]
            gates.open("C")
            await gates.settle(session.dispatcher)
            assert gates.started[-1] == "D"
            gates.open("D")
    assert gates.committed == ["A", "B", "C", "D"]


async def test_read_edit_read_of_one_file_sees_the_edit(root: Path) -> None:
    f = root / "a.txt"
    f.write_text("value = 1\n", encoding="utf-8")
    pipe = Pipeline(default_tools())
    session = session_with(root)
    await pipe.run(session, "Read", {"file_path": str(f)})
    results: dict[int, ToolOutput] = {}

    async def run(i: int, name: str, args: dict[str, Any]) -> None:
        results[i] = await pipe.run(session, name, args)

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, 0, "Read", {"file_path": str(f), "limit": 5})
                tg.start_soon(
                    run, 1, "Edit", {"file_path": str(f), "old_string": "value = 1", "new_string": "value = 2"}
                )
                tg.start_soon(run, 2, "Read", {"file_path": str(f), "limit": 10})
    finally:
        await session.aclose()  # the Edit's history made the session's scratch folder
    assert results[0].text == "1\tvalue = 1"
    assert not results[1].is_error, results[1].text
    assert results[2].text == "1\tvalue = 2"


async def test_limit_caps_parallel_safe_calls(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root, limit=3)
    keys = [f"k{i}" for i in range(7)]
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for key in keys:
                gates.submit(tg, pipe, session, "R", key)
            await gates.settle(session.dispatcher)
            assert gates.started == keys[:3], "safe calls start in arrival order up to the limit"
            gates.open("k1")
            await gates.settle(session.dispatcher)
            assert gates.started == keys[:4]
            for key in keys:
                gates.open(key)
    assert gates.max_running == 3


async def test_undecidable_calls_are_not_safe(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            gates.submit(tg, pipe, session, "R", "A")
            gates.submit(tg, pipe, session, "R", "bad", {"key": 5, "extra": True})
            gates.submit(tg, pipe, session, "R", "B")
            await gates.settle(session.dispatcher)
            assert gates.started == ["A"], "an invalid call between two reads separates them"
            assert let_go(session) == [True, False, False]
            assert "bad" not in gates.outputs
            gates.open("A")
            await gates.settle(session.dispatcher)
            assert gates.outputs["bad"].is_error
            assert gates.started == ["A", "B"]
            gates.open("B")


async def test_session_changes_commit_in_arrival_order(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for key in ("first", "second", "third"):
                gates.submit(tg, pipe, session, "R", key)
            await gates.settle(session.dispatcher)
            gates.open("third")
            gates.open("second")
            await gates.settle(session.dispatcher)
            assert gates.finished == ["third", "second"]
            assert gates.committed == [], "later calls wait for the first before committing"
            gates.open("first")
    assert gates.committed == ["first", "second", "third"]


async def test_cancelling_a_queued_call_removes_it(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            gates.submit(tg, pipe, session, "W", "one")
            queued = gates.submit(tg, pipe, session, "W", "two")
            gates.submit(tg, pipe, session, "W", "three")
            await gates.settle(session.dispatcher)
            queued.cancel()
            await gates.settle(session.dispatcher)
            assert len(let_go(session)) == 2, "the cancelled call left the queue"
            gates.open("one")
            await gates.settle(session.dispatcher)
            assert gates.started == ["one", "three"]
            gates.open("three")
    assert session.dispatcher.snapshot() == []


async def test_cancelling_a_running_call_cleans_up_and_frees_the_slot(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            running = gates.submit(tg, pipe, session, "W", "long")
            gates.submit(tg, pipe, session, "W", "next")
            await gates.settle(session.dispatcher)
            assert gates.started == ["long"]
            running.cancel()
            await gates.settle(session.dispatcher)
            assert gates.cleaned == ["long"]
            assert gates.started == ["long", "next"]
            gates.open("next")
    assert "long" not in gates.finished and "long" not in gates.outputs


async def test_a_call_that_waits_too_long_says_what_it_waited_for(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root, queue_timeout=0.05)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            gates.submit(tg, pipe, session, "W", "slow")
            gates.submit(tg, pipe, session, "R", "late")
            await gates.until(lambda: "late" in gates.ended)
            gates.open("slow")
    late = gates.outputs["late"]
    assert late.is_error
    assert late.meta["errorCode"] == "queue_timeout"
    assert "#1 W (running)" in late.text


async def test_progress_is_reported_for_long_calls(gates: Gates, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline_module, "PROGRESS_INTERVAL_S", 0.01)
    pipe = make_pipeline(gates)
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
            gates.open("long")
    assert [value for value, _ in reports[:3]] == [1.0, 2.0, 3.0]
    assert reports[0][1] == "W: running"


async def test_timing_goes_into_meta(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = root / "t.txt"
    f.write_text("x\n", encoding="utf-8")
    monkeypatch.setattr(pipeline_module, "time", SteppingClock(0.25))  # the call's start and end: 250 ms apart
    out = await Pipeline(default_tools()).run(session_with(root), "Read", {"file_path": str(f)})
    timing = out.meta["timing"]
    assert timing["seq"] == 1
    assert timing["queuedMs"] + timing["runMs"] == pytest.approx(250.0, abs=0.002), "milliseconds, split in two"


def check_rule(order: list[tuple[str, bool]], gates: Gates, limit: int) -> None:
    """The rule, checked against what is running right now (nothing can move without the test)."""
    finished = set(gates.finished)
    running = gates.running
    started = set(gates.started)
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
        gates = Gates()
        pipe = make_pipeline(gates)
        session = session_with(tmp_path, limit=limit)
        order = [(f"c{i}", safe) for i, safe in enumerate(kinds)]
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for key, safe in order:
                    gates.submit(tg, pipe, session, "R" if safe else "W", key)
                while len(gates.finished) < len(order):
                    await gates.settle(session.dispatcher)
                    check_rule(order, gates, limit)
                    assert gates.running, "nothing runs but calls remain: deadlock"
                    gates.open(rng.choice(sorted(gates.running)))
                    await gates.settle(session.dispatcher)
        assert gates.committed == [key for key, _ in order]

    anyio.run(scenario)


def test_dispatcher_bookkeeping_is_empty_after_a_run() -> None:
    dispatcher = Dispatcher(limit=2)
    ticket = dispatcher.admit("x")
    dispatcher.discard(ticket)
    assert dispatcher.snapshot() == []


async def test_a_call_numbered_when_its_request_was_read_keeps_that_place(gates: Gates, root: Path) -> None:
    """stdio numbers a call at read time (`reserve`); its handler comes later, yet a later read waits for it."""
    pipe = make_pipeline(gates)
    session = session_with(root)
    reserved = session.dispatcher.reserve("request 7", "W")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            gates.submit(tg, pipe, session, "R", "later")
            await gates.settle(session.dispatcher)
            assert gates.started == [], "the reserved write comes first, though no handler has it yet"
            ticket = session.dispatcher.claim("request 7")
            assert ticket is reserved and session.dispatcher.claim("request 7") is None
            tg.start_soon(partial(pipe.run, session, "W", {"key": "first"}, ticket=ticket))
            await gates.until(lambda: gates.started == ["first"])
            gates.open("first")
            await gates.until(lambda: "later" in gates.started)
            gates.open("later")
    assert gates.committed == ["first", "later"]


async def test_a_reserved_number_no_handler_takes_is_released(gates: Gates, root: Path) -> None:
    pipe = make_pipeline(gates)
    session = session_with(root)
    session.dispatcher.reserve(7, "W")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            gates.submit(tg, pipe, session, "R", "later")
            await gates.settle(session.dispatcher)
            assert gates.started == []
            session.dispatcher.release(7)  # answered or cancelled before its handler ran
            await gates.until(lambda: gates.started == ["later"])
            gates.open("later")
    assert session.dispatcher.snapshot() == []
