"""The 2026-07-28 protocol beside the handshake era: stdio in either order, HTTP through handles, one listing.

Real processes throughout (stdio and HTTP on loopback), driven raw or through the SDK's client.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from tests.protocol.http_peer import ACCEPT, STATE_META, HttpServer, Threaded, http_server, sse_json
from tests.protocol.stdio_raw import RawServer, server_command

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HANDLE = re.compile(r"^bash_[0-9a-f]{32}$")


def first_text(result: Any) -> str:
    return str(result.content[0].text)


def details(result: Any) -> dict[str, Any]:
    meta: dict[str, Any] = result.meta["codetools/result"]
    return meta


async def ask(server: RawServer, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    request = server.request(method, params)
    await server.send(request)
    return await server.response_to(request["id"])


def modern_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "_meta": ENVELOPE}


# stdio: both eras on one process, in either order


async def test_stdio_initialize_first_then_discover_with_or_without_an_envelope(root: Path) -> None:
    """A half envelope, or one of a version not served, is told what is missing (on this process: a start
    costs ~1.5 CPU-s, and an answered handshake must not hide it)."""
    server = await RawServer.start(root)
    try:
        with anyio.fail_after(30):
            await server.initialize()
            enveloped = await ask(server, "server/discover", {"_meta": ENVELOPE})
            assert MODERN in enveloped["result"]["supportedVersions"], enveloped  # was -32600
            bare = await ask(server, "server/discover")
            assert bare["result"]["supportedVersions"] == enveloped["result"]["supportedVersions"], bare  # was -32601
            listed = await ask(server, "tools/list")
            assert "resultType" not in listed["result"], "the handshake era's answers stay in its own shape"
            modern = await ask(server, "tools/list", {"_meta": ENVELOPE})
            assert modern["result"]["resultType"] == "complete"
            assert modern["result"]["tools"] == listed["result"]["tools"]
            half = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}
            answer = await ask(server, "tools/list", half)
            assert answer["error"]["code"] == -32602, answer
            unsupported = await ask(
                server, "tools/list", {"_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}
            )
            assert unsupported["error"]["code"] == -32022 and MODERN in unsupported["error"]["data"]["supported"]
    finally:
        assert await server.close() == 0


# Stable listing, on processes that serve both eras


async def _discover_first_then_initialize(root: Path) -> tuple[bytes, bytes]:
    """A dual-era client probes with server/discover, a handshake client may still follow: both are served.
    Returns the lines of the listing asked before any other request (2026-07-28) and after initialize."""
    f = root / "a.txt"
    f.write_text("value = 1\n", encoding="utf-8")
    server = await RawServer.start(root)
    try:
        assert server.proc.stdout is not None
        with anyio.fail_after(30):
            await server.send(server.request("tools/list", {"_meta": ENVELOPE}))
            modern = await server.proc.stdout.readline()
            discovered = (await ask(server, "server/discover", {"_meta": ENVELOPE}))["result"]
            assert MODERN in discovered["supportedVersions"]
            assert discovered["instructions"].startswith("Code tools") and "tools" in discovered["capabilities"]
            read = await ask(server, "tools/call", modern_call("Read", {"file_path": str(f)}))
            assert read["result"]["content"][0]["text"] == "1\tvalue = 1"
            init = await server.initialize()
            assert init["result"]["protocolVersion"] == "2025-11-25", init  # was -32022 once the probe had run
            await server.send(server.request("tools/list"))
            legacy = await server.proc.stdout.readline()
            edit = await ask(
                server,
                "tools/call",
                {"name": "Edit", "arguments": {"file_path": str(f), "old_string": "1", "new_string": "2"}},
            )
            assert not edit["result"].get("isError"), edit  # one process, one client: the Read counts
            again = await ask(server, "tools/call", modern_call("Read", {"file_path": str(f)}))
            assert again["result"]["content"][0]["text"] == "1\tvalue = 2"
    finally:
        assert await server.close() == 0
    return modern, legacy


async def test_stdio_discover_first_then_initialize_and_the_listing_is_byte_identical_across_processes(
    root: Path, tmp_path: Path
) -> None:
    """SEP-2567: a listing never varies per connection; here not per process or run (bytes), or era (content).
    The same dual-era conversation on two processes with different roots (a start costs ~1.5 CPU-s)."""
    other_root = tmp_path / "elsewhere"
    other_root.mkdir()
    first = await _discover_first_then_initialize(root)
    second = await _discover_first_then_initialize(other_root.resolve())
    assert first == second, "two processes listed different bytes"
    modern, legacy = (json.loads(line) for line in first)
    assert modern["result"]["tools"] == legacy["result"]["tools"], (
        "one listing for both eras (the SDK orders keys per era)"
    )
    names = [tool["name"] for tool in modern["result"]["tools"]]
    assert names[:3] == ["Read", "Edit", "Write"] and len(set(names)) == len(names)
    takes_state = {t["name"] for t in modern["result"]["tools"] if "state_id" in t["inputSchema"]["properties"]}
    assert takes_state == {tool.name for tool in default_tools() if tool.keeps_state}, "as each tool declares"


# HTTP at 2026-07-28: state through handles


@pytest.fixture(scope="module")
def http_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace of the module's shared HTTP server."""
    return tmp_path_factory.mktemp("http-ws").resolve()


@pytest.fixture(scope="module")
def http(http_root: Path) -> Iterator[HttpServer]:
    """One HTTP server for the tests that need no flags of their own (a start costs about 2 CPU-seconds):
    each of their clients opens a state of its own, as clients of one server do."""
    with http_server(http_root) as running:
        yield running


async def test_http_read_before_edit_without_a_session(http: HttpServer, http_root: Path) -> None:
    f = http_root / "a.txt"
    f.write_text("one\n", encoding="utf-8")
    with anyio.fail_after(60):
        async with Client(http.url) as client:
            assert client.protocol_version == MODERN
            blind = await client.call_tool("Edit", {"file_path": str(f), "old_string": "one", "new_string": "two"})
            assert blind.is_error and details(blind)["errorCode"] == "file_not_read"
            assert "passed no state_id" in blind.content[-1].text  # type: ignore[union-attr]
            assert STATE_META not in (blind.meta or {}), "a call that kept nothing hands out no state"
            read = await client.call_tool("Read", {"file_path": str(f)})
            state = read.meta[STATE_META]  # type: ignore[index]
            assert re.fullmatch(r"st_[0-9a-f]{32}", state) and state in read.content[-1].text  # type: ignore[union-attr]
            edit = await client.call_tool(
                "Edit", {"file_path": str(f), "old_string": "one", "new_string": "two", "state_id": state}
            )
            assert not edit.is_error, first_text(edit)
            assert STATE_META not in (edit.meta or {}), "a call in a state is not given another"
            f.write_text("changed behind its back\n", encoding="utf-8")
            stale = await client.call_tool(
                "Edit", {"file_path": str(f), "old_string": "changed", "new_string": "x", "state_id": state}
            )
            assert stale.is_error and details(stale)["errorCode"] == "file_changed_since_read"
            fresh = await client.call_tool("Write", {"file_path": str(http_root / "new.txt"), "content": "hi\n"})
            assert not fresh.is_error, "creating a file needs no earlier Read"
    assert f.read_text(encoding="utf-8") == "changed behind its back\n"


async def test_http_job_ids_are_handles_of_their_own_state(http: HttpServer, http_root: Path) -> None:
    with anyio.fail_after(60):
        async with Client(http.url) as a_client, Client(http.url) as b_client:
            a, b = Threaded(a_client), Threaded(b_client)
            started = await a.call_tool("Bash", {"command": "echo job-said-hello; sleep 30", "run_in_background": True})
            job = details(started)["backgroundTaskId"]
            assert HANDLE.fullmatch(job), job
            assert "bash_id" in first_text(started)
            (http_root / "b.txt").write_text("b\n", encoding="utf-8")
            await b.call_tool("Read", {"file_path": str(http_root / "b.txt")})  # B has a state of its own
            assert b.state_id is not None and b.state_id != a.state_id
            for name, arg in (("BashOutput", "bash_id"), ("KillShell", "shell_id")):
                for who in (b, b_client):  # another client's state, and no state at all
                    refused = await who.call_tool(name, {arg: job})
                    assert refused.is_error and details(refused)["handleError"] == "foreign", first_text(refused)
                    assert "job-said-hello" not in first_text(refused)
            unknown = await a.call_tool("BashOutput", {"bash_id": "bash_" + "0" * 32})
            assert unknown.is_error and "No shell found" in first_text(unknown)
            own = await a.call_tool("BashOutput", {"bash_id": job, "wait_s": 5})
            assert "job-said-hello" in first_text(own)
            assert not (await a.call_tool("KillShell", {"shell_id": job})).is_error
            forged = await a_client.call_tool("BashOutput", {"bash_id": job, "state_id": "st_" + "f" * 32})
            assert forged.is_error and details(forged)["handleError"] == "unknown"


async def test_http_lifetimes_are_stated_in_the_listing(http: HttpServer) -> None:
    async with Client(http.url) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("Read", "Bash"):  # Bash makes the jobs
        assert "jobs end after 30 min unused" in tools[name].input_schema["properties"]["state_id"]["description"]


async def test_http_replica_handles_are_mirrored_into_a_header_and_states_are_capped(root: Path) -> None:
    """With `--replica`, ids name the replica; the SDK client mirrors state_id into `Mcp-Param-State-Id`
    (its `x-mcp-header`), which a balancer routes by; past `[http] max_states` a new state is refused.

    Grep and Glob keep no state, so their schemas declare no state_id and clients route them by nothing: a
    state_id sent anyway named another replica's state and got a false "replica r9 is down", or named this one's
    and was honoured (its working directory). It is ignored: the search runs, from the first root. (One server
    for both: a start costs about 2 CPU-seconds.)"""
    f = root / "a.txt"
    f.write_text("one\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "top.txt").write_text("needle\n", encoding="utf-8")
    (root / "sub" / "low.txt").write_text("needle\n", encoding="utf-8")
    sent: list[str | None] = []

    async def watch(request: httpx2.Request) -> None:
        if b'"tools/call"' in request.content:
            sent.append(request.headers.get("mcp-param-state-id"))

    from mcp.client.streamable_http import streamable_http_client

    env = {"MCP_CODETOOLS_HTTP_MAX_STATES": "1"}
    with http_server(root, "--replica", "r7", env=env) as running, anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(timeout=30, event_hooks={"request": [watch]}) as http,
            Client(streamable_http_client(running.url, http_client=http)) as client,
            Client(running.url) as other,
        ):
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert listed["Edit"].input_schema["properties"]["state_id"]["x-mcp-header"] == "State-Id"
            a = Threaded(client)
            await a.call_tool("Read", {"file_path": str(f)})
            assert a.state_id is not None and re.fullmatch(r"st_r7_[0-9a-f]{32}", a.state_id), a.state_id
            edit = await a.call_tool("Edit", {"file_path": str(f), "old_string": "one", "new_string": "two"})
            assert not edit.is_error, first_text(edit)
            assert sent == [None, a.state_id], "the handle rides in the header the balancer reads"

            full = await other.call_tool("Read", {"file_path": str(f)})
            assert full.is_error and details(full)["handleError"] == "at_capacity", first_text(full)
            assert "pass it: your state is still there" in first_text(full)
            searched = await other.call_tool("Grep", {"pattern": "two", "path": str(root)})
            assert not searched.is_error and "a.txt" in first_text(searched), "a search keeps nothing: not capped"
            elsewhere = await other.call_tool("Bash", {"command": "pwd", "state_id": "st_r9_" + "0" * 32})
            assert elsewhere.is_error and details(elsewhere)["handleError"] == "wrong_replica"
            assert "made by replica 'r9'" in first_text(elsewhere)

            await a.call_tool("Bash", {"command": "cd sub"})
            for name, arguments in (("Grep", {"pattern": "needle"}), ("Glob", {"pattern": "**/*.txt"})):
                assert "state_id" not in listed[name].input_schema["properties"]
                for state in (a.state_id, "st_r9_" + "0" * 32):
                    found = await client.call_tool(name, {**arguments, "state_id": state})
                    assert not found.is_error, (name, state, first_text(found))
                    assert "top.txt" in first_text(found), f"{name} searched the state's cwd: {first_text(found)}"
            pwd = await a.call_tool("Bash", {"command": "pwd"})
            assert first_text(pwd).strip() == str(root / "sub"), "the state itself is kept"
    assert f.read_text(encoding="utf-8") == "two\n"


# Each era over each transport, through the SDK client


@asynccontextmanager
async def connected(transport: str, mode: str, root: Path, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    if transport == "memory":
        app = CodeToolsServer(Settings(roots=(root,)))
        async with Client(app.server, mode=mode) as client:  # type: ignore[arg-type]
            yield client
    elif transport == "stdio":
        command, *args = server_command()
        params = StdioServerParameters(command=command, args=[*args, "--root", str(root)], cwd=str(root))
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            yield client
    else:
        running: HttpServer = request.getfixturevalue("http")  # the module's: a client has a state of its own
        async with Client(running.url, mode=mode) as client:  # type: ignore[arg-type]
            yield client


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_era_over_each_transport(
    transport: str, mode: str, root: Path, request: pytest.FixtureRequest
) -> None:
    """At 2026-07-28 every request gets a fresh SDK connection; the session must still span the calls (stdio:
    the process's one session; HTTP: the state its handles name). Over HTTP the root is the module server's,
    which the other mode's test shares: the names are the mode's own."""
    if transport == "http":
        root = request.getfixturevalue("http_root")
    f = root / f"app-{mode}.ts"
    f.write_text("export const value = 1\n", encoding="utf-8")
    (root / f"sub-{mode}").mkdir()
    with anyio.fail_after(60):
        async with connected(transport, mode, root, request) as raw:
            assert raw.protocol_version == ("2025-11-25" if mode == "legacy" else MODERN)
            client = Threaded(raw)
            assert first_text(await client.call_tool("Read", {"file_path": str(f)})) == "1\texport const value = 1"
            edit = await client.call_tool(
                "Edit", {"file_path": f.name, "old_string": "value = 1", "new_string": "value = 2"}
            )
            assert not edit.is_error, first_text(edit)
            await client.call_tool("Bash", {"command": f"cd sub-{mode}"})
            pwd = first_text(await client.call_tool("Bash", {"command": "pwd"})).strip()
            assert pwd == str(root / f"sub-{mode}")
            started = await client.call_tool("Bash", {"command": "echo from-job", "run_in_background": True})
            job = details(started)["backgroundTaskId"]
            output = await client.call_tool("BashOutput", {"bash_id": job, "wait_s": 10})
            assert "from-job" in first_text(output)
            history = await client.call_tool("FileHistory", {"action": "list", "file_path": f"../{f.name}"})
            assert not history.is_error and "1" in first_text(history)
    assert f.read_text(encoding="utf-8") == "export const value = 2\n"


async def test_http_routing_headers_must_agree_with_the_body(http: HttpServer, http_root: Path) -> None:
    """2026-07-28 HTTP: `Mcp-Method` and `Mcp-Name` mirror the body, so a proxy can route on them; a mismatch is
    refused (-32020) before any tool runs."""
    (http_root / "a.txt").write_text("one\n", encoding="utf-8")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "Read", "arguments": {"file_path": str(http_root / "a.txt")}, "_meta": ENVELOPE},
    }
    base = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call"}
    async with httpx2.AsyncClient(timeout=30) as raw:
        agreed = await raw.post(http.url, headers={**base, "mcp-name": "Read"}, json=body)
        lying = await raw.post(http.url, headers={**base, "mcp-name": "Bash"}, json=body)
    assert sse_json(agreed)["result"]["content"][0]["text"] == "1\tone"
    assert sse_json(lying)["error"]["code"] == -32020, lying.text
