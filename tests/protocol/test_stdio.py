"""The installed server as a real process over stdio: the SDK client, and raw pipelined JSON-RPC."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.protocol.stdio_raw import RawServer, server_command, text

pytestmark = pytest.mark.anyio


async def test_sdk_client_over_real_stdio_runs_the_seed_scenario(root: Path) -> None:
    app = root / "app.ts"
    app.write_text("export const value = 1\n", encoding="utf-8")
    command, *args = server_command()
    params = StdioServerParameters(command=command, args=[*args, "--root", str(root)], cwd=str(root))
    with anyio.fail_after(30):
        async with Client(params, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names[:3] == ["Read", "Edit", "Write"]
            read = await client.call_tool("Read", {"file_path": str(app)})
            assert read.content[0].text == "1\texport const value = 1"  # type: ignore[union-attr]
            edit = await client.call_tool(
                "Edit", {"file_path": "app.ts", "old_string": "value = 1", "new_string": "value = 2"}
            )
            assert not edit.is_error
    assert app.read_text(encoding="utf-8") == "export const value = 2\n"


async def test_pipelined_calls_keep_read_edit_read_order_and_stdout_carries_only_protocol(root: Path) -> None:
    """At DEBUG, where the server logs the most: every stdout line is an answer (`receive` parses each), the log
    goes to stderr. (One start for both: a start costs ~1.5 CPU-s.)"""
    f = root / "a.txt"
    f.write_text("value = 1\n", encoding="utf-8")
    server = await RawServer.start(root, "--log-level", "DEBUG")
    try:
        with anyio.fail_after(30):
            await server.initialize()
            first = server.call("Read", {"file_path": str(f)})
            edit = server.call("Edit", {"file_path": str(f), "old_string": "value = 1", "new_string": "value = 2"})
            again = server.call("Read", {"file_path": str(f), "limit": 5})
            others = [server.call("Read", {"file_path": str(f), "offset": 1, "limit": n}) for n in range(10, 30)]
            # One write of all lines, so they arrive together.
            assert server.proc.stdin is not None
            import json

            server.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in [first, edit, again, *others]))
            await server.proc.stdin.drain()
            answers = {}
            while len(answers) < 3 + len(others):
                message = await server.receive()
                answers[message["id"]] = message
        assert text(answers[first["id"]]) == "1\tvalue = 1"
        assert not answers[edit["id"]]["result"].get("isError"), answers[edit["id"]]
        assert text(answers[again["id"]]) == "1\tvalue = 2"
        assert all(text(answers[m["id"]]) == "1\tvalue = 2" for m in others)
        sent = [first, edit, again, *others]
        seqs = [answers[m["id"]]["result"]["_meta"]["codetools/result"]["timing"]["seq"] for m in sent]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "calls are numbered in the order they arrived"
    finally:
        assert await server.close() == 0, "the server exits with 0 when stdin closes (killed after 10 s)"
    assert server.proc.stderr is not None
    err = (await server.proc.stderr.read()).decode()
    assert "call #1 Read" in err and "call #2 Edit" in err


def test_python_dash_m_entry_point_shows_help() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and "--root" in done.stdout
