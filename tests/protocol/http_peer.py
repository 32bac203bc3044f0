"""The real server over Streamable HTTP on an ephemeral loopback port, and helpers to talk to it raw."""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from tests.protocol.stdio_raw import server_command

INIT_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
START_TIMEOUT_S = 30
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@dataclass
class HttpServer:
    proc: subprocess.Popen[bytes]
    url: str
    first_line: str
    stderr_lines: list[str] = field(default_factory=list)

    def stderr_text(self) -> str:
        return "".join(self.stderr_lines)


@contextmanager
def http_server(root: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[HttpServer]:
    """Start `mcp-codetools --transport http --port 0`; the URL comes from its start-up line on stderr."""
    proc = subprocess.Popen(
        [*server_command(), "--transport", "http", "--port", "0", "--root", str(root), *extra],
        env={**{k: v for k, v in os.environ.items() if k != "MCP_CODETOOLS_HTTP_TOKEN"}, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered, so select() sees every line that readline() has not taken yet
    )
    assert proc.stderr is not None
    try:
        before: list[str] = []
        first = ""
        deadline = time.monotonic() + START_TIMEOUT_S
        while "http://" not in first:  # the server prints it right after binding, or exits
            readable, _, _ = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
            raw = proc.stderr.readline() if readable else b""
            if not raw:
                break
            before.append(first := raw.decode(errors="replace"))
        assert "http://" in first, f"no start-up line within {START_TIMEOUT_S} s; got {before!r}"
        before.pop()
        url = first[first.index("http://") :].split(";")[0].strip()
        server = HttpServer(proc, url, first, before)
        stderr = proc.stderr

        def drain() -> None:
            for line in iter(stderr.readline, b""):
                server.stderr_lines.append(line.decode(errors="replace"))

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            yield server
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            reader.join(timeout=20)  # the pipe ends with the server: then it may be closed
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        proc.stderr.close()


def session_of(response: httpx2.Response) -> str:
    return response.headers["mcp-session-id"]


def sse_json(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message in a response body, whether sent as JSON or as one SSE event."""
    import json

    text = response.text
    if response.headers.get("content-type", "").startswith("application/json"):
        parsed: dict[str, Any] = json.loads(text)
        return parsed
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message: dict[str, Any] = json.loads(line[5:])
            if "id" in message:
                return message
    raise AssertionError(f"no JSON-RPC answer in {text!r}")


async def open_raw_session(http: httpx2.AsyncClient, url: str) -> str:
    """A handshake-era session opened by hand (no GET stream, never deleted: a client that just vanishes)."""
    init = await http.post(
        url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
    )
    assert init.status_code == 200, init.text
    key = session_of(init)
    headers = {**ACCEPT, "mcp-session-id": key, "mcp-protocol-version": "2025-11-25"}
    done = await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert done.status_code == 202, done.text
    return key


async def raw_call(
    http: httpx2.AsyncClient, url: str, key: str, name: str, arguments: dict[str, Any]
) -> httpx2.Response:
    headers = {**ACCEPT, "mcp-session-id": key, "mcp-protocol-version": "2025-11-25"}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return await http.post(url, headers=headers, json=body)


STATE_META = "codetools/stateId"


class Threaded:
    """A client that passes back the state_id a result gave, as a model does (ignored where a session holds state)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.state_id: str | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        if self.state_id is not None:
            arguments = {**arguments, "state_id": self.state_id}
        result = await self.client.call_tool(name, arguments)
        given = (result.meta or {}).get(STATE_META)
        if given is not None:
            self.state_id = given
        return result
