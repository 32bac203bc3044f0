"""
An old_string that is not in the file (issue 12, availability): the search for the closest region is
bounded and runs off the event loop, so one big miss cannot stall every other call on the server.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from mcp_codetools.files import matching
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

GATE_S = 20.0
"""How long the gated search waits for the other call; it is released as soon as that call is done."""


def large_file(root: Path) -> Path:
    f = root / "big.py"
    f.write_text("".join(f"    value_{i} = compute({i}, 'x' * {i % 97})\n" for i in range(15_000)), encoding="utf-8")
    return f


def big_miss() -> str:
    """About 20 KB over 150 lines, none of them in the file."""
    return "".join(f"    missing_{i} = other({i}, {'y' * 120})\n" for i in range(150))


async def test_a_big_miss_does_not_stall_other_calls(
    call: Caller, root: Path, pipeline: Pipeline, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = large_file(root)
    (root / "small.txt").write_text("hello\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f), "limit": 5})
    entered, release = threading.Event(), threading.Event()
    released: list[bool] = []
    real = matching.not_found_message

    def gated(text: str, old: str, path: str) -> str:
        entered.set()
        # On the event loop this wait would hold every other call, so the Read below could not finish
        # and the wait would end by its timeout instead: `released` then records False.
        released.append(release.wait(GATE_S))
        return real(text, old, path)

    monkeypatch.setattr(matching, "not_found_message", gated)
    other = CodeSession(settings)
    results: dict[str, str] = {}

    async def edit() -> None:
        out = await call.fails("Edit", {"file_path": str(f), "old_string": big_miss(), "new_string": "z"})
        results["edit"] = out.text

    try:
        with anyio.fail_after(GATE_S * 2):
            async with anyio.create_task_group() as tg:
                tg.start_soon(edit)
                assert await anyio.to_thread.run_sync(entered.wait, GATE_S), "the search never started"
                read = await pipeline.run(other, "Read", {"file_path": str(root / "small.txt")})
                results["read"] = read.text
                release.set()
    finally:
        release.set()
        await other.aclose()
    assert released == [True], "the Read could not run while the closest-region search was computed"
    assert "hello" in results["read"]
    assert results["edit"].startswith(f"String to replace not found in file {f}.")


async def test_a_big_miss_ends_with_the_plain_message_when_the_budget_runs_out(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = large_file(root)
    await call.ok("Read", {"file_path": str(f), "limit": 5})
    monkeypatch.setattr(matching, "SEARCH_BUDGET_S", 0.0)
    near = "    value_10 = compute(10, 'x' * 10)\n    value_11 = compute(11, 'x' * 99)\n"
    out = await call.fails("Edit", {"file_path": str(f), "old_string": near, "new_string": "z"})
    assert out.meta["errorCode"] == "old_string_not_found", out.text
    assert "The text at lines" not in out.text
    assert "Read the file again and copy the exact text" in out.text


def test_a_long_miss_is_scored_only_where_its_first_or_last_line_anchors_it() -> None:
    lines = [f"line {i} " + "q" * 150 for i in range(400)]
    text = "\n".join(lines) + "\n"
    old_lines = lines[100:140]
    old_lines[20] = "a changed line " + "r" * 150  # one line differs: the rest still anchors the window
    old = "\n".join(old_lines)
    assert len(old) > 4000
    region = matching.closest_region(text, old, budget_s=30.0)
    assert region is not None and region[0] == 101 and not region[2]


def test_a_single_huge_line_miss_is_bounded() -> None:
    text = "".join(f"{i}: " + "z" * 300 + "\n" for i in range(5000))
    assert matching.closest_region(text, "w" * 20_000, budget_s=30.0) is None
