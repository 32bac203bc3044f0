"""The HTTP sessions open at once are capped (`[http] max_sessions`): the client past the cap is told why and
what to do, and a deleted or idle session frees its slot. Over real HTTP on loopback."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest

from tests.protocol.http_peer import ACCEPT, INIT_PARAMS, http_server, open_raw_session, raw_call

pytestmark = pytest.mark.anyio

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}


async def test_the_client_past_the_cap_is_told_the_cap_and_what_to_do_and_a_deleted_session_frees_a_slot(
    root: Path,
) -> None:
    with http_server(root, "--log-level", "INFO", env={"MCP_CODETOOLS_HTTP_MAX_SESSIONS": "2"}) as running:
        async with httpx2.AsyncClient(timeout=30) as http:
            with anyio.fail_after(60):
                first = await open_raw_session(http, running.url)
                await open_raw_session(http, running.url)
                refused = await http.post(running.url, headers=ACCEPT, json=INITIALIZE)
                assert refused.status_code == 503, refused.text
                assert "mcp-session-id" not in refused.headers
                assert refused.headers["content-type"] == "application/json"
                error = refused.json()["error"]
                assert error["code"] == -32000
                message = error["message"]
                for fragment in (
                    "this server allows 2 at once",
                    "[http] max_sessions",
                    "MCP_CODETOOLS_HTTP_MAX_SESSIONS",
                    "HTTP DELETE with their Mcp-Session-Id",
                    "after 1800 s without a request",
                ):
                    assert fragment in message, message
                # The sessions already open go on.
                assert "result" in (await raw_call(http, running.url, first, "Bash", {"command": "true"})).text
                headers = {"mcp-session-id": first, "mcp-protocol-version": "2025-11-25"}
                assert (await http.delete(running.url, headers=headers)).status_code == 200
                again = await http.post(running.url, headers=ACCEPT, json=INITIALIZE)
                assert again.status_code == 200, again.text
                assert "mcp-session-id" in again.headers
    assert "refused POST /mcp" in running.stderr_text() and "503 (at the session cap)" in running.stderr_text()


async def test_a_session_that_idles_out_frees_its_slot(root: Path) -> None:
    env = {"MCP_CODETOOLS_HTTP_MAX_SESSIONS": "1", "MCP_CODETOOLS_SESSION_IDLE_TIMEOUT_S": "1"}
    with http_server(root, env=env) as running:
        async with httpx2.AsyncClient(timeout=30) as http:
            with anyio.fail_after(30):
                await open_raw_session(http, running.url)  # then vanishes: no stream, no DELETE
                refused = await http.post(running.url, headers=ACCEPT, json=INITIALIZE)
                assert refused.status_code == 503 and "allows 1 at once" in refused.text, refused.text
                # Bounded by fail_after: the idle session closes after 1 s, and nothing signals it from outside.
                while (answer := await http.post(running.url, headers=ACCEPT, json=INITIALIZE)).status_code == 503:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
                assert answer.status_code == 200 and "mcp-session-id" in answer.headers, answer.text


def test_the_cap_is_a_setting_with_a_sensible_default(tmp_path: Path) -> None:
    from mcp_codetools.settings import ConfigError, Settings, load_settings

    assert Settings().http_max_sessions == 256
    config = tmp_path / "c.toml"
    config.write_text("[http]\nmax_sessions = 0\n")
    with pytest.raises(ConfigError, match=r"\[http\] max_sessions"):
        load_settings([str(tmp_path)], config_file=config)
