"""Read, Glob, Grep and Bash answered on stdio without the SDK's request path, for the whole session (issue 38).

Per small Read, the SDK's path (one `validate_json`, three `model_validate`, the result's `TypeAdapter` and
`to_json`, and our `to_call_result`) costs more than the Read itself. Here a `tools/call` line for one of
those tools is parsed with `json.loads`, run through the server's own pipeline, session and permission gate,
and answered with `json.dumps` of `call_result` (the SDK's result as plain JSON; a test holds the answers
equal); every other line goes to the SDK session as before (`stdio.py`).

Order is kept across both: every call is numbered in the dispatcher when its line is read, and an SDK
call's handler takes its number up by the request id (`Dispatcher.reserve`/`claim`), so the dispatcher's
rule (reads side by side, writes and Bash alone) holds by line arrival, whichever path is quicker. Bash
is here for the same reason (the SDK's path was ~1.1 ms of an `echo hi`'s ~2.8 ms of server CPU); its
timeout, background jobs and process-group cleanup are the tool's own, so they are the same on either path. Each
answer of either path is written whole by one write to the same writer, so lines never interleave. The
lane answers its calls in line order: an answer waits for those of the calls taken before it (not for the
SDK's). Answers ready together share a write (each write wakes the client), bounded in time so that a burst
streams (`STREAM_AFTER_S`).

Fail closed: a line is taken only when it is fully understood (no `_meta`: a progress token or the
2026-07-28 envelope goes to the SDK), and only while
- the SDK has accepted the one `initialize` (its answer is seen going out);
- the client declared no `roots`, or the session has them (else the SDK asks for them first);
- the session's log messages have a place (an SDK call bound it, `client_log`), so a warning logged
  during a call reaches the client as on the SDK path;
- not (PreToolUse hooks and a client that can be asked): handing a call over would run them twice.
A permission question for a client that declared elicitation hands the call to the SDK before it had
any effect: its number and the slot it holds are kept for the SDK's handler (`Dispatcher.hold`), which
asks. A `notifications/cancelled` for a call here cancels it, unanswered, as the SDK does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.shared.dispatcher import coerce_request_id

from mcp_codetools.dispatcher import Ticket
from mcp_codetools.pipeline import error_output
from mcp_codetools.policy.gate import AnswerNeeded, Asker, Question
from mcp_codetools.protocol.call_result import call_result
from mcp_codetools.protocol.early_calls import EARLY_TOOLS, call_params
from mcp_codetools.protocol.server import CodeToolsServer, to_call_result
from mcp_codetools.tools.base import ToolOutput

logger = logging.getLogger(__name__)

MAX_LINE = 64 * 1024
"""Longer lines go to the SDK unread here: a Read, Glob or Grep is far shorter, and a 10 MB Write or Edit
would pay for a second parse."""

LANE_TOOLS = EARLY_TOOLS | {"Bash"}
"""What the lane runs: the early calls' tools, and Bash (a progress token, `_meta`, goes to the SDK, which reports)."""

STREAM_AFTER_S = 0.001
"""How long a ready answer may wait for others to join its write. A burst's calls run in one turn of the loop;
without a bound its answers all went out at the end, and the client, idle meanwhile, parsed them only then."""

CLOSE_BOUND_S = 5.0
"""How long the calls cancelled at the end may take to unwind (a Grep ends its rg) before they are left."""

State = Literal["running", "answered", "cancelled", "handed", "dropped"]
RequestId = str | int


@dataclass(eq=False)
class _Call:
    line: bytes
    request_id: RequestId
    key: RequestId
    """The id as the SDK correlates it (`"7"` is 7), for cancellations and the dispatcher."""
    ticket: Ticket
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    state: State = "running"
    answer: bytes | None = None


@dataclass
class Wiring:
    """What the lane uses of the stdio session it runs in."""

    say: Callable[[bytes], Awaitable[None]]
    """Writes whole lines."""
    begin: Callable[[RequestId], bool]
    """Marks a request in flight; False if its id is in flight already (the SDK's path refuses it then)."""
    end: Callable[[RequestId], None]
    hand_over: Callable[[bytes], Awaitable[None]]
    """Feeds a request line to the SDK session, bypassing the lane (the id stays in flight)."""


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


# Made once: `json.loads` and `json.dumps` with options build a decoder or encoder at every call.
_DECODER = json.JSONDecoder(parse_constant=_not_json)  # NaN and Infinity are not JSON: the SDK refuses them
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def answer_line(request_id: RequestId, output: ToolOutput) -> bytes:
    """The response line for a call's output: plain JSON, or the SDK's models for a detail JSON cannot carry."""
    response = {"jsonrpc": "2.0", "id": request_id, "result": call_result(output)}
    try:
        return _ENCODER.encode(response).encode() + b"\n"
    except (TypeError, ValueError):  # a value json cannot write, or a lone surrogate: as the SDK writes it
        logger.debug("a fast-lane answer is written through the SDK's models", exc_info=True)
    result = to_call_result(output).model_dump(by_alias=True, mode="json", exclude_none=True)
    message = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


class FastLane:
    """Takes the `tools/call` lines it can answer on its own; notes the rest on their way to the SDK."""

    def __init__(self, app: CodeToolsServer, wiring: Wiring) -> None:
        self._app = app
        self._pipeline = app.pipeline
        self._wiring = wiring
        self._initialize: RequestId | None = None
        self._capabilities: dict[str, Any] = {}
        self._open = False
        self._shut = False
        """A second `initialize` came: the lane stays closed (the SDK decides what the connection is)."""
        self._calls: dict[RequestId, _Call] = {}
        self._reserved: set[RequestId] = set()
        self._order: deque[_Call] = deque()
        """The calls taken, in line order, until their answers are written (or they end unanswered)."""
        self._group: list[_Call] = []
        self._group_since = 0.0
        self._flusher = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.answered = 0
        self.handed = 0
        """Calls handed to the SDK because they came to a question."""
        self.cancelled = 0

    def take(self, line: bytes) -> bool:
        """Start the call on `line` here and return True; False: the line is the SDK's."""
        if not self._open or len(line) > MAX_LINE or b'"tools/call"' not in line:
            return False
        try:
            message = _DECODER.decode(line.decode())  # UTF-8, strictly, as the SDK reads it
        except (ValueError, RecursionError):
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        taken = call_params(message, LANE_TOOLS)
        if taken is None or not self._serves():
            return False
        request_id = message["id"]
        if not self._wiring.begin(request_id):
            return False
        name, arguments = taken
        key = coerce_request_id(request_id)
        ticket = self._app.stdio_session().dispatcher.admit(name)
        call = self._calls[key] = _Call(line, request_id, key, ticket)
        self._order.append(call)
        # A plain asyncio task: a task group's start_soon costs ~10x as much, a tenth of a small Read's server time.
        task = asyncio.get_running_loop().create_task(self._run(call, name, arguments))
        self._tasks.add(task)
        task.add_done_callback(self._ended)
        return True

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("a fast-lane call failed", exc_info=task.exception())

    async def aclose(self) -> None:
        """Cancel the calls still running (the input has ended, or the server stops) and wait for them, bounded."""
        self._open = False
        for call in self._calls.values():
            call.scope.cancel()
        with anyio.move_on_after(CLOSE_BOUND_S, shield=True):
            while self._tasks:
                await asyncio.wait(set(self._tasks))
        for task in self._tasks:
            task.cancel()

    def _serves(self) -> bool:
        session = self._app.stdio_session()
        if not self._app.client_log.knows(session):
            return False
        if "roots" in self._capabilities:
            if session.roots_wanted:
                return False
        else:
            session.roots_wanted = False  # nothing to ask for (as `sync_roots` notes at the SDK's first call)
        gate = self._pipeline.gate
        return not ("elicitation" in self._capabilities and gate is not None and gate.hooks)

    def inbound(self, message: types.JSONRPCMessage) -> bool:
        """Note a message on its way to the SDK, in arrival order; True: it was this lane's (do not pass it on)."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method == "tools/call":
                name = (message.params or {}).get("name")
                key = coerce_request_id(message.id)
                self._app.stdio_session().dispatcher.reserve(key, name if isinstance(name, str) else "?")
                self._reserved.add(key)
            elif message.method == "initialize":
                if self._initialize is None and not self._shut:
                    self._initialize = message.id
                    capabilities = (message.params or {}).get("capabilities")
                    self._capabilities = capabilities if isinstance(capabilities, dict) else {}
                else:
                    self._shut, self._open = True, False
        elif isinstance(message, types.JSONRPCNotification):
            if message.method == "notifications/cancelled":
                cancelled = (message.params or {}).get("requestId")
                if isinstance(cancelled, bool) or not isinstance(cancelled, str | int):
                    return False
                return self._cancel(coerce_request_id(cancelled))
            if message.method == "notifications/roots/list_changed":
                self._app.stdio_session().roots_wanted = True  # now, not when the SDK's middleware gets to it
        return False

    def outbound(self, message: types.JSONRPCMessage) -> None:
        """Note a message the SDK sends: an answer frees a number no handler took; `initialize`'s opens the lane."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError) or message.id is None:
            return
        key = coerce_request_id(message.id)
        if key in self._reserved:
            self._reserved.discard(key)
            self._app.stdio_session().dispatcher.release(key)
        if message.id == self._initialize and not self._shut:
            self._open = isinstance(message, types.JSONRPCResponse)

    def _cancel(self, key: RequestId) -> bool:
        call = self._calls.get(key)
        if call is not None and call.state == "running":
            call.scope.cancel()
            call.state = "cancelled"
            self.cancelled += 1
            self._wiring.end(call.request_id)
            return True
        if key in self._reserved:  # the SDK cancels its handler; one that never started takes no number
            self._reserved.discard(key)
            self._app.stdio_session().dispatcher.release(key)
        return False

    def _asker(self, call: _Call) -> Asker:
        async def ask(question: Question) -> bool | None:
            if "elicitation" not in self._capabilities:
                return None  # as the SDK's asker for a client that cannot be asked
            self._app.stdio_session().dispatcher.hold(call.ticket, call.key)
            self._reserved.add(call.key)
            raise AnswerNeeded(question)

        return ask

    async def _answer(self) -> None:
        """Write the answers ready at the head of the line order: each waits for those of calls taken before it.

        Each pipe write wakes the client, so answers ready together share one write: the first task to find
        no flusher waits one turn for the calls ending in the same turn of the loop to join. But a burst's calls all
        run in one turn, so a group is also written as soon as its first answer has waited `STREAM_AFTER_S`:
        the client parses those while the server runs the rest.
        """
        ready = self._ready()
        if not ready:
            return
        if not self._group:
            self._group_since = time.perf_counter()
        self._group.extend(ready)
        if self._flusher and time.perf_counter() - self._group_since < STREAM_AFTER_S:
            return  # the group's flusher writes it at the end of this turn
        if not self._flusher and self._calls:  # others may end in this turn: let them join
            self._flusher = True
            try:
                await asyncio.sleep(0)
            finally:
                self._flusher = False
        await self._write()

    def _ready(self) -> list[_Call]:
        ready = []
        while self._order and self._order[0].state != "running":
            call = self._order.popleft()
            if call.answer is not None:
                ready.append(call)
        return ready

    async def _write(self) -> None:
        group, self._group = self._group, []
        if not group:
            return
        data = b"".join(call.answer or b"" for call in group)
        try:
            await self._wiring.say(data)
        finally:
            for call in group:
                self._wiring.end(call.request_id)

    async def _run(self, call: _Call, name: str, arguments: dict[str, Any]) -> None:
        session = self._app.stdio_session()
        try:
            with call.scope, self._app.client_log.owned_by(session):
                try:
                    output = await self._pipeline.run(
                        session, name, arguments, ask=self._asker(call), ticket=call.ticket
                    )
                except AnswerNeeded:
                    call.state = "handed"
                else:
                    try:
                        call.answer = answer_line(call.request_id, output)
                    except Exception:
                        logger.exception("the answer of %s could not be written", name)
                        message = f"{name} ran, but its result could not be written; the details are in the server log."
                        call.answer = answer_line(call.request_id, error_output("internal_error", message))
                    call.state = "answered"
                    self.answered += 1
        finally:
            if self._calls.get(call.key) is call:
                del self._calls[call.key]
            if call.state == "running":  # it failed or was stopped unanswered: the answers behind it go on
                call.state = "dropped"
                self._wiring.end(call.request_id)
        await self._answer()
        if call.state == "handed":
            self.handed += 1
            await self._wiring.hand_over(call.line)
