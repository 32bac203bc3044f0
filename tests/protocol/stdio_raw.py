"""A raw newline-delimited JSON-RPC peer for the real server process, for byte-level protocol tests."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio


def server_command() -> list[str]:
    """The installed console script beside this Python, else the module."""
    script = Path(sys.executable).parent / "mcp-codetools"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mcp_codetools"]


def remove_scratch_of(pid: int) -> None:
    """Remove the scratch folders a killed server left in the temp folder (one that exits removes its own)."""
    for folder in Path(tempfile.gettempdir()).glob(f"mcp-codetools-{pid}-*"):
        shutil.rmtree(folder, ignore_errors=True)


class RawServer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    @classmethod
    async def start(cls, root: Path, *extra: str, env: dict[str, str] | None = None) -> RawServer:
        proc = await asyncio.create_subprocess_exec(
            *server_command(),
            "--root",
            str(root),
            *extra,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(root),
            env={**os.environ, **(env or {})},
            limit=64 * 1024 * 1024,
        )
        return cls(proc)

    async def send(self, message: dict[str, Any] | str) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        return message

    def call(self, name: str, arguments: dict[str, Any] | None, **meta: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params)

    async def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise EOFError("server closed stdout")
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    async def response_to(self, request_id: int) -> dict[str, Any]:
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def initialize(self) -> dict[str, Any]:
        init = self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        await self.send(init)
        answer = await self.response_to(init["id"])
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    async def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            return await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
            remove_scratch_of(self.proc.pid)
            return code


def text(response: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in response["result"]["content"])


@asynccontextmanager
async def initialized(root: Path) -> AsyncIterator[RawServer]:
    """A server for `root`, past its handshake, that must exit cleanly when done (a module's shared server).

    A start that times out must not leave the server running: later tests count live children.
    """
    raw = await RawServer.start(root)
    try:
        with anyio.fail_after(30):
            await raw.initialize()
        yield raw
    finally:
        assert await raw.close() == 0
