"""stdio served from the event loop itself, answering malformed input as JSON-RPC requires.

The SDK's default stdio hops to a worker thread for every line read and every write, and drops a line
it cannot parse without a word. Here the wire descriptors are duplicated and watched by the loop
directly; fd 0 then points at /dev/null and fd 1 at stderr, so no library or child process can write
into the protocol stream. A descriptor the loop cannot watch (a regular file, /dev/null, a terminal)
is read by a daemon thread and written with plain blocking writes in a worker thread instead. At the
end of input, requests already received are answered (within a bound) before the session closes.
A line that is not JSON is answered with a parse error (-32700), JSON that
is not a JSON-RPC message with an invalid-request error (-32600), and a request that reuses the id of
a request still in flight is refused rather than silently confused with it. On Windows the SDK's
default transport is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import stat
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_codetools.protocol.eras import serve_both_eras
from mcp_codetools.protocol.fast_start import EarlyStart, redirect_wire
from mcp_codetools.protocol.start_snapshot import HandoverCheck, Recorder

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 256 * 1024 * 1024
READ_CHUNK = 64 * 1024
EOF_GRACE_S = 1.0
"""After stdin ends, how long requests already received may run to finish before they are cancelled. Short:
the SDK's client sends SIGTERM 2 s after closing stdin, and cancelled Bash calls still need time to kill
their process groups (measured: a cancelled `sleep` took the exit to 2.3 s with a 1.5 s grace)."""
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601


def error_line(code: int, message: str, request_id: Any = None, data: str | None = None) -> bytes:
    """One JSON-RPC error response as a stdio line."""
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


class _ThreadFeed:
    """Feeds a StreamReader from a blocking descriptor in a daemon thread (a regular file, /dev/null, a tty).

    The reader pauses and resumes it like a pipe transport (so a huge input is not read ahead
    without bound); being a daemon thread, a read blocked on a terminal never holds up the exit.
    """

    def __init__(self, fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = fd
        self._reader = reader
        self._loop = loop
        self._go = threading.Event()
        self._go.set()
        reader.set_transport(self)  # type: ignore[arg-type]  # it only calls pause_reading/resume_reading
        threading.Thread(target=self._run, name="mcp-codetools-stdin", daemon=True).start()

    def pause_reading(self) -> None:
        self._go.clear()

    def resume_reading(self) -> None:
        self._go.set()

    def _run(self) -> None:
        try:
            while True:
                self._go.wait()
                try:
                    chunk = os.read(self._fd, READ_CHUNK)
                except OSError as exc:
                    logger.warning("reading stdin failed (%s); treating it as the end of input", exc)
                    chunk = b""
                if not chunk:
                    self._loop.call_soon_threadsafe(self._reader.feed_eof)
                    return
                self._loop.call_soon_threadsafe(self._reader.feed_data, chunk)
        except RuntimeError:  # the loop is closed: the server has finished
            return
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)


class _LoopWriter:
    """Writes through the event loop's pipe transport."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()


class _ThreadWriter:
    """Plain blocking writes in a worker thread, for a descriptor the loop cannot watch (a regular file, a tty)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: list[bytes] = []
        self._lock = anyio.Lock()

    def write(self, data: bytes) -> None:
        self._pending.append(data)

    async def drain(self) -> None:
        async with self._lock:
            while self._pending:
                data = b"".join(self._pending)
                self._pending.clear()
                await anyio.to_thread.run_sync(_write_all, self._fd, data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Wire:
    """The two halves of the protocol stream, and the ids of requests still waiting for an answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: _LoopWriter | _ThreadWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.in_flight: set[str | int] = set()
        self.peer_gone = False
        self._settled = asyncio.Event()
        self._settled.set()

    async def lines(self) -> AsyncIterator[bytes | None]:
        """Input lines, then the end; None stands for a line too long to keep (already skipped)."""
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
                yield None
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

    async def answered(self) -> None:
        """Wait until every request received so far has been answered (or cancelled), or the peer is gone."""
        await self._settled.wait()

    def _track(self) -> None:
        if self.in_flight and not self.peer_gone:
            self._settled.clear()
        else:
            self._settled.set()

    def lost_peer(self) -> None:
        self.peer_gone = True
        self._track()

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
        self._track()
        return None

    def note_outbound(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.in_flight.discard(message.id)
            self._track()


async def _serve_wire(
    server: Server[Any], wire: _Wire, check: HandoverCheck | None = None, recorder: Recorder | None = None
) -> None:
    inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)

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
            async for line in wire.lines():
                if line is None:
                    await say(error_line(INVALID_REQUEST, "Invalid Request", data="message too large"))
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
                if recorder is not None:
                    recorder.asked(message)
                await inbound_send.send(SessionMessage(message))
            # End of input. Answer what already arrived (`cat requests.jsonl | mcp-codetools`) before
            # closing the session, within a bound: a client that closes stdin is shutting down, and the
            # SDK's client sends SIGTERM 2 s later. What is still running then is cancelled.
            with anyio.move_on_after(EOF_GRACE_S):
                await wire.answered()

    async def write_loop() -> None:
        async with outbound_receive:
            async for session_message in outbound_receive:
                wire.note_outbound(session_message.message)
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                if check is not None and check.claims(session_message.message, data):
                    continue  # the start snapshot sent this answer already
                if not wire.peer_gone:
                    wire.writer.write(data.encode() + b"\n")
                    await flush()
                if recorder is not None:
                    recorder.answered(session_message.message)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_loop)
        tg.start_soon(write_loop)
        await serve_both_eras(server, inbound, outbound, server.create_initialization_options())
        tg.cancel_scope.cancel()


def _loop_can_watch(fd: int) -> bool:
    """Pipes and sockets work with the loop's pipe transports; files, /dev/null and terminals do not (well)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _open_reader(fd: int, first: Iterable[bytes] = ()) -> tuple[asyncio.StreamReader, Callable[[], None]]:
    """A StreamReader over `fd`, a duplicate of fd 0 (it owns it from now on), and a way to stop reading.

    `first`: what was read from it already, read before anything else.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    for chunk in first:
        reader.feed_data(chunk)
    if _loop_can_watch(fd):
        spare = os.dup(fd)
        pipe = os.fdopen(fd, "rb", buffering=0)
        try:
            transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        except (ValueError, OSError) as exc:
            logger.debug("stdin cannot be watched by the event loop (%s); reading it in a thread", exc)
            pipe.close()
            fd = spare
        else:
            os.close(spare)
            return reader, transport.close
    _ThreadFeed(fd, reader, loop)
    return reader, lambda: None


async def _open_writer(fd: int) -> _LoopWriter | _ThreadWriter:
    """A writer over `fd`, a duplicate of fd 1 (it owns it from now on)."""
    loop = asyncio.get_running_loop()
    if _loop_can_watch(fd):
        spare = os.dup(fd)
        pipe = os.fdopen(fd, "wb", buffering=0)
        try:
            transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
        except (ValueError, OSError) as exc:
            logger.debug("stdout cannot be watched by the event loop (%s); writing it in a thread", exc)
            pipe.close()
            fd = spare
        else:
            os.close(spare)
            return _LoopWriter(asyncio.StreamWriter(transport, protocol, None, loop))
    return _ThreadWriter(fd)


@asynccontextmanager
async def _wire(early: EarlyStart | None = None) -> AsyncIterator[_Wire]:
    """The protocol stream on duplicates of fd 0 and 1, which then point at /dev/null and stderr.

    After a start from the snapshot the duplicates were made before the SDK was imported (`fast_start`),
    and what was read meanwhile is read first, in order.
    """
    if early is None:
        wire_in, wire_out, saved_in, saved_out = redirect_wire()
    else:
        wire_in, wire_out, saved_in, saved_out = early.wire_in, early.wire_out, early.saved_in, early.saved_out
    reader, stop_reading = await _open_reader(wire_in, early.buffered if early is not None else ())
    writer = await _open_writer(wire_out)
    try:
        yield _Wire(reader, writer)
    finally:
        with contextlib.suppress(Exception):
            with anyio.move_on_after(2, shield=True):
                await writer.drain()
        stop_reading()
        writer.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))
"""Signals that end the server the way the end of input does: the session is closed (its commands, jobs and
scratch folder gone) before the process exits. Without this, SIGTERM, the SDK client's second step after
closing stdin, would end the process at once and leave background jobs running."""


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
    stopped_by: list[int] = []
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async for signum in signals:
                    logger.warning("%s received: stopping; ending the session first", signal.Signals(signum).name)
                    stopped_by.append(signum)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        async with _wire(early) as wire:
            await _serve_wire(server, wire, HandoverCheck(early) if early is not None else None, recorder)
        tg.cancel_scope.cancel()
    if recorder is not None:
        await anyio.to_thread.run_sync(recorder.finish)
    return 128 + stopped_by[0] if stopped_by else 0
