"""The SDK session on stdio, answering malformed input as JSON-RPC requires.

The SDK's default stdio hops to a worker thread for every line read and every write, and drops a line
it cannot parse without a word. Here the session reads and writes the wire of `wire.py`: duplicates of
fd 0 and 1 watched by the event loop (fd 0 then points at /dev/null and fd 1 at stderr, so no library or
child process can write into the protocol stream). At the end of input, requests already received are
answered (within a bound) before the session closes. A line that is not JSON is answered with a parse
error (-32700), JSON that is not a JSON-RPC message with an invalid-request error (-32600), and a request
that reuses the id of a request still in flight is refused rather than silently confused with it. After a
start from the snapshot the session takes over the stream the early calls read (`early_calls.py`). Read,
Glob, Grep and Bash lines the fast lane understands are answered by it (`fast_lane.py`); both write whole lines
with single writes to the one writer, so answers never interleave. On Windows the SDK's default transport
is used.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_codetools.protocol.eras import serve_both_eras
from mcp_codetools.protocol.fast_lane import FastLane, Wiring
from mcp_codetools.protocol.fast_start import EarlyStart, redirect_wire
from mcp_codetools.protocol.server import app_of
from mcp_codetools.protocol.start_snapshot import HandoverCheck, Recorder
from mcp_codetools.protocol.wire import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    WireStream,
    error_line,
    opened_wire,
    until_stopped,
)
from mcp_codetools.protocol.wire import (  # named here for the tests
    MAX_LINE_BYTES as MAX_LINE_BYTES,
)
from mcp_codetools.protocol.wire import EndOfInputGrace as EndOfInputGrace

logger = logging.getLogger(__name__)


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
    """The protocol stream as the SDK session reads it, and the ids of requests still waiting for an answer."""

    def __init__(self, stream: WireStream) -> None:
        self.stream = stream
        self.writer = stream.writer
        self.in_flight: set[str | int] = set()
        self._settled = asyncio.Event()
        self._settled.set()
        self._progress = asyncio.Event()
        """Set whenever a request ends (or the peer goes): the end-of-input grace starts again."""

    @property
    def peer_gone(self) -> bool:
        return self.stream.peer_gone

    async def lines(self) -> AsyncIterator[bytes | None]:
        """Input lines, then the end; None stands for a line too long to keep (already skipped)."""
        while True:
            try:
                line = await self.stream.read_line()
            except EOFError:
                return
            if line is None or line.strip():
                yield line

    async def answered(self) -> None:
        """Wait until every request received so far has been answered (or cancelled), or the peer is gone."""
        await self._settled.wait()

    async def answered_while_progressing(self, grace: EndOfInputGrace) -> None:
        """`answered`, given up once `grace` runs out: while requests keep being answered it goes on."""
        while not self._settled.is_set():
            left = grace.left(time.monotonic())
            if left <= 0:
                return
            self._progress.clear()
            with anyio.move_on_after(left):
                await self._progress.wait()
            if self._progress.is_set():
                grace.answered(time.monotonic())

    def _track(self) -> None:
        self._progress.set()
        if self.in_flight and not self.peer_gone:
            self._settled.clear()
        else:
            self._settled.set()

    def begin(self, request_id: str | int) -> bool:
        """Mark a request in flight; False if its id is in flight already."""
        if request_id in self.in_flight:
            return False
        self.in_flight.add(request_id)
        self._track()
        return True

    def end(self, request_id: str | int) -> None:
        """The request was answered or cancelled."""
        self.in_flight.discard(request_id)
        self._track()

    def lost_peer(self) -> None:
        self.stream.peer_gone = True
        self._track()

    def note_inbound(self, message: types.JSONRPCMessage, server: Server[Any]) -> bytes | None:
        """Track requests in flight; refuse a request whose id is in use, or whose method is not served."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method != "initialize" and server.get_request_handler(message.method) is None:
                # The SDK checks a known method's params before it looks for a handler, so a method this
                # server does not serve could come back as "invalid params" instead of "not found".
                return error_line(METHOD_NOT_FOUND, "Method not found", message.id, message.method)
            if not self.begin(message.id):
                return error_line(
                    INVALID_REQUEST, "Invalid Request", message.id, f"request id {message.id!r} is already in flight"
                )
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, str | int):
                self.end(cancelled)
        return None

    def note_outbound(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.end(message.id)


async def _serve_wire(
    server: Server[Any],
    wire: _Wire,
    check: HandoverCheck | None = None,
    recorder: Recorder | None = None,
    fast: bool = True,
) -> None:
    inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)
    lane: FastLane | None = None

    async def say(data: bytes) -> None:
        wire.writer.write(data)
        await flush()

    async def flush() -> None:
        if wire.peer_gone:
            return
        try:
            await wire.writer.drain()
        except OSError as exc:  # the client stopped reading (EPIPE, a closed socket)
            logger.info("stdout is gone (%s); the client has left", exc)
            wire.lost_peer()

    async def read_loop() -> None:
        async with inbound_send:
            try:
                await read_lines()
            finally:
                if lane is not None:  # before the SDK's session ends: its calls use the same session
                    await lane.aclose()

    async def read_lines() -> None:
        async for line in wire.lines():
            if line is None:
                await say(error_line(INVALID_REQUEST, "Invalid Request", data="message too large"))
                continue
            if lane is not None and lane.take(line):
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValidationError as exc:
                answer = answer_for_bad_line(line, exc)
                if answer is not None:
                    await say(answer)
                continue
            if isinstance(message, types.JSONRPCNotification) and _has_id(line):
                # An id that is not a string or an integer made the SDK read a request as a notification.
                await say(error_line(INVALID_REQUEST, "Invalid Request", data="id must be a string or integer"))
                continue
            refusal = wire.note_inbound(message, server)
            if refusal is not None:
                await say(refusal)
                continue
            if lane is not None and lane.inbound(message):
                continue
            if recorder is not None:
                recorder.asked(message)
            await inbound_send.send(SessionMessage(message))
        # End of input. Answer what already arrived (`cat requests.jsonl | mcp-codetools`) before
        # closing the session, while answers keep coming (`EndOfInputGrace`): a client that closes stdin
        # is shutting down, and the SDK's client sends SIGTERM 2 s later. What still runs then is cancelled.
        await wire.answered_while_progressing(EndOfInputGrace(time.monotonic()))

    async def write_loop() -> None:
        async with outbound_receive:
            async for session_message in outbound_receive:
                wire.note_outbound(session_message.message)
                if lane is not None:
                    lane.outbound(session_message.message)
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                if check is not None and check.claims(session_message.message, data):
                    continue  # the start snapshot sent this answer already
                if not wire.peer_gone:
                    wire.writer.write(data.encode() + b"\n")
                    await flush()
                if recorder is not None:
                    recorder.answered(session_message.message)

    async def hand_over(line: bytes) -> None:
        """A request the fast lane took and gives back (it came to a question): the SDK runs it in its place."""
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            await inbound_send.send(SessionMessage(message))
        except (ValidationError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.warning("a call the fast lane handed over could not reach the SDK session", exc_info=True)

    async with anyio.create_task_group() as tg:
        app = app_of(server) if fast else None
        if app is not None:
            lane = FastLane(app, Wiring(say, wire.begin, wire.end, hand_over))
        tg.start_soon(read_loop)
        tg.start_soon(write_loop)
        try:
            await serve_both_eras(server, inbound, outbound, server.create_initialization_options())
        finally:
            if lane is not None:
                done = lane.answered, lane.handed, lane.cancelled
                logger.info("answered by the fast lane: %d call(s); %d handed to the SDK, %d cancelled", *done)
        tg.cancel_scope.cancel()


async def serve_stdio(server: Server[Any], early: EarlyStart | None = None, recorder: Recorder | None = None) -> int:
    """Serve one MCP connection over this process's stdin and stdout until stdin closes or a stop signal.

    `early`: the start was served from the snapshot until now (its answers are checked, not sent again);
    `recorder`: records the snapshot after the first answer. Returns the exit status: 0 at the end of
    input, 128 + N after signal N (as a shell reports it).
    """
    if sys.platform == "win32":
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return 0
    if early is None:
        fds = redirect_wire()
    else:
        fds = early.wire_in, early.wire_out, early.saved_in, early.saved_out

    async def serve() -> None:
        async with opened_wire(fds, early.buffered if early is not None else ()) as stream:
            await serve_stream(server, stream, HandoverCheck(early) if early is not None else None, recorder)

    stopped_by = await until_stopped(serve)
    if recorder is not None:
        await anyio.to_thread.run_sync(recorder.finish)
    return 128 + stopped_by if stopped_by is not None else 0


async def serve_stream(
    server: Server[Any],
    stream: WireStream,
    check: HandoverCheck | None = None,
    recorder: Recorder | None = None,
    *,
    fast: bool = True,
) -> None:
    """Serve the SDK session on an open stream until its input ends (`stream.held` lines are read first).

    `fast`: Read, Glob, Grep and Bash of a server built by `CodeToolsServer` go through the fast lane.
    """
    await _serve_wire(server, _Wire(stream), check, recorder, fast)
