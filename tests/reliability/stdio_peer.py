"""
A raw stdio peer for reliability runs: the real server process, its /proc figures, and bounded waits.

Builds on tests/protocol/stdio_raw.RawServer (newline-delimited JSON-RPC over the process's pipes) and
adds what the reliability suites need: collecting answers by id with a deadline, sending many lines
in one write while reading concurrently (so neither side blocks on a full pipe), and the server's
memory, descriptor and child-process figures.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio

from tests.protocol.stdio_raw import RawServer, remove_scratch_of
from tests.reliability import procfs

COUNTABLE = {"MCP_CODETOOLS_DEBUGGABLE": "1"}
"""For a server whose descriptors a test counts: a non-dumpable one's /proc/<pid>/fd is root's alone."""


class Peer:
    def __init__(self, raw: RawServer) -> None:
        self.raw = raw
        self._next_id = 1_000_000
        self.stderr_tail = bytearray()
        # The server logs to stderr; read it all the time, or a full pipe would stall the server.
        self._stderr_task = asyncio.get_running_loop().create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        stream = self.raw.proc.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self.stderr_tail += chunk
            del self.stderr_tail[:-65536]

    @classmethod
    async def start(cls, root: Path, *extra: str, env: dict[str, str] | None = None) -> Peer:
        peer = cls(await RawServer.start(root, *extra, env=env))
        with anyio.fail_after(30):
            await peer.raw.initialize()
        return peer

    @property
    def pid(self) -> int:
        return self.raw.proc.pid

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(self, name: str, arguments: dict[str, Any] | None, request_id: int | str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.request("tools/call", params, request_id)

    def request(self, method: str, params: dict[str, Any] | None = None, request_id: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.new_id() if request_id is None else request_id}
        message["method"] = method
        if params is not None:
            message["params"] = params
        return message

    async def send_lines(self, lines: Iterable[bytes]) -> None:
        stdin = self.raw.proc.stdin
        assert stdin is not None
        stdin.write(b"".join(line.rstrip(b"\n") + b"\n" for line in lines))
        await stdin.drain()

    async def receive(self) -> dict[str, Any]:
        return await self.raw.receive()

    async def exchange(
        self, messages: list[dict[str, Any] | bytes], *, timeout: float = 60.0
    ) -> dict[Any, list[dict[str, Any]]]:
        """Send all lines at once and collect every answer to the requests among them, by id."""
        lines = [m if isinstance(m, bytes) else json.dumps(m).encode() for m in messages]
        waiting = {json.dumps(m["id"]) for m in messages if isinstance(m, dict) and "id" in m and "method" in m}
        answers: dict[Any, list[dict[str, Any]]] = {}

        async def collect() -> None:
            while waiting:
                message = await self.receive()
                answers.setdefault(message.get("id"), []).append(message)
                waiting.discard(json.dumps(message.get("id")))

        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(collect)
                await self.send_lines(lines)
        return answers

    async def ask(self, message: dict[str, Any], *, timeout: float = 30.0) -> dict[str, Any]:
        answers = await self.exchange([message], timeout=timeout)
        return answers[message["id"]][-1]

    async def ping(self, timeout: float = 10.0) -> None:
        answer = await self.ask(self.request("ping"), timeout=timeout)
        assert answer.get("result") == {}, answer

    def memory(self) -> procfs.Memory:
        return procfs.memory(self.pid)

    def fds(self) -> int:
        return procfs.fd_count(self.pid)

    def live_children(self) -> list[procfs.ProcInfo]:
        return [p for p in procfs.descendants(self.pid) if p.state not in "ZX"]

    async def close(self) -> int:
        """Close stdin and wait for the exit (killed after 10 s); returns the exit code."""
        code = await self.raw.close()
        with anyio.move_on_after(5):
            await self._stderr_task
        self._stderr_task.cancel()
        return code

    async def wait_exit(self, timeout: float = 20.0) -> int:
        """Wait (bounded) for the server to exit on its own and for the rest of its stderr; the exit code."""
        with anyio.fail_after(timeout):
            code = await self.raw.proc.wait()
        with anyio.move_on_after(5):
            await self._stderr_task
        return code

    def close_pipes(self, *, all_of_them: bool = False) -> None:
        """Disconnect: close the server's stdin, and with `all_of_them` its stdout and stderr too (a crashed client)."""
        transport = self.raw.proc._transport  # type: ignore[attr-defined]
        for fd in (0, 1, 2) if all_of_them else (0,):
            pipe = transport.get_pipe_transport(fd)
            if pipe is not None:
                pipe.close()

    async def kill(self) -> int:
        """SIGKILL the server (if still running), reap it, and remove the scratch folders it could not."""
        if self.raw.proc.returncode is None:
            self.raw.proc.kill()
        code = await self.raw.proc.wait()
        self._stderr_task.cancel()
        remove_scratch_of(self.pid)
        return code

    def stderr_text(self) -> str:
        return self.stderr_tail.decode(errors="replace")


def result_text(answer: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in answer.get("result", {}).get("content", []))


def meta_of(answer: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = answer.get("result", {}).get("_meta", {}).get("codetools/result", {})
    return meta
