"""
stdio served from the event loop itself, answering malformed input as JSON-RPC requires.

The SDK's default stdio hops to a worker thread for every line read and every write, and drops a line
it cannot parse without a word. Here the wire descriptors are duplicated and watched by the loop
directly; fd 0 then points at /dev/null and fd 1 at stderr, so no library or child process can write
into the protocol stream. A line that is not JSON is answered with a parse error (-32700), JSON that
is not a JSON-RPC message with an invalid-request error (-32600), and a request that reuses the id of
a request still in flight is refused rather than silently confused with it. Where the descriptors
cannot be watched (a regular file as stdin, Windows), the SDK's default transport is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 256 * 1024 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601


def error_line(code: int, message: str, request_id: Any = None, data: str | None = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n"


def answer_for_bad_line(line: bytes, exc: ValidationError) -> bytes | None:
    """The error a line that is not a valid JSON-RPC message deserves, or None where the spec wants silence."""
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return error_line(PARSE_ERROR, "Parse error", data="the line is not valid JSON (or nested too deeply)")
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    if isinstance(parsed, dict) and "method" in parsed and "id" not in parsed:
        return None  # an invalid notification gets no answer
    first = exc.errors(include_url=False)[:1]
    detail = f"{'.'.join(map(str, first[0]['loc']))}: {first[0]['msg']}" if first else None
    return error_line(INVALID_REQUEST, "Invalid Request", request_id, detail)


def _has_id(line: bytes) -> bool:
    if b'"id"' not in line:
        return False
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and "id" in parsed


class _Wire:
    """The two halves of the protocol pipe, and the ids of requests still waiting for an answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.in_flight: set[str | int] = set()

    async def lines(self) -> AsyncIterator[bytes]:
        while True:
            try:
                line = await self.reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # end of input, maybe after a last unterminated line
                if exc.partial.strip():
                    yield exc.partial
                return
            except asyncio.LimitOverrunError:
                # readuntil leaves the oversized line in the buffer, so exactly that line is skipped.
                logger.warning("dropped an input line longer than %d bytes", MAX_LINE_BYTES)
                await self._skip_rest_of_line()
                self.writer.write(error_line(INVALID_REQUEST, "Invalid Request", data="message too large"))
                continue
            if line.strip():
                yield line

    async def _skip_rest_of_line(self) -> None:
        while True:
            try:
                await self.reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self.reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    def note_inbound(self, message: types.JSONRPCMessage, server: Server[Any]) -> bytes | None:
        """Track requests in flight; refuse a request whose id is in use, or whose method is not served."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method != "initialize" and server.get_request_handler(message.method) is None:
                # The SDK checks a known method's params before it looks for a handler, so a method this
                # server does not serve could come back as "invalid params" instead of "not found".
                return error_line(METHOD_NOT_FOUND, "Method not found", message.id, message.method)
            if message.id in self.in_flight:
                return error_line(
                    INVALID_REQUEST, "Invalid Request", message.id, f"request id {message.id!r} is already in flight"
                )
            self.in_flight.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, str | int):
                self.in_flight.discard(cancelled)
        return None

    def note_outbound(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.in_flight.discard(message.id)


async def _serve_wire(server: Server[Any], wire: _Wire) -> None:
    inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_loop() -> None:
        async with inbound_send:
            async for line in wire.lines():
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValidationError as exc:
                    answer = answer_for_bad_line(line, exc)
                    if answer is not None:
                        wire.writer.write(answer)
                    continue
                if isinstance(message, types.JSONRPCNotification) and _has_id(line):
                    # An id that is not a string or an integer made the SDK read a request as a notification.
                    wire.writer.write(
                        error_line(INVALID_REQUEST, "Invalid Request", data="id must be a string or integer")
                    )
                    continue
                refusal = wire.note_inbound(message, server)
                if refusal is not None:
                    wire.writer.write(refusal)
                    continue
                await inbound_send.send(SessionMessage(message))

    async def write_loop() -> None:
        async with outbound_receive:
            async for session_message in outbound_receive:
                wire.note_outbound(session_message.message)
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                wire.writer.write(data.encode() + b"\n")
                await wire.writer.drain()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_loop)
        tg.start_soon(write_loop)
        await server.run(inbound, outbound, server.create_initialization_options())
        tg.cancel_scope.cancel()


@asynccontextmanager
async def _loop_wire() -> AsyncIterator[_Wire | None]:
    loop = asyncio.get_running_loop()
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
        )
        write_transport, write_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
        )
    except (ValueError, OSError) as exc:
        logger.debug("stdio cannot be watched by the event loop (%s); using the SDK's default", exc)
        for fd in (wire_in, wire_out):
            with contextlib.suppress(OSError):
                os.close(fd)
        yield None
        return
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    try:
        yield _Wire(reader, writer)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.drain(), 2)
        read_transport.close()
        write_transport.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one MCP connection over this process's stdin and stdout until stdin closes."""
    if sys.platform != "win32":
        async with _loop_wire() as wire:
            if wire is not None:
                await _serve_wire(server, wire)
                return
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
