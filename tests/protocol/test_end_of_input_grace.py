"""After stdin ends: the requests already received go on while they keep being answered, within a cap."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcp_codetools.protocol import stdio
from mcp_codetools.protocol.stdio import EndOfInputGrace


def test_the_grace_runs_from_the_last_answer_and_never_past_its_cap() -> None:
    grace = EndOfInputGrace(100.0, idle_s=1.0, cap_s=10.0)
    assert grace.left(100.0) == 1.0
    assert grace.left(101.5) == 0.0, "no answer for longer than idle_s: over"
    grace.answered(101.2)
    assert grace.left(101.5) == pytest.approx(0.7), "an answer gives idle_s again"
    for now in (102.0, 104.0, 106.0, 108.0, 109.5):
        grace.answered(now)
    assert grace.left(109.5) == pytest.approx(0.5), "the cap holds however many answers come"
    assert grace.left(110.0) == 0.0


def _wire(*in_flight: int) -> Any:
    wire = stdio._Wire(SimpleNamespace(writer=None, peer_gone=False))  # type: ignore[arg-type]
    for request_id in in_flight:
        wire.begin(request_id)
    return wire


@pytest.mark.anyio
async def test_without_an_answer_the_wait_ends_when_the_grace_does() -> None:
    wire = _wire(1)
    with anyio.fail_after(10):
        await wire.answered_while_progressing(EndOfInputGrace(0.0, idle_s=0.0))
    assert wire.in_flight == {1}, "given up, the request is still in flight (the session cancels it)"


@pytest.mark.anyio
async def test_answers_coming_one_by_one_are_all_waited_for() -> None:
    wire = _wire(1, 2, 3)
    waiting = anyio.Event()

    async def answer_in_turn() -> None:
        await waiting.wait()
        for request_id in (1, 2, 3):
            wire.end(request_id)
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_in_turn)
        with anyio.fail_after(10):
            waiting.set()
            await wire.answered_while_progressing(EndOfInputGrace(time.monotonic(), idle_s=3600.0))
    assert wire.in_flight == set()
