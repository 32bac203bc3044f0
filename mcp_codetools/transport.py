"""
stdio served from the event loop itself.

The SDK's default stdio hops to a worker thread for every line read and every write. Here the wire
descriptors are duplicated and watched by the loop directly; fd 0 then points at /dev/null and fd 1 at
stderr, so no library or child process can write into the protocol stream. Where the descriptors
cannot be watched (a regular file as stdin, Windows), the SDK's default is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server import Server
from mcp.server.stdio import stdio_server

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 256 * 1024 * 1024


class _LineReader:
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:
                # Longer than MAX_LINE_BYTES: drop the rest of that line and go on with the next.
                logger.warning("dropped an input line longer than %d bytes", MAX_LINE_BYTES)
                with contextlib.suppress(asyncio.LimitOverrunError, ValueError):
                    await self._reader.readuntil(b"\n")
                continue
            if not line:
                raise StopAsyncIteration
            if line.strip():
                return line.decode("utf-8", "replace")


class _LineWriter:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@asynccontextmanager
async def _loop_streams() -> AsyncIterator[tuple[_LineReader, _LineWriter] | None]:
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
        yield _LineReader(reader), _LineWriter(writer)
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
    options = server.create_initialization_options()
    if sys.platform == "win32":
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, options)
        return
    async with _loop_streams() as streams:
        if streams is None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, options)
            return
        line_reader, line_writer = streams
        async with stdio_server(stdin=line_reader, stdout=line_writer) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, options)
