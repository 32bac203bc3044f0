"""Streamable HTTP: a session per client connection, and the bearer-token gate."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.protocol.stdio_raw import server_command

pytestmark = pytest.mark.anyio

TOKEN = "test-token-123"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("http-ws").resolve()


@pytest.fixture(scope="module")
def http_server(http_root: Path) -> Iterator[str]:
    """One server with a token for the module (a start costs ~2 CPU-s): each client has a session of its own."""
    port = free_port()
    proc = subprocess.Popen(
        [*server_command(), "--transport", "http", "--port", str(port), "--root", str(http_root)],
        env={**os.environ, "MCP_CODETOOLS_HTTP_TOKEN": TOKEN},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        with anyio.from_thread.start_blocking_portal() as portal:
            portal.call(wait_listening, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()


async def wait_listening(port: int) -> None:
    with anyio.fail_after(30):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def client_for(url: str, token: str = TOKEN) -> AsyncIterator[Client]:
    """A session over its own HTTP client, closed with it (the SDK leaves a client it was given open)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


async def test_each_http_session_has_its_own_read_ledger(http_server: str, http_root: Path) -> None:
    f = http_root / "h.txt"
    f.write_text("one\n", encoding="utf-8")
    with anyio.fail_after(30):
        async with client_for(http_server) as first, client_for(http_server) as second:
            assert (await first.call_tool("Read", {"file_path": str(f)})).content[0].text == "1\tone"  # type: ignore[union-attr]
            refused = await second.call_tool("Edit", {"file_path": str(f), "old_string": "one", "new_string": "two"})
            assert refused.is_error, "a read in another session must not count"
            done = await first.call_tool("Edit", {"file_path": str(f), "old_string": "one", "new_string": "two"})
            assert not done.is_error
    assert f.read_text(encoding="utf-8") == "two\n"


async def test_requests_without_the_token_are_refused_saying_how_to_send_it(http_server: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        wrong = await http.post(http_server, json={}, headers={"Authorization": "Bearer nope"})
    assert response.status_code == wrong.status_code == 401
    for refused in (response, wrong):
        assert "Authorization: Bearer <token>" in refused.text and "MCP_CODETOOLS_HTTP_TOKEN" in refused.text
    assert "needs a bearer token" in response.text and "does not match" in wrong.text


def test_non_loopback_without_a_token_refuses_to_start(root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MCP_CODETOOLS_HTTP_TOKEN"}
    done = subprocess.run(
        [*server_command(), "--transport", "http", "--host", "0.0.0.0", "--root", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2 and "MCP_CODETOOLS_HTTP_TOKEN" in done.stderr
