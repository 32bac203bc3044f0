"""The first calls answered while the MCP SDK is still importing: Read, Glob and Grep through the real pipeline.

The start snapshot answers the handshake before anything is imported (`fast_start.py`), but a client that
calls at once then waited for the SDK's import (~0.6 s, a Node server's whole start). At a start from the
snapshot the SDK now imports in a worker thread while the event loop serves the wire: the snapshot's
answers as before, and `tools/call` for the read-only tools through the same `Pipeline`, session,
dispatcher and permission gate the SDK's handler uses (only the JSON around the call is done here). The
import starts when a line needs the SDK, when the input ends, or once the wire has been quiet a moment
(`SDK_IDLE_START_S`): the calls sent with the handshake do not share the interpreter with it, and a call
that comes during the import has it paused between modules (`import_turns.py`). When
the import is done and no early call runs, the SDK session takes the same stream over, reading first
every line it has to see, in order (`WireStream.held`); the session goes on as the process's session.

Fail closed: a line is answered here only when it is fully understood; the first one that is not (any
other method or notification, a `_meta`, a cursor, a client that declared `roots`) and everything after it
waits for the SDK. A permission question the client could be asked (it declared elicitation) sends the
call to the SDK too, before it had any effect; with PreToolUse hooks configured such a client is not
served here at all, since the hooks would run twice. Log messages are not forwarded to the client
before the SDK runs (they still go to stderr).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskGroup

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.gate import AnswerNeeded, Asker, PermissionGate, Question
from mcp_codetools.protocol.call_result import STATE_ARG, call_result
from mcp_codetools.protocol.fast_start import EarlyStart
from mcp_codetools.protocol.import_turns import taking_turns
from mcp_codetools.protocol.wire import (
    INVALID_REQUEST,
    TOO_LARGE,
    EndOfInputGrace,
    WireStream,
    error_line,
    opened_wire,
    until_stopped,
)
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import tools_named
from mcp_codetools.tools.base import ToolOutput

logger = logging.getLogger(__name__)

EARLY_TOOLS = frozenset({"Read", "Glob", "Grep"})
"""Read-only, always concurrency-safe, and needing nothing from the client but their arguments."""
SDK_IDLE_START_S = 0.025
"""How long the wire stays quiet, no call running, before the SDK's import starts without a line needing it.

The import holds the interpreter for ~0.6 s of CPU (pydantic building the SDK's models, in stretches the
event loop cannot cut into), so a call that comes while it runs waits for its turns; a client that calls
right after `tools/list` sends within a few milliseconds."""

FIRST_TOOL = "Read"
"""The early tool built before the first line is served: what a client calls first, nearly always."""

State = Literal["running", "answered", "cancelled", "deferred"]


class EarlyPipelines:
    """A pipeline for each early tool, built at the tool's first call; Read's at once.

    A start from the snapshot then imports only Read's module before its first result: Grep's and Glob's
    (the search code, rg's lookup: ~5% of the CPU by the first result) come with their first call. Each
    pipeline's gate knows the rule families of its one tool, which is all a decision about its calls reads
    (`policy.engine`; `tests/test_tools_loading.py` compares the decisions).
    """

    def __init__(self, gate: PermissionGate | None) -> None:
        self._gate = gate
        self._built: dict[str, Pipeline] = {}
        self.for_tool(FIRST_TOOL)

    @property
    def gate(self) -> PermissionGate | None:
        """The gate as given: its hooks are every pipeline's."""
        return self._gate

    def for_tool(self, name: str) -> Pipeline:
        """The pipeline of early tool `name`, built (its module imported) at the first call."""
        pipeline = self._built.get(name)
        if pipeline is None:
            pipeline = self._built[name] = Pipeline(tools_named([name]), self._gate)
        return pipeline

    async def run(self, session: CodeSession, name: str, arguments: dict[str, Any], *, ask: Asker) -> ToolOutput:
        """One call of early tool `name`, as `Pipeline.run`."""
        return await self.for_tool(name).run(session, name, arguments, ask=ask)


@dataclass(eq=False)
class _Call:
    """One `tools/call` taken here; if it ends `deferred`, its line goes to the SDK in its place."""

    line: bytes
    request_id: str | int
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    state: State = "running"


Entry = bytes | None | _Call
"""A line for the SDK (None: one too long, skipped), or a call taken here."""


def _is_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def call_params(message: dict[str, Any], tools: frozenset[str] = EARLY_TOOLS) -> tuple[str, dict[str, Any]] | None:
    """The tool name and arguments of a `tools/call` of one of `tools` answered without the SDK, else None."""
    if set(message) != {"jsonrpc", "id", "method", "params"} or not _is_id(message["id"]):
        return None
    params = message["params"]
    if not isinstance(params, dict) or not {"name"} <= set(params) <= {"name", "arguments"}:
        return None
    name, arguments = params["name"], params.get("arguments", {})
    if name not in tools or not isinstance(arguments, dict):
        return None
    if STATE_ARG in arguments:  # as `CodeToolsServer._on_call_tool`: a handle means nothing on stdio
        arguments = {k: v for k, v in arguments.items() if k != STATE_ARG}
    return name, arguments


def _cancelled_id(message: dict[str, Any]) -> str | int | None:
    """The request a well-formed `notifications/cancelled` names, else None."""
    if set(message) != {"jsonrpc", "method", "params"} or message["method"] != "notifications/cancelled":
        return None
    params = message["params"]
    if not isinstance(params, dict) or not {"requestId"} <= set(params) <= {"requestId", "reason"}:
        return None
    request_id = params["requestId"]
    return request_id if _is_id(request_id) else None


class EarlyCalls:
    """Reads the wire until the SDK is ready, answering what it can; the rest is kept, in order, for the SDK."""

    def __init__(
        self,
        early: EarlyStart,
        pipeline: Pipeline | EarlyPipelines,
        session: CodeSession,
        stream: WireStream,
        idle_start_s: float = SDK_IDLE_START_S,
    ) -> None:
        self._answers = early.answers
        self._verdicts = deque(early.verdicts)
        self._pipeline = pipeline
        self._session = session
        self._stream = stream
        self._open = not early.lost_track
        """Whether calls may still be taken: closed for good by the first line left to the SDK."""
        self._needs_sdk = early.lost_track
        """A line only the SDK answers has come: its import starts at once."""
        self._idle_start_s = idle_start_s
        self.calm = threading.Event()
        """Set while no early call runs and no line waits, or once a line needs the SDK: its import goes on."""
        self._initialized = False
        self._entries: list[Entry] = []
        self._calls: dict[str | int, _Call] = {}
        self._running = 0
        self._inbox: deque[bytes | None] = deque()
        self._ended = False
        self._wake = anyio.Event()
        self.answered = 0
        """How many calls were answered here."""
        self.cancelled = 0

    def for_sdk(self) -> list[bytes | None]:
        """Every line the SDK must read, in the order they came, once no early call runs."""
        assert self._running == 0
        lines: list[bytes | None] = []
        for entry in self._entries:
            if not isinstance(entry, _Call):
                lines.append(entry)
            elif entry.state == "deferred":
                lines.append(entry.line)
        return [*lines, *self._inbox]

    async def serve(self, sdk_ready: anyio.Event, start_sdk: Callable[[], None]) -> None:
        """Answer until the SDK is ready (or the input ended) and no early call runs.

        `start_sdk` is called once: when a line needs the SDK, when the input ends, or when the wire has been
        quiet for `idle_start_s` with no call running; never while only calls it need not see are coming.
        """
        async with anyio.create_task_group() as calls:
            async with anyio.create_task_group() as reading:
                reading.start_soon(self._pump)
                reading.start_soon(self._wake_when_set, sdk_ready)
                await anyio.lowlevel.checkpoint()  # the pump takes the lines read already before the SDK starts
                started = False
                while True:
                    while self._inbox:
                        await self._take(self._inbox.popleft(), calls)
                    self._update_calm()
                    if not started and (self._needs_sdk or self._ended):
                        started = True
                        start_sdk()
                    if self._running == 0 and (sdk_ready.is_set() or self._ended):
                        break
                    if self._ended:
                        await self._while_answering(EndOfInputGrace(time.monotonic()))
                        calls.cancel_scope.cancel()  # what still runs then, as the SDK's stdio does at the end
                        break
                    if not started and self._running == 0 and not await self._woken_within(self._idle_start_s):
                        started = True
                        start_sdk()  # the wire went quiet: the import has the interpreter to itself
                        continue
                    await self._wake.wait()
                    self._wake = anyio.Event()
                reading.cancel_scope.cancel()  # a read under way loses nothing (`WireStream.read_line`)
                self.calm.set()
                if not started:
                    start_sdk()

    def _update_calm(self) -> None:
        if self._needs_sdk or self._ended or (self._running == 0 and not self._inbox):
            self.calm.set()
        else:
            self.calm.clear()

    async def _woken_within(self, seconds: float) -> bool:
        """Whether a line or the end of a call came within `seconds` (the wake is then left set)."""
        with anyio.move_on_after(seconds):
            await self._wake.wait()
        return self._wake.is_set()

    async def _while_answering(self, grace: EndOfInputGrace) -> None:
        """Until no call runs, or `grace` runs out: each call that ends gives the others its idle time again."""
        while self._running:
            left = grace.left(time.monotonic())
            if left <= 0:
                return
            if await self._woken_within(left):
                self._wake = anyio.Event()
                grace.answered(time.monotonic())

    async def _pump(self) -> None:
        while True:
            try:
                line = await self._stream.read_line()
            except EOFError:
                self._ended = True
                self._wake.set()
                return
            self._inbox.append(line)
            self._update_calm()
            self._wake.set()

    async def _wake_when_set(self, event: anyio.Event) -> None:
        await event.wait()
        self._wake.set()

    async def _take(self, line: bytes | None, calls: TaskGroup) -> None:
        """One line, in arrival order: a snapshot answer, a call taken, a cancellation, or kept for the SDK."""
        if line is TOO_LARGE:
            self._keep(line)
            return
        if self._verdicts:
            answered = self._verdicts.popleft()
        else:
            answer = self._answers.answer(line)
            if answer is not None:
                await self._stream.say(answer)
            answered = answer is not None
        if answered:
            self._entries.append(line)  # the SDK is fed it too, so its state is what it would have been
            return
        if not line.strip():
            return  # the SDK's stdio skips blank lines too
        message = self._parsed(line)
        if message is None:
            self._keep(line)
            return
        if message == {"jsonrpc": "2.0", "method": "notifications/initialized"} and self._answers.version is not None:
            self._initialized = True
            self._entries.append(line)
            return
        cancelled = _cancelled_id(message)
        if cancelled is not None and cancelled in self._calls:
            self._cancel(self._calls[cancelled], line)
            return
        taken = call_params(message) if self._serves_calls() else None
        if taken is None:
            self._keep(line)
            return
        request_id = message["id"]
        if request_id in self._calls and self._calls[request_id].state == "running":
            detail = f"request id {request_id!r} is already in flight"  # as the SDK's stdio refuses it
            await self._stream.say(error_line(INVALID_REQUEST, "Invalid Request", request_id, detail))
            return
        call = self._calls[request_id] = _Call(line, request_id)
        self._entries.append(call)
        self._running += 1
        self._update_calm()
        calls.start_soon(self._run, call, *taken)

    def _keep(self, line: bytes | None) -> None:
        """A line for the SDK: from here on every call waits for it too (the order of calls is kept)."""
        self._open = False
        self._needs_sdk = True
        self._entries.append(line)

    @staticmethod
    def _parsed(line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return None
        return message if isinstance(message, dict) and message.get("jsonrpc") == "2.0" else None

    def _serves_calls(self) -> bool:
        """After a handshake the snapshot answered, for a client that did not declare `roots` (asked first)."""
        capabilities = self._answers.client_capabilities
        if not self._open or not self._initialized or capabilities is None or "roots" in capabilities:
            return False
        gate = self._pipeline.gate
        return not ("elicitation" in capabilities and gate is not None and gate.hooks)

    def _cancel(self, call: _Call, line: bytes) -> None:
        if call.state == "running":
            call.scope.cancel()  # a cancelled request is not answered, as by the SDK
            call.state = "cancelled"
            self.cancelled += 1
        elif call.state == "deferred":
            self._keep(line)  # its request goes to the SDK, so does this

    async def _ask(self, question: Question) -> bool | None:
        """The SDK's asker where the client cannot be asked (None); else the call goes to the SDK, which asks."""
        if "elicitation" in (self._answers.client_capabilities or {}):
            raise AnswerNeeded(question)
        return None

    async def _run(self, call: _Call, name: str, arguments: dict[str, Any]) -> None:
        try:
            with call.scope:
                self._session.roots_wanted = False  # the client has no roots to ask for (`_serves_calls`)
                try:
                    output = await self._pipeline.run(self._session, name, arguments, ask=self._ask)
                except AnswerNeeded:
                    call.state = "deferred"
                    self._open, self._needs_sdk = False, True
                    return
                response = {"jsonrpc": "2.0", "id": call.request_id, "result": call_result(output)}
                try:
                    data = json.dumps(response).encode() + b"\n"
                except (TypeError, ValueError):  # a detail JSON cannot carry: the SDK runs the (read-only) call
                    logger.warning("an early %s result could not be written; the SDK answers it", name)
                    call.state = "deferred"
                    self._open, self._needs_sdk = False, True
                    return
                call.state = "answered"
                self.answered += 1
                await self._stream.say(data)
        finally:
            self._running -= 1
            self._wake.set()


async def serve_early(
    early: EarlyStart,
    pipeline: Pipeline | EarlyPipelines,
    settings: Settings,
    load_sdk: Callable[[], None],
    hand_over: Callable[[CodeSession, WireStream], Awaitable[None]],
) -> int:
    """Serve stdio from a snapshot start: early calls while `load_sdk` runs in a thread, then `hand_over`.

    `hand_over(session, stream)` serves the SDK session on the stream, carrying the session on. Returns the
    exit status as `stdio.serve_stdio` does.
    """
    fds = early.wire_in, early.wire_out, early.saved_in, early.saved_out

    async def serve() -> None:
        async with opened_wire(fds, early.buffered) as stream:
            session = CodeSession(settings)
            handed = False
            try:
                sdk_ready = anyio.Event()
                async with anyio.create_task_group() as tg:

                    def load_taking_turns() -> None:
                        with taking_turns(calls.calm) as turns:
                            load_sdk()
                        logger.debug("the SDK's import gave way to early calls %d time(s)", turns.pauses)

                    async def load() -> None:
                        await anyio.to_thread.run_sync(load_taking_turns)
                        sdk_ready.set()

                    def start_loading() -> None:
                        tg.start_soon(load)

                    calls = EarlyCalls(early, pipeline, session, stream)
                    await calls.serve(sdk_ready, start_loading)
                    await sdk_ready.wait()  # the input may have ended first
                done = calls.answered, calls.cancelled
                logger.info("answered before the SDK was ready: %d call(s); %d cancelled", *done)
                stream.held.extend(calls.for_sdk())
                handed = True
                await hand_over(session, stream)
            finally:
                if not handed:
                    with anyio.CancelScope(shield=True):
                        await session.aclose()

    stopped_by = await until_stopped(serve)
    return 128 + stopped_by if stopped_by is not None else 0
