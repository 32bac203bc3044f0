"""One language server process and the JSON-RPC spoken with it over its stdin and stdout.

A worker thread reads the server's messages (`Content-Length` framed JSON) and hands each answer to the
call waiting for it on the event loop; notifications go to a callback, and the few requests a server sends
its client (configuration, progress tokens, capability registration) are answered with nothing. Another
thread writes, in the order messages were queued: sending never waits for a server that is not reading
(a busy one stops reading, and a 4 MiB document fills the pipe), so a caller's bound covers only its
answer. A request that times out is cancelled (`$/cancelRequest`). The process runs in its own group;
closing it asks for `shutdown`/`exit`, then kills and reaps the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A larger message from a server is a broken server: it is stopped."""
_CLOSE_GRACE_S = 1.0


class ServerGone(Exception):
    """The language server exited or broke the protocol; pending and later requests fail with this."""


class ServerError(Exception):
    """The language server answered a request with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code


Notify = Callable[[str, Any], None]
"""Receives each notification (method, params), on the reader thread."""


class Connection:
    """A started language server: `request`, `notify`, `close`."""

    def __init__(self, proc: subprocess.Popen[bytes], on_notification: Notify, loop: asyncio.AbstractEventLoop) -> None:
        self._proc = proc
        self._on_notification = on_notification
        self._loop = loop
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._lock = threading.Lock()
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self.gone: str | None = None
        """Why the connection ended, once it has."""
        self._reader = threading.Thread(target=self._read_loop, name="lsp-reader", daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name="lsp-writer", daemon=True)
        self._reader.start()
        self._writer.start()

    @classmethod
    async def start(
        cls, command: Sequence[str], cwd: Path, on_notification: Notify, env: dict[str, str] | None = None
    ) -> Connection:
        """Spawn `command` in `cwd`, in its own process group, with stdin/stdout as the wire.

        Raises:
            OSError: the program cannot be started.
        """
        return cls(_spawn(command, cwd, env), on_notification, asyncio.get_running_loop())

    @property
    def pid(self) -> int:
        """The server's process id (and process group)."""
        return self._proc.pid

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the event loop the connection was started from (safe from any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(callback)

    @property
    def alive(self) -> bool:
        """Whether the server still runs and speaks the protocol."""
        return self.gone is None and self._proc.poll() is None

    async def request(self, method: str, params: Any, timeout_s: float) -> Any:
        """Send a request and wait up to `timeout_s` for its result.

        Raises:
            TimeoutError: no answer in time (the request is cancelled on the server's side).
            ServerError: the server answered with an error.
            ServerGone: the server is not running.
        """
        pending = self.send_request(method, params)
        try:
            return await pending.result(timeout_s)
        except BaseException:
            pending.cancel()
            raise

    def send_request(self, method: str, params: Any) -> Pending:
        """Send a request whose answer may be collected later, by whoever holds the `Pending`.

        Raises:
            ServerGone: the server is not running.
        """
        number = next(self._ids)
        pending = Pending(self, number, method)
        with self._lock:
            if self.gone is not None:
                raise ServerGone(self.gone)
            self._pending[number] = (pending.done, pending.slot)
        try:
            self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        except BaseException:
            with self._lock:
                self._pending.pop(number, None)
            raise
        return pending

    def _forget(self, number: int) -> None:
        """Stop waiting for request `number` and tell the server it may drop it."""
        with self._lock:
            waiting = self._pending.pop(number, None) is not None
        if waiting and self.gone is None:
            with contextlib.suppress(ServerGone):
                self._send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": number}})

    async def notify(self, method: str, params: Any) -> None:
        """Queue a notification (sent in order, never waited for).

        Raises:
            ServerGone: the server is not running.
        """
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, Any]) -> None:
        """Queue one message for the writer thread (safe from any thread)."""
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        with self._lock:
            if self.gone is not None:
                raise ServerGone(self.gone)
            self._outbox.put(frame)

    def _write_loop(self) -> None:
        stream = self._proc.stdin
        assert stream is not None
        while (frame := self._outbox.get()) is not None:
            try:
                stream.write(frame)
                stream.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                self._end(f"writing to the language server failed: {exc}")
                return

    def _read_loop(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        try:
            while True:
                message = _read_message(stream)
                if message is None:
                    self._end("the language server exited")
                    return
                self._dispatch(message)
        except Exception as exc:  # a protocol error ends this server; the session starts another on demand
            self._end(f"the language server broke the protocol: {exc}")

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            # Requests a server sends its client: configuration gets nulls (defaults), the rest nothing.
            items = (message.get("params") or {}).get("items")
            result = [None] * len(items) if message["method"] == "workspace/configuration" and items else None
            with contextlib.suppress(ServerGone):
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif "method" in message:
            try:
                self._on_notification(message["method"], message.get("params"))
            except Exception:
                logger.exception("handling a notification from a language server failed")
        elif isinstance(message.get("id"), int):
            with self._lock:
                waiter = self._pending.pop(message["id"], None)
            if waiter is not None:
                waiter[1].append(message)
                self._loop.call_soon_threadsafe(waiter[0].set)

    def _end(self, why: str) -> None:
        with self._lock:
            if self.gone is None:
                self.gone = why
                self._outbox.put(None)  # the writer stops after what was queued before
            waiters, self._pending = list(self._pending.values()), {}
        for done, slot in waiters:
            slot.append(None)
            with contextlib.suppress(RuntimeError):  # the loop may already be closed at shutdown
                self._loop.call_soon_threadsafe(done.set)

    async def close(self, *, graceful: bool = True) -> None:
        """Ask the server to exit, then kill and reap its process group. Idempotent; never raises.

        Not `graceful`: the server stopped answering, so it is not asked (that would only add the grace).
        """
        with anyio.CancelScope(shield=True):
            if self.alive and graceful:
                with contextlib.suppress(Exception):
                    await self.request("shutdown", None, _CLOSE_GRACE_S)
                    await self.notify("exit", None)
            self._end("the language server was stopped")
            await anyio.to_thread.run_sync(self._reap, graceful)

    def _reap(self, graceful: bool) -> None:
        try:
            self._proc.wait(timeout=_CLOSE_GRACE_S if graceful else 0)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait()
        self._writer.join(timeout=_CLOSE_GRACE_S)  # the group is dead: a blocked write has failed
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._reader.join(timeout=_CLOSE_GRACE_S)


class Pending:
    """A request sent and not yet answered, or answered and not yet collected.

    Waiting for it with a bound leaves it running: a cold server's first answer can be collected by a later
    call (see warming.py). `cancel` gives it up.
    """

    def __init__(self, conn: Connection, number: int, method: str) -> None:
        self._conn = conn
        self.number = number
        self.method = method
        self.done = anyio.Event()
        self.slot: list[Any] = []

    @property
    def answered(self) -> bool:
        """Whether the answer (or the server's end) has arrived."""
        return bool(self.slot)

    async def result(self, timeout_s: float) -> Any:
        """The result, waiting up to `timeout_s`; the request keeps running when the wait ends first.

        Raises:
            TimeoutError: no answer yet.
            ServerError: the server answered with an error.
            ServerGone: the server stopped before answering.
        """
        if not self.slot:
            with anyio.fail_after(timeout_s):
                await self.done.wait()
        message = self.slot[0]
        if message is None:
            raise ServerGone(self._conn.gone or "the language server stopped")
        if "error" in message:
            error = message["error"] or {}
            raise ServerError(int(error.get("code", 0)), str(error.get("message", "error")))
        return message.get("result")

    def cancel(self) -> None:
        """Give the request up: the server is told (`$/cancelRequest`) unless it has answered."""
        self._conn._forget(self.number)


def _spawn(command: Sequence[str], cwd: Path, env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        list(command),
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )


def _read_message(stream: Any) -> dict[str, Any] | None:
    """The next framed message, or None at end of stream."""
    length = None
    while True:
        line = stream.readline(4096)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is None or not 0 <= length <= MAX_MESSAGE_BYTES:
        raise ValueError(f"bad Content-Length: {length}")
    body = stream.read(length)
    if len(body) < length:
        return None
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ValueError("a message that is not a JSON object")
    return message
