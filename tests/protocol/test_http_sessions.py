"""
HTTP sessions: every client gets its own CodeSession, on every protocol version a client may open with,
and a session that ends (DELETE) or idles out is closed with its jobs. Over real HTTP on loopback.
"""

from __future__ import annotations

import logging
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.cmdlines import processes_with
from tests.protocol.http_peer import (
    ACCEPT,
    HttpServer,
    Threaded,
    http_server,
    open_raw_session,
    raw_call,
    sse_json,
)

pytestmark = pytest.mark.anyio


async def wait_for(condition: object, seconds: float = 20) -> None:
    assert callable(condition)
    with anyio.fail_after(seconds):
        while not condition():  # noqa: ASYNC110 - bounded poll of /proc
            await anyio.sleep(0.05)


def marker() -> str:
    """A sleep duration no other process uses, so /proc tells whether this test's job still runs."""
    return f"7{uuid.uuid4().int % 10**6:06d}.5"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's one workspace, which its shared server serves."""
    return tmp_path_factory.mktemp("ws").resolve()


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[HttpServer]:
    """One server for the tests that need no flags of their own (a start costs about 2 CPU-seconds): what
    they check is that its clients and sessions are kept apart, which more clients on it only tests harder."""
    with http_server(root, env={"MCP_CODETOOLS_SESSION_IDLE_TIMEOUT_S": "1"}) as running:
        yield running


def text(result: object) -> str:
    return "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))


def first_text(result: Any) -> str:
    """The tool's own text, without the state_id note a 2026-07-28 HTTP result may add."""
    return str(getattr(result.content[0], "text", ""))


async def check_isolation(a: Threaded, b: Threaded, root: Path) -> str:
    """A reads a file, moves its cwd and starts a job; B must see none of it. Returns A's job marker."""
    f = root / "only-a-read-me.txt"
    f.write_text("one\n", encoding="utf-8")
    (root / "sub").mkdir(exist_ok=True)
    assert first_text(await a.call_tool("Read", {"file_path": str(f)})) == "1\tone"
    assert not (await a.call_tool("Bash", {"command": "cd sub"})).is_error
    mark = marker()
    started = await a.call_tool("Bash", {"command": f"sleep {mark}", "run_in_background": True})
    assert not started.is_error, text(started)
    job = started.meta["codetools/result"]["backgroundTaskId"] if started.meta else "bash_1"

    edit = await b.call_tool("Edit", {"file_path": str(f), "old_string": "one", "new_string": "two"})
    assert edit.is_error and "has not been read" in text(edit), "B edited a file only A had read"
    assert first_text(await b.call_tool("Bash", {"command": "pwd"})).strip() == str(root), "B inherited A's cwd"
    peek = await b.call_tool("BashOutput", {"bash_id": job})
    assert peek.is_error and mark not in text(peek), "B can see A's job"
    kill = await b.call_tool("KillShell", {"shell_id": job})
    assert kill.is_error, "B killed A's job"
    assert processes_with(mark), "A's job must still run"
    assert first_text(await a.call_tool("Bash", {"command": "pwd"})).strip() == str(root / "sub")
    return mark


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_clients_have_separate_sessions_and_leaving_closes_one(
    server: HttpServer, root: Path, mode: str
) -> None:
    """`auto` is the SDK's default `Client(url)`, which opens with the newest protocol (2026-07-28).

    At 2026-07-28 each client holds its own state_id; leaving deletes nothing, and A's state (with its
    job) ends when it has been idle for the timeout (1 s here). B's may or may not have idled out by its next
    call (A's went idle first): either way the answer must be right.
    """
    with anyio.fail_after(60):
        async with Client(server.url, mode=mode) as b_client:  # type: ignore[arg-type]
            b = Threaded(b_client)
            async with Client(server.url, mode=mode) as a_client:  # type: ignore[arg-type]
                assert a_client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
                mark = await check_isolation(Threaded(a_client), b, root)
            await wait_for(lambda: not processes_with(mark))
            after = await b.call_tool("Bash", {"command": "true"})
            if mode == "legacy":
                assert not after.is_error, "B's session goes on (its open stream keeps it)"
            elif after.is_error:  # B's state idled out too while A's job was stopped: said so, with what to do
                assert (after.meta or {}).get("codetools/result", {}).get("handleError") == "expired", text(after)
                assert "Omit state_id" in text(after)
            # else B's call came within a second of its last one (A idled out first): its state still holds


async def test_the_newest_protocol_over_http_is_served(server: HttpServer) -> None:
    """A 2026-07-28 `server/discover` over HTTP is answered (it was refused with -32022), with no session minted."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {**ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(server.url, headers=headers, json=body)
    result = sse_json(answer)["result"]
    assert "2026-07-28" in result["supportedVersions"] and "tools" in result["capabilities"]
    assert "mcp-session-id" not in answer.headers


async def test_the_default_client_speaks_the_newest_protocol(server: HttpServer) -> None:
    with anyio.fail_after(30):
        async with Client(server.url) as client:
            assert client.protocol_version == "2026-07-28"


async def test_a_vanished_client_idles_out_and_its_jobs_are_killed(server: HttpServer, root: Path) -> None:
    mark = marker()
    async with httpx2.AsyncClient(timeout=30) as http:
        key = await open_raw_session(http, server.url)
        started = await raw_call(http, server.url, key, "Bash", {"command": f"sleep {mark}", "run_in_background": True})
        assert "backgroundTaskId" in started.text, started.text
        assert processes_with(mark)
        # The client neither deletes the session nor keeps a stream open; after 1 s idle it is closed.
        await wait_for(lambda: not processes_with(mark))
        again = await raw_call(http, server.url, key, "Bash", {"command": "true"})
        assert again.status_code == 404, again.text


async def test_get_without_a_session_mints_no_session_id(server: HttpServer) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.get(server.url, headers={"accept": "text/event-stream"})
        deleted = await http.delete(server.url)
    assert answer.status_code == 400 and "mcp-session-id" not in answer.headers
    assert deleted.status_code == 400 and "mcp-session-id" not in deleted.headers


def test_the_server_says_where_it_listens(server: HttpServer) -> None:
    assert server.first_line.startswith("mcp-codetools: serving MCP over HTTP at http://127.0.0.1:")
    assert "no token required" in server.first_line


TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def with_token(root: Path) -> Iterator[HttpServer]:
    """One server that wants a bearer token and logs at INFO, for the tests of both."""
    with http_server(root, "--log-level", "INFO", env={"MCP_CODETOOLS_HTTP_TOKEN": TOKEN}) as running:
        yield running


async def test_refused_requests_are_logged_at_info(with_token: HttpServer) -> None:
    token, running = TOKEN, with_token
    assert "a bearer token is required" in running.first_line
    async with httpx2.AsyncClient(timeout=30) as http:
        unauthorized = await http.post(running.url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        bad_host = await http.post(
            running.url,
            headers={**ACCEPT, "authorization": f"Bearer {token}", "host": "evil.example"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        bad_origin = await http.post(
            running.url,
            headers={**ACCEPT, "authorization": f"Bearer {token}", "origin": "http://evil.example"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
    assert (unauthorized.status_code, bad_host.status_code, bad_origin.status_code) == (401, 421, 403)
    await wait_for(lambda: running.stderr_text().count("INFO mcp_codetools.protocol.http: refused") >= 3, 10)
    log = running.stderr_text()
    assert f"INFO {logging.getLogger('mcp_codetools.protocol.http').name}: refused POST /mcp" in log
    for status in (": 401", ": 421", ": 403"):
        assert status in log, log
    assert token not in log


async def test_a_bearer_client_keeps_its_own_session(with_token: HttpServer) -> None:
    token, running = TOKEN, with_token
    with anyio.fail_after(30):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
            Client(streamable_http_client(running.url, http_client=http), mode="legacy") as client,
        ):
            assert client.protocol_version == "2025-11-25"
            assert not (await client.call_tool("Bash", {"command": "true"})).is_error


async def test_sigterm_ends_a_long_call_the_jobs_and_the_server_promptly(root: Path) -> None:
    """A stop signal with a live session, a listening stream, a background job and a foreground command in
    flight: the command does not hold the stop for its whole timeout (120 s) but is cancelled and killed, the
    session's jobs end first, and the server ends. One server for both (a start costs about 2 CPU-seconds)."""
    job_mark, call_mark = marker(), marker()
    with http_server(root) as running:
        async with httpx2.AsyncClient(timeout=60) as http:
            key = await open_raw_session(http, running.url)
            job = {"command": f"sleep {job_mark}", "run_in_background": True}
            started = await raw_call(http, running.url, key, "Bash", job)
            assert "backgroundTaskId" in started.text, started.text
            headers = {"accept": "text/event-stream", "mcp-session-id": key, "mcp-protocol-version": "2025-11-25"}
            async with http.stream("GET", running.url, headers=headers) as listening:
                assert listening.status_code == 200
                async with anyio.create_task_group() as tg:
                    tg.start_soon(raw_call, http, running.url, key, "Bash", {"command": f"sleep {call_mark}"})
                    await wait_for(lambda: bool(processes_with(call_mark)))
                    running.proc.terminate()
                    with anyio.fail_after(30):
                        code = await anyio.to_thread.run_sync(running.proc.wait, 30)
                    tg.cancel_scope.cancel()
        # uvicorn shuts down, then raises the signal it caught again, so the exit reads as SIGTERM's.
        assert code == -signal.SIGTERM, running.stderr_text()[-2000:]
        await wait_for(lambda: not processes_with(job_mark) and not processes_with(call_mark), seconds=5)
