"""Malformed input over real stdio is answered as JSON-RPC requires, and the server stays responsive.

One server for the module (a start costs about 2 CPU-seconds): every test ends by checking that it still
answers, and an answer a test did not take (to a notification, say) would be the next test's first line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.protocol.stdio_raw import RawServer, initialized, text

pytestmark = pytest.mark.anyio


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


async def still_answers(server: RawServer, root: Path) -> None:
    (root / "alive.txt").write_text("alive\n", encoding="utf-8")
    request = server.call("Read", {"file_path": str(root / "alive.txt")})
    await server.send(request)
    assert text(await server.response_to(request["id"])) == "1\talive"


async def test_a_line_that_is_not_json_gets_a_parse_error(server: RawServer, root: Path) -> None:
    with anyio.fail_after(10):
        await server.send("{this is not json")
        answer = await server.receive()
        assert answer["id"] is None and answer["error"]["code"] == -32700
        await still_answers(server, root)


@pytest.mark.parametrize(
    ("line", "expected_id"),
    [('{"foo": 1}', None), ("[1, 2, 3]", None), ('{"jsonrpc": "2.0", "id": 7, "method": 5}', 7), ("42", None)],
)
async def test_json_that_is_not_json_rpc_gets_invalid_request(
    server: RawServer, root: Path, line: str, expected_id: int | None
) -> None:
    with anyio.fail_after(10):
        await server.send(line)
        answer = await server.receive()
        assert answer["error"]["code"] == -32600 and answer["id"] == expected_id
        await still_answers(server, root)


async def test_unknown_method_and_missing_arguments(server: RawServer, root: Path) -> None:
    with anyio.fail_after(10):
        unknown = server.request("tools/frobnicate", {})
        await server.send(unknown)
        assert (await server.response_to(unknown["id"]))["error"]["code"] == -32601
        bare = server.call("Read", None)
        await server.send(bare)
        answer = await server.response_to(bare["id"])
        assert answer["result"]["isError"] is True
        assert "`file_path` is missing" in text(answer)
        await still_answers(server, root)


async def test_an_invalid_notification_gets_no_answer(server: RawServer, root: Path) -> None:
    with anyio.fail_after(10):
        await server.send('{"jsonrpc": "2.0", "method": 12}')
        ping = server.request("ping")
        await server.send(ping)
        assert (await server.receive())["id"] == ping["id"], "the notification was answered"
        await still_answers(server, root)
