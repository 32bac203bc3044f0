"""The stdio wire without the SDK: the descriptors, reading lines and writing them from the event loop.

Shared by the SDK's stdio session (`stdio.py`) and the calls answered before the SDK is imported
(`early_calls.py`), which read the same stream one after the other; so nothing here imports the SDK or
pydantic. The wire descriptors are duplicates of fd 0 and 1 (`fast_start.redirect_wire`), watched by the
loop directly where it can; a descriptor the loop cannot watch (a regular file, /dev/null, a terminal)
is read by a daemon thread and written with plain blocking writes in a worker thread instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import stat
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 256 * 1024 * 1024
READ_CHUNK = 64 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
TOO_LARGE = None
"""What `WireStream.read_line` gives for a line longer than `MAX_LINE_BYTES` (already skipped)."""


def error_line(code: int, message: str, request_id: Any = None, data: str | None = None) -> bytes:
    """One JSON-RPC error response as a stdio line."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n"


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


class WireStream:
    """The two halves of the protocol stream; lines read ahead (`held`) are read again first."""

    def __init__(self, reader: asyncio.StreamReader, writer: _LoopWriter | _ThreadWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.peer_gone = False
        self.held: deque[bytes | None] = deque()

    async def read_line(self) -> bytes | None:
        """The next line (blank ones too), or `TOO_LARGE` for one past the limit (skipped).

        Cancelling a read loses nothing: a line is taken from the buffer only once it is whole.

        Raises:
            EOFError: the input has ended.
        """
        if self.held:
            return self.held.popleft()
        try:
            return await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # end of input, maybe after a last unterminated line
            if exc.partial:
                return exc.partial
            raise EOFError from None
        except asyncio.LimitOverrunError:
            # readuntil leaves the oversized line in the buffer, so exactly that line is skipped.
            logger.warning("dropped an input line longer than %d bytes", MAX_LINE_BYTES)
            await self._skip_rest_of_line()
            return TOO_LARGE

    async def _skip_rest_of_line(self) -> None:
        while True:
            try:
                await self.reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self.reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def say(self, data: bytes) -> None:
        """Write whole lines and wait until the pipe took them; a peer that stopped reading is noted, not raised."""
        if self.peer_gone:
            return
        self.writer.write(data)
        try:
            await self.writer.drain()
        except OSError as exc:  # the client stopped reading (EPIPE, a closed socket)
            logger.info("stdout is gone (%s); the client has left", exc)
            self.peer_gone = True


Fds = tuple[int, int, int, int]
"""The wire's duplicates of fd 0 and 1, then the saved fd 0 and 1 to restore (`fast_start.redirect_wire`)."""


@asynccontextmanager
async def opened_wire(fds: Fds, first: Iterable[bytes] = ()) -> AsyncIterator[WireStream]:
    """The protocol stream on the wire descriptors (owned from now on); `first`: bytes read already.

    At the end what is written is flushed (within a bound) and fd 0 and 1 are put back.
    """
    wire_in, wire_out, saved_in, saved_out = fds
    reader, stop_reading = await _open_reader(wire_in, first)
    writer = await _open_writer(wire_out)
    try:
        yield WireStream(reader, writer)
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


async def until_stopped(serve: Callable[[], Awaitable[None]]) -> int | None:
    """Run `serve` until it returns or a stop signal cancels it; the signal's number, or None."""
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
        await serve()
        tg.cancel_scope.cancel()
    return stopped_by[0] if stopped_by else None


EOF_GRACE_S = 3.0
"""After stdin ends, how long requests already received may go on without one of them being answered before
the rest are cancelled: a call that makes no progress (a `sleep`) is not waited for long. The SDK's client
sends SIGTERM 2 s after closing stdin, which ends the session the same way (`STOP_SIGNALS`). 1 s lost a piped
Bash call's answer at load 15-17 (CI, 2026-12-07): its bash, and the sandbox probe, waited that long for a CPU."""
EOF_GRACE_CAP_S = 10.0
"""The longest the answering goes on after stdin ends while answers keep coming (`cat requests | mcp-codetools`
on a busy machine: a first Bash call that starts its sandbox can take over a second after a Read's answer)."""


class EndOfInputGrace:
    """How long the requests received before the end of input may still run.

    `EOF_GRACE_S` from the last answer (or from the end), and no longer than `EOF_GRACE_CAP_S` in all.
    """

    def __init__(self, ended_at: float, idle_s: float = EOF_GRACE_S, cap_s: float = EOF_GRACE_CAP_S) -> None:
        self._last = ended_at
        self._until = ended_at + cap_s
        self._idle_s = idle_s

    def answered(self, now: float) -> None:
        """A request was answered at `now`: the idle bound starts again."""
        self._last = now

    def left(self, now: float) -> float:
        """Seconds still given at `now`; 0: cancel what runs."""
        return max(0.0, min(self._last + self._idle_s, self._until) - now)
