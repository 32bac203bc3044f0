"""Over real stdio: a cancelled Bash command dies with its process group, and ids in flight stay unique.

The cancel and the id tests share one server (a start costs about 2 CPU-seconds): each cancels what it
started, and the next one's first answer must be its own.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from tests.cmdlines import processes_with
from tests.protocol.stdio_raw import RawServer, initialized, text

pytestmark = pytest.mark.anyio


async def wait_until(predicate: Callable[[], object], limit: float = 10) -> None:
    """Poll state of another process (/proc), which no event can signal; bounded by `limit`."""
    with anyio.fail_after(limit):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.02)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-wide, so the module's server lives on one event loop


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ws").resolve()


@pytest.fixture(scope="module")
async def server(root: Path) -> AsyncIterator[RawServer]:
    async with initialized(root) as raw:
        yield raw


async def test_cancelled_command_is_killed_and_later_calls_run(server: RawServer, root: Path) -> None:
    marker = f"{os.getpid()}{id(root)}cancel"
    with anyio.fail_after(30):
        long = server.call("Bash", {"command": f"sleep 30 # {marker}"})
        await server.send(long)
        await wait_until(lambda: processes_with(marker, live_only=False))
        await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": long["id"]}})
        await wait_until(lambda: not processes_with(marker, live_only=False))
        (root / "after.txt").write_text("after\n", encoding="utf-8")
        read = server.call("Read", {"file_path": str(root / "after.txt")})
        await server.send(read)
        answer = await server.receive()
        assert answer["id"] == read["id"], "the cancelled request must get no response"
        assert text(answer) == "1\tafter"


async def test_a_request_id_reused_while_in_flight_is_refused(server: RawServer, root: Path) -> None:
    marker = f"{os.getpid()}{id(root)}dup"
    with anyio.fail_after(30):
        first = server.call("Bash", {"command": f"sleep 30 # {marker}"})
        await server.send(first)
        await wait_until(lambda: processes_with(marker, live_only=False))
        duplicate = dict(first)
        duplicate["params"] = {"name": "Read", "arguments": {"file_path": "x"}}
        await server.send(duplicate)
        refusal = await server.receive()
        assert refusal["id"] == first["id"] and refusal["error"]["code"] == -32600
        await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": first["id"]}})
        await wait_until(lambda: not processes_with(marker, live_only=False))


async def test_closing_stdin_kills_running_commands_and_background_jobs(root: Path) -> None:
    marker = f"{os.getpid()}{id(root)}eof"
    server = await RawServer.start(root)
    try:
        with anyio.fail_after(30):
            await server.initialize()
            job = server.call("Bash", {"command": f"sleep 31; echo {marker}job", "run_in_background": True})
            await server.send(job)
            started = await server.response_to(job["id"])
            assert not started["result"].get("isError"), started
            await server.send(server.call("Bash", {"command": f"sleep 30; echo {marker}fg"}))
            await wait_until(
                lambda: (
                    processes_with(marker + "job", live_only=False) and processes_with(marker + "fg", live_only=False)
                )
            )
            assert await server.close() == 0
            await wait_until(lambda: not processes_with(marker, live_only=False))
    finally:
        await server.close()
