"""Log messages for the client (`notifications/message`): the server's own warnings, and background-job ends.

Logs still go to stderr as before; this adds a copy for the client, at the level it chose:
- Handshake era: `logging/setLevel` sets a session's level (`info` until it does). Messages go on the
  connection's standalone stream (through the `ServerSession` of the session's latest request), so a
  job that ends between calls is heard of at once.
- 2026-07-28: there is neither `setLevel` nor a standalone stream for messages: a request opts in with
  `_meta["io.modelcontextprotocol/logLevel"]`, and messages may only ride that request's stream. They
  are held for the session (bounded) and sent at the start and at the end of its next call that opted
  in, before its result, so none is written after the response it rides with.

Which session hears what: a record logged while a session's call runs (or from a task or thread that
call started, such as a job's watcher) carries that session as its owner and goes to it alone, so one
HTTP client never sees another's paths or commands; a record with no owner (the server's own) goes to
every session. Forwarding never blocks the code that logs: `emit` only appends to a bounded queue (the
oldest is dropped when it is full) and wakes the sender task, from any thread; what the sender logs
itself, and what is logged while it sends, is not forwarded again, so it cannot recurse.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_codetools.session import CodeSession
from mcp_codetools.shell.background import Job

logger = logging.getLogger(__name__)

PACKAGE_LOGGER = "mcp_codetools"
LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
DEFAULT_LEVEL: types.LoggingLevel = "info"
QUEUE_BOUND = 200
"""Messages waiting to be sent, all sessions together; past it the oldest are dropped."""
HELD_BOUND = 50
"""Messages held for one 2026-07-28 session until its next call that asks for them."""
SEND_BOUND_S = 2.0
"""A client that does not take a message within this is skipped for it."""
TEXT_CAP = 2000

_owner: ContextVar[CodeSession | None] = ContextVar("client_log_owner", default=None)
_sending: ContextVar[bool] = ContextVar("client_log_sending", default=False)


@dataclass(frozen=True, slots=True)
class Message:
    """One `notifications/message`, and the session it is for (None: every session)."""

    level: types.LoggingLevel
    logger: str
    data: Any
    owner: CodeSession | None


@dataclass(eq=False)
class _Sink:
    """Where one session's messages go, and from which level."""

    session: ServerSession | None = None
    """The `ServerSession` of the session's latest handshake-era request (its standalone stream)."""
    level: types.LoggingLevel = DEFAULT_LEVEL
    modern: bool = False
    held: deque[Message] = field(default_factory=lambda: deque(maxlen=HELD_BOUND))
    """2026-07-28: messages waiting for the session's next call that asks for them."""


class ClientLog:
    """The server's messages for its clients: a queue, one sink per session, and the task that sends."""

    def __init__(self) -> None:
        self._sinks: weakref.WeakKeyDictionary[CodeSession, _Sink] = weakref.WeakKeyDictionary()
        self._queue: deque[Message] = deque(maxlen=QUEUE_BOUND)
        self._wake: anyio.Event | None = None
        """Made by the sender task (an event needs a running loop); None while no sender runs."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self.handler = _ForwardingHandler(self)

    @contextmanager
    def owned_by(self, session: CodeSession) -> Iterator[None]:
        """Records logged inside (and in tasks and threads started inside) are `session`'s alone."""
        token = _owner.set(session)
        try:
            yield
        finally:
            _owner.reset(token)

    def bind(self, session: CodeSession, ctx: ServerRequestContext[Any]) -> None:
        """Note the request's session and era; the first time, start telling it when its jobs end."""
        sink = self._sinks.get(session)
        if sink is None:
            sink = self._sinks[session] = _Sink()
            owner = weakref.ref(session)
            session.jobs.on_end.append(lambda job: self._job_ended(job, owner()))
        sink.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not sink.modern:
            sink.session = ctx.session

    def knows(self, session: CodeSession) -> bool:
        """Whether a request of `session` was bound: where its messages go is known (`fast_lane` waits for it)."""
        return session in self._sinks

    def set_level(self, session: CodeSession, ctx: ServerRequestContext[Any], level: types.LoggingLevel) -> None:
        """`logging/setLevel`: messages below `level` are no longer sent to this session."""
        self.bind(session, ctx)
        self._sinks[session].level = level

    @asynccontextmanager
    async def request(self, session: CodeSession, ctx: ServerRequestContext[Any]) -> AsyncIterator[None]:
        """Around one call: bind it, and on 2026-07-28 let held messages ride it when it asked for them."""
        self.bind(session, ctx)
        sink = self._sinks[session]
        allowed = allowed_log_levels(ctx.protocol_version, _meta_dict(ctx)) if sink.modern else frozenset()
        if allowed:
            await _flush(sink, ctx, allowed)
        with self.owned_by(session):
            yield
        if allowed:
            await _flush(sink, ctx, allowed)

    def post(self, message: Message) -> None:
        """Queue a message from any thread; never blocks and never raises."""
        sink = self._sinks.get(message.owner) if message.owner is not None else None
        if sink is not None and sink.modern:
            sink.held.append(message)  # deque appends are atomic: safe from any thread
            return
        self._queue.append(message)
        loop, wake = self._loop, self._wake
        if loop is None or wake is None:
            return
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            wake.set()
        else:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the loop has closed: nothing will send it
                pass

    def _job_ended(self, job: Job, owner: CodeSession | None) -> None:
        if owner is None:  # the session is gone, and with it whoever wanted to know
            return
        text = f"Background shell {job.id} {job.status()}. Read its output with BashOutput."
        data = {"message": text, "shellId": job.id, "exitCode": job.returncode, "status": job.state}
        self.post(Message("notice", f"{PACKAGE_LOGGER}.jobs", data, owner))

    async def run(self) -> None:
        """Send queued messages until cancelled (one task per server, in its lifespan)."""
        _sending.set(True)  # this task's own records are never forwarded
        root = logging.getLogger(PACKAGE_LOGGER)
        root.addHandler(self.handler)
        self._loop = asyncio.get_running_loop()
        try:
            while True:
                self._wake = wake = anyio.Event()
                while self._queue:
                    await self._deliver(self._queue.popleft())
                await wake.wait()
        finally:
            root.removeHandler(self.handler)
            self._loop = self._wake = None

    async def _deliver(self, message: Message) -> None:
        targets = [message.owner] if message.owner is not None else list(self._sinks.keys())
        for session in targets:
            sink = self._sinks.get(session) if session is not None else None
            if sink is not None:
                await self._send(sink, message)

    async def _send(self, sink: _Sink, message: Message) -> None:
        if sink.modern:
            sink.held.append(message)
            return
        if sink.session is None or LEVELS.index(message.level) < LEVELS.index(sink.level):
            return
        await _bounded(sink.session.send_notification(_notification(message)))


async def _flush(sink: _Sink, ctx: ServerRequestContext[Any], allowed: frozenset[types.LoggingLevel]) -> None:
    """Send a 2026-07-28 session's held messages on this request's stream (those at the levels it asked for)."""
    held = list(sink.held)
    sink.held.clear()
    for message in held:
        if message.level in allowed:
            await _bounded(ctx.session.send_notification(_notification(message), related_request_id=ctx.request_id))


def _notification(message: Message) -> types.LoggingMessageNotification:
    return types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level=message.level, logger=message.logger, data=message.data)
    )


async def _bounded(sending: Any) -> None:
    try:
        with anyio.move_on_after(SEND_BOUND_S):
            await sending
    except Exception:  # a gone client, a closed stream: the message is simply not delivered
        logger.debug("a log message for the client could not be sent", exc_info=True)


def _meta_dict(ctx: ServerRequestContext[Any]) -> dict[str, Any]:
    meta: Any = ctx.meta
    if meta is None:
        return {}
    if isinstance(meta, dict):
        return meta
    dumped = meta.model_dump(by_alias=True) if hasattr(meta, "model_dump") else {}
    return dumped if isinstance(dumped, dict) else {}


_BY_LEVELNO: tuple[tuple[int, types.LoggingLevel], ...] = (
    (logging.CRITICAL, "critical"),
    (logging.ERROR, "error"),
    (logging.WARNING, "warning"),
)


class _ForwardingHandler(logging.Handler):
    """WARNING and above of the package's loggers, copied to the client log."""

    def __init__(self, log: ClientLog) -> None:
        super().__init__(logging.WARNING)
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        if _sending.get() or record.name.startswith(__name__):
            return
        level: types.LoggingLevel = next(name for number, name in _BY_LEVELNO if record.levelno >= number)
        try:
            text = record.getMessage()
        except Exception:  # a bad format string in a log call: not worth a crash here
            text = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            text += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        self._log.post(Message(level, record.name, text[:TEXT_CAP], _owner.get()))
