"""A session the server does not hold is answered "lost: start a new session", and /healthz serves a balancer.

What a client behind a load balancer meets when its replica goes away: the next replica (or the restarted
server) has never heard of its `Mcp-Session-Id`. Over real HTTP on loopback, with the SDK's client.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, MCPError

from mcp_codetools.protocol.http import SESSION_LOST
from tests.protocol.http_peer import ACCEPT, HttpServer, http_server, open_raw_session, raw_call

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


TOKEN = "s3cret"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One server for the tests that only ask it about sessions and health (a start costs ~1.5 CPU-s); with a
    token, as behind a balancer, so /healthz is shown to answer without it."""
    with http_server(tmp_path_factory.mktemp("ws").resolve(), env={"MCP_CODETOOLS_HTTP_TOKEN": TOKEN}) as running:
        yield running


async def test_an_unknown_session_id_is_answered_session_lost(server: HttpServer) -> None:
    async with httpx2.AsyncClient(timeout=30, headers=BEARER) as http:
        answer = await raw_call(http, server.url, "0" * 32, "Bash", {"command": "true"})
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["message"] == SESSION_LOST
    assert "start a new session" in error["message"].lower()


async def test_a_deleted_session_is_answered_session_lost(server: HttpServer) -> None:
    async with httpx2.AsyncClient(timeout=30, headers=BEARER) as http:
        key = await open_raw_session(http, server.url)
        deleted = await http.delete(server.url, headers={**ACCEPT, "mcp-session-id": key})
        assert deleted.status_code < 400, deleted.text
        again = await raw_call(http, server.url, key, "Bash", {"command": "true"})
    assert again.status_code == 404
    assert again.json()["error"]["message"] == SESSION_LOST


async def test_the_sdk_client_of_a_restarted_server_is_told_to_start_a_new_session(root: Path) -> None:
    port = free_port()
    (root / "f.txt").write_text("one\n", encoding="utf-8")
    with ExitStack() as servers:  # the second server outlives the client, which deletes its session on exit
        first = servers.enter_context(http_server(root, "--port", str(port)))
        with anyio.fail_after(60):
            async with Client(first.url, mode="legacy") as client:  # 2026-07-28 has no session to lose
                assert not (await client.call_tool("Read", {"file_path": str(root / "f.txt")})).is_error
                first.proc.kill()
                first.proc.wait(timeout=20)
                servers.enter_context(http_server(root, "--port", str(port)))
                with pytest.raises(MCPError) as lost:
                    await client.call_tool("Read", {"file_path": str(root / "f.txt")})
    assert str(lost.value) == SESSION_LOST, str(lost.value)


async def test_healthz_answers_without_the_token(server: HttpServer) -> None:
    base = server.url.removesuffix("/mcp")
    async with httpx2.AsyncClient(timeout=30) as http:
        health = await http.get(base + "/healthz")
        mcp = await http.post(server.url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert (health.status_code, health.text) == (200, "ok\n")
    assert mcp.status_code == 401
