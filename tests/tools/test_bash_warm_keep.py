"""After a call the waiting bash is kept at once; only a start waits for the answer to be written (`shell.warm`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.shell import warm

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(os.name == "nt", reason="bash commands: POSIX")]


def deferred(monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    """What is put off to a later turn of the loop with `call_later`, from now on (called on the loop)."""
    loop = asyncio.get_running_loop()
    real = loop.call_later
    seen: list[Callable[..., Any]] = []

    def call_later(delay: float, callback: Callable[..., Any], *args: Any) -> asyncio.TimerHandle:
        seen.append(callback)
        return real(delay, callback, *args)

    monkeypatch.setattr(loop, "call_later", call_later)
    return seen


async def test_a_bash_waiting_where_the_call_ended_is_kept_without_a_later_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Back to back the bash started during the command is waiting: deferring the keep cost each call a wake.
    if not warm._bash_reads_counted_bytes():
        pytest.skip("this bash has no `read -N` (before 4.1): no bash waits")
    later = deferred(monkeypatch)
    slot = warm.WarmSlot()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    try:
        slot.prepare_soon(tmp_path, env)  # nothing waits: a start, after the answer
        assert later == [slot._prepare] and slot._shell is None
        later.clear()
        slot._prepare(tmp_path, env)  # what that turn does: a bash now waits in tmp_path
        shell = slot._shell
        assert shell is not None
        slot.prepare_soon(tmp_path, dict(env))
        assert slot._prepare not in later, "kept now, not a turn later"
        assert slot._shell is shell and slot._ended_at is not None  # kept, and back-to-back timing counts from here
        (tmp_path / "sub").mkdir()
        slot.prepare_soon(tmp_path / "sub", env)  # the command moved the cwd: a new bash, after the answer
        assert slot._prepare in later and slot._shell is shell
    finally:
        slot.close()
    assert shell.proc.returncode is not None
