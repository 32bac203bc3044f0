"""The six steps of one tool call, top to bottom.

1. Definition: each tool brings its input model, description and hints (`tools/`).
2. Lookup by name; an unknown name is answered `No such tool available: <name>`.
3. Structure check: the arguments against the tool's pydantic model, each problem named plainly.
   The call then takes its place in the dispatcher's order (`dispatcher.py`); inside its slot:
4. Permission (`check_permission`): every path the call touches must resolve inside a workspace root.
   This runs before the state checks on purpose: those read the file, and reading a file outside the
   roots to decide that a string is "not found" would already leak it.
5. State check (`validate_input`: the file was read, has not changed, the string is there), then
   execution (`call`), which gets what the state check loaded as a typed value, never loading it again.
6. Result mapping: a `ToolOutput` (text for the model, details in meta), errors included.

Every failure a model can cause ends as an error result with its own message. Anything else is logged
with its traceback and answered as an internal error; cancellation always propagates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from mcp_codetools.audit import audit_log_for
from mcp_codetools.audit import record as audit_record
from mcp_codetools.dispatcher import Ticket
from mcp_codetools.errors import ErrorCode, InvalidInputError, ToolError
from mcp_codetools.policy.gate import AnswerNeeded, Asker, PermissionGate
from mcp_codetools.policy.hiding import Hider
from mcp_codetools.session import CodeSession
from mcp_codetools.tools.base import CallContext, ProgressFn, Tool, ToolInput, ToolOutput, rule_families

logger = logging.getLogger(__name__)

META_KEY = "codetools/result"
PROGRESS_INTERVAL_S = 2.0


class Pipeline:
    """Runs calls for the tools it was built with."""

    def __init__(self, tools: Sequence[Tool[Any]], gate: PermissionGate | None = None) -> None:
        self.tools: dict[str, Tool[Any]] = {tool.name: tool for tool in tools}
        # The policy sits below the tools, so it learns here which tools its rule families cover.
        self.gate = gate.for_tools(rule_families(tools)) if gate is not None else None
        """Rules, modes and hooks (`policy/`); None: path confinement is the whole permission step."""

    async def run(
        self,
        session: CodeSession,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        progress: ProgressFn | None = None,
        ask: Asker | None = None,
        ticket: Ticket | None = None,
    ) -> ToolOutput:
        """Run one call through every step; a `ToolError` or a bug ends as an error output, `AnswerNeeded` goes up.

        `ticket`: the call's place, numbered when its request was read (`Dispatcher.reserve`); else it is
        numbered here.
        """
        # Numbered first, before any await, so the order is the order of arrival.
        if ticket is None:
            ticket = session.dispatcher.admit(name)
        started = time.perf_counter()
        try:
            output = await self._run(session, ticket, name, arguments, progress, ask)
        except AnswerNeeded:
            raise  # the server asks the client and the call comes again (2026-07-28's input_required round)
        except ToolError as exc:
            output = error_output(exc.code, exc.message)
        except Exception:
            logger.exception("tool %s raised unexpectedly (call #%d)", name, ticket.seq)
            output = error_output(
                "internal_error",
                f"{name} failed with an internal error; the details are in the server log. "
                "The call had no effect you can rely on: check the file before trying again.",
            )
        finally:
            session.dispatcher.discard(ticket)
        total_ms = (time.perf_counter() - started) * 1000
        # A ticket numbered when stdio read its request has waited since then: the split stays within this run.
        queued_ms = min(ticket.queued_ms, total_ms) if ticket.started else total_ms
        output.meta["timing"] = {
            "seq": ticket.seq,
            "queuedMs": round(queued_ms, 3),
            "runMs": round(total_ms - queued_ms, 3),
        }
        logger.debug("call #%d %s: queued %.2f ms, ran %.2f ms", ticket.seq, name, queued_ms, total_ms - queued_ms)
        audit = audit_log_for(session.settings)
        if audit is not None:
            code = output.meta.get("errorCode")
            audit.write(
                audit_record(
                    session=session.id,
                    tool=name,
                    arguments=arguments,
                    error_code=code if isinstance(code, str) else None,
                    is_error=output.is_error,
                    duration_ms=total_ms,
                )
            )
        return output

    async def _run(
        self,
        session: CodeSession,
        ticket: Ticket,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress: ProgressFn | None,
        ask: Asker | None,
    ) -> ToolOutput:
        tool = self.tools.get(name)
        if tool is None:
            async with session.dispatcher.slot(ticket, safe=False):
                return error_output("unknown_tool", f"No such tool available: {name}")
        try:
            args = tool.input_model.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            async with session.dispatcher.slot(ticket, safe=False):
                return error_output(InvalidInputError.code, format_validation_error(name, exc))
        await _classify(tool, args)
        safe = _decide_safety(tool, args)
        if progress is None:
            ctx = CallContext(session=session, changes=ticket.changes, ask=ask)
            async with session.dispatcher.slot(ticket, safe=safe):
                return await self._execute(tool, args, ctx)
        reporter = ProgressReporter(progress)
        ctx = CallContext(session=session, progress=reporter, changes=ticket.changes, ask=ask)
        async with anyio.create_task_group() as tg:
            tg.start_soon(reporter.keepalive, ticket)
            try:
                async with session.dispatcher.slot(ticket, safe=safe):
                    return await self._execute(tool, args, ctx)
            finally:
                tg.cancel_scope.cancel()
        raise AssertionError("unreachable: the slot either returns or raises")

    async def _execute(self, tool: Tool[Any], args: ToolInput, ctx: CallContext) -> ToolOutput:
        try:
            await check_permission(tool, args, ctx, self.gate)
            prepared = await tool.validate_input(args, ctx)
            output = await tool.call(args, ctx, prepared)
        finally:
            for pinned in ctx.pinned.values():  # the ones the tool did not take (a refusal, an error)
                pinned.close()
            ctx.pinned.clear()
        if self.gate is not None and self.gate.hooks:
            notes = await self.gate.after(
                tool.permission_facts(args, ctx), _hook_input(args), output.text, session_id=ctx.session.id
            )
            if notes:
                output.text += "\n\n" + "\n".join(notes)
        return output


async def check_permission(tool: Tool[Any], args: ToolInput, ctx: CallContext, gate: PermissionGate | None) -> None:
    """Step 4: may this call go ahead?

    Every path it names must resolve inside the roots; then the rules, the mode and the PreToolUse hooks
    decide, asking the user when they say so.

    The resolved paths are kept in `ctx.paths`, so nothing later resolves them again, and the rules judge
    real paths, never the spelling the model chose.

    Raises:
        PermissionDeniedError: a path lies outside the roots, or a rule, the mode, a hook or the user said no.
        InvalidInputError: a path cannot name a file at all (empty, a NUL byte, too long).
    """
    ctx.paths.update(resolve_paths(tool, args, ctx))
    if gate is not None:
        facts = tool.permission_facts(args, ctx)
        # The arguments are copied for hooks only when there are hooks: a 50 MB Write would pay twice.
        tool_input = _hook_input(args) if gate.hooks else {}
        roots = ctx.session.workspace.roots
        await gate.check(
            facts,
            tool_input,
            session_id=ctx.session.id,
            ask=ctx.ask,
            roots=roots,
            input_json=lambda: args.model_dump_json(by_alias=True).encode(),
        )
        ctx.policy = gate.policy_for(roots)
        ctx.hidden = Hider.for_tool(ctx.policy, tool.name)  # Grep and Glob leave out what deny rules hide


def _hook_input(args: ToolInput) -> dict[str, Any]:
    return args.model_dump(mode="json", by_alias=True, exclude_none=True)


def resolve_paths(tool: Tool[Any], args: ToolInput, ctx: CallContext) -> dict[str, Path]:
    """The tool's path fields, each resolved and confined (a missing optional one by the tool's default).

    For a tool that `reads_pinned`, the files the resolver held go to `ctx.pinned` (closed by `_execute`).
    """
    for_read = bool(tool.path_fields) and tool.is_read_only(args)
    paths: dict[str, Path] = {}
    for field_name in tool.path_fields:
        raw = getattr(args, field_name, None)
        if raw is None:
            raw = tool.default_path(field_name, ctx.session)
        if raw is None:
            continue
        if tool.reads_pinned:
            paths[field_name], pinned = ctx.session.resolve_pinned(raw, field=field_name, for_read=for_read)
            if pinned is not None:
                ctx.pinned[field_name] = pinned
        else:
            paths[field_name] = ctx.session.resolve(raw, field=field_name, for_read=for_read)
    return paths


def error_output(code: ErrorCode, message: str) -> ToolOutput:
    """A failed call as the model reads it: the message, and the code in the meta (table in `errors`)."""
    return ToolOutput(message, meta={"errorCode": code}, is_error=True)


async def _classify(tool: Tool[Any], args: ToolInput) -> None:
    # The ticket is not ready yet, so later calls of the session wait for it and the order holds.
    try:
        await tool.classify(args)
    except Exception:
        logger.exception("classify of %s raised; its questions are answered on the event loop", tool.name)


def _decide_safety(tool: Tool[Any], args: ToolInput) -> bool:
    try:
        return bool(tool.is_concurrency_safe(args))
    except Exception:
        logger.exception("is_concurrency_safe of %s raised; treating the call as not safe", tool.name)
        return False


class ProgressReporter:
    """One call's progress stream: values only ever increase, and silence never lasts past the interval."""

    def __init__(self, send: ProgressFn) -> None:
        self._send = send
        self._last = 0.0
        self._sent_at = time.monotonic()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """Send a progress notification; values only go up, and a failed send is logged, not raised."""
        value = progress if progress > self._last else self._last + 1
        self._last = value
        self._sent_at = time.monotonic()
        try:
            await self._send(value, total, message)
        except Exception:
            logger.debug("progress notification failed", exc_info=True)

    async def keepalive(self, ticket: Ticket) -> None:
        """Tell a client that resets its timeout on progress that the call is still alive."""
        while True:
            await anyio.sleep(max(0.0, self._sent_at + PROGRESS_INTERVAL_S - time.monotonic()))
            if time.monotonic() - self._sent_at >= PROGRESS_INTERVAL_S:
                state = "running" if ticket.started else "waiting for earlier calls"
                await self(self._last + 1, None, f"{ticket.label}: {state}")


def format_validation_error(tool_name: str, exc: ValidationError) -> str:
    """Pydantic's errors as one message naming each bad argument, in Claude Code's wording."""
    problems = [_describe_problem(err) for err in exc.errors(include_url=False)]
    head = f"{tool_name} failed due to the following issue{'s' if len(problems) != 1 else ''}:"
    return "\n".join([head, *problems])


_TYPE_NAMES = {
    "int": "an integer",
    "string": "a string",
    "bool": "a boolean",
    "float": "a number",
    "list": "a list",
    "dict": "an object",
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _describe_problem(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(part) for part in err.get("loc", ())) or "(arguments)"
    kind = str(err.get("type", ""))
    value = err.get("input")
    if kind == "missing":
        return f"The required parameter `{loc}` is missing."
    if kind == "extra_forbidden":
        return f"An unexpected parameter `{loc}` was provided."
    for prefix, expected in _TYPE_NAMES.items():
        if kind.startswith(prefix + "_") and ("type" in kind or "parsing" in kind):
            return f"The parameter `{loc}` must be {expected}, but a {_json_type(value)} was provided."
    return f"The parameter `{loc}` is invalid: {err.get('msg', 'invalid value')}."
