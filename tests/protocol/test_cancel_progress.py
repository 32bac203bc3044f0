"""Cancellation and progress through a real MCP client: a cancelled call frees its slot, progress keeps coming."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from mcp_codetools import pipeline as pipeline_module
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from tests.gates import Gates

pytestmark = pytest.mark.anyio


def make_app(root: Path, gates: Gates) -> CodeToolsServer:
    return CodeToolsServer(Settings(roots=(root,)), [*default_tools(), gates.tool("Wait")])


async def wait_for(predicate: Callable[[], bool]) -> None:
    with anyio.fail_after(5):
        while not predicate():
            await anyio.lowlevel.checkpoint()


async def test_a_timed_out_call_is_cancelled_on_the_server_and_frees_the_slot(root: Path, gates: Gates) -> None:
    (root / "f.txt").write_text("x\n", encoding="utf-8")
    async with Client(make_app(root, gates).server, mode="legacy") as client:
        with pytest.raises(MCPError):
            await client.call_tool("Wait", {"key": "stuck"}, read_timeout_seconds=0.2)
        await wait_for(lambda: "cleanup stuck" in gates.log)
        with anyio.fail_after(5):
            result = await client.call_tool("Read", {"file_path": str(root / "f.txt")})
    assert not result.is_error
    assert gates.log == ["start stuck", "cleanup stuck"]


async def test_cancelling_a_queued_call_lets_later_calls_run(root: Path, gates: Gates) -> None:
    results: dict[str, Any] = {}
    app = make_app(root, gates)
    async with Client(app.server, mode="legacy") as client:

        def queue() -> list[str]:
            return [label for session in app.live_sessions() for _, label, _, _ in session.dispatcher.snapshot()]

        async def call(key: str, timeout: float | None = None) -> None:
            try:
                results[key] = await client.call_tool("Wait", {"key": key}, read_timeout_seconds=timeout)
            except MCPError as exc:
                results[key] = exc

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "first")
                await wait_for(lambda: "start first" in gates.log)
                tg.start_soon(call, "queued", 0.2)
                await wait_for(lambda: len(queue()) == 2)
                await wait_for(lambda: "queued" in results)
                await wait_for(lambda: len(queue()) == 1)  # the server has dropped the cancelled call
                tg.start_soon(call, "last")
                await anyio.lowlevel.checkpoint()
                gates.open("first")
                await wait_for(lambda: "start last" in gates.log)
                gates.open("last")
    assert isinstance(results["queued"], MCPError)
    assert "start queued" not in gates.log
    assert results["last"].content[0].text == "done last"


async def test_progress_notifications_arrive_for_a_long_call(
    root: Path, gates: Gates, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline_module, "PROGRESS_INTERVAL_S", 0.01)
    seen: list[tuple[float, str | None]] = []
    enough = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))
        if len(seen) >= 2:
            enough.set()

    async with Client(make_app(root, gates).server, mode="legacy") as client:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: client.call_tool("Wait", {"key": "slow"}, progress_callback=on_progress))
                await enough.wait()
                gates.open("slow")
    assert seen[0] == (1.0, "Wait: running")
