"""A Bash command cannot read the server's secrets through /proc: not its environment, memory or descriptors.

The real server runs over stdio with a token and an env-excluded variable in its environment, with no
sandbox and with each backend (one that does not work here is skipped). The command knows the server's
pid (its parent, except inside bwrap's PID namespace) and tries `/proc/<server>/environ`, every
`/proc/*/environ`, `/proc/<server>/fd/*` and `/proc/<server>/mem`.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_codetools.settings import SandboxSettings
from mcp_codetools.shell.sandbox import SandboxUnavailable, probe
from tests import facilities
from tests.protocol.http_peer import http_server
from tests.protocol.stdio_raw import RawServer, text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's"),
]

WAIT_S = 60


@pytest.fixture(params=["none", "bwrap", "landlock"])
def sandbox_flags(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "none":
        return []
    try:
        probe(SandboxSettings(enabled=True, backend=request.param))
    except SandboxUnavailable as exc:
        facilities.missing(request.param, f"it does not work on this machine: {exc}")
    return ["--sandbox", "--sandbox-backend", str(request.param)]


async def run_bash(server: RawServer, command: str) -> str:
    request = server.call("Bash", {"command": command})
    await server.send(request)
    return text(await server.response_to(request["id"]))


async def test_a_command_reads_no_secret_of_the_server(root: Path, sandbox_flags: list[str]) -> None:
    token, value = f"tok-{secrets.token_hex(8)}", f"val-{secrets.token_hex(8)}"
    excluded = f"EXCLUDED_{secrets.token_hex(3).upper()}"
    env = {"MCP_CODETOOLS_HTTP_TOKEN": token, excluded: value, "MCP_CODETOOLS_BASH_ENV_EXCLUDE": excluded}
    env["MCP_CODETOOLS_DEBUGGABLE"] = ""  # the production setting, whatever the test run's environment says
    server = await RawServer.start(root, "--permission-mode", "bypassPermissions", *sandbox_flags, env=env)
    pid = server.proc.pid
    try:
        with anyio.fail_after(WAIT_S):
            await server.initialize()
            parent = await run_bash(server, "tr '\\0' '\\n' < /proc/$PPID/environ; echo parent-read")
            scan = await run_bash(
                server, "cat /proc/[0-9]*/environ /proc/[0-9]*/task/[0-9]*/environ 2>/dev/null; echo scanned"
            )
            fds = await run_bash(server, f'for f in /proc/{pid}/fd/*; do readlink "$f" && echo "LINK $f"; done 2>&1')
            memory = await run_bash(server, f"exec 3< /proc/{pid}/mem && echo MEM-OPENED; echo tried 2>&1")
    finally:
        await server.close()
    assert "parent-read" in parent and "scanned" in scan, (parent, scan)
    for output in (parent, scan, fds, memory):
        assert token not in output and value not in output
    assert "LINK" not in fds, f"the server's descriptors were reachable:\n{fds}"
    assert "MEM-OPENED" not in memory and "tried" in memory, memory


async def test_over_http_the_token_still_works_and_no_command_sees_it(root: Path) -> None:
    """The token is erased from what /proc shows, not from the server: its own copy still checks requests."""
    token = f"tok-{secrets.token_hex(8)}"
    command = "tr '\\0' '\\n' < /proc/$PPID/environ; echo ${MCP_CODETOOLS_HTTP_TOKEN:-unset}"
    with http_server(root, "--permission-mode", "bypassPermissions", env={"MCP_CODETOOLS_HTTP_TOKEN": token}) as server:
        with anyio.fail_after(WAIT_S):
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
                Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client,
            ):
                result = await client.call_tool("Bash", {"command": command})
    shown = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error and "unset" in shown and token not in shown, shown
