"""MCP wiring: `tools/list` from the tool registry, `tools/call` into the pipeline.

The one module where MCP types appear.
"""

from __future__ import annotations

import base64
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace

from mcp_codetools import __version__
from mcp_codetools.dispatcher import Ticket
from mcp_codetools.files.paths import Workspace
from mcp_codetools.pipeline import META_KEY, Pipeline, error_output
from mcp_codetools.policy.gate import AnswerNeeded, PermissionGate
from mcp_codetools.protocol.call_result import STATE_ARG
from mcp_codetools.protocol.client_log import ClientLog
from mcp_codetools.protocol.client_roots import roots_changed, sync_roots
from mcp_codetools.protocol.elicit import input_required, permission_asker
from mcp_codetools.protocol.http_sessions import SessionEnded, SessionRegistry
from mcp_codetools.protocol.state_handles import HandleError, StateRegistry, principal_of
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import DEFAULT_SESSION_IDLE_TIMEOUT_S, Settings
from mcp_codetools.tools import Tool, default_tools
from mcp_codetools.tools.base import ProgressFn, ToolOutput

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Code tools confined to the workspace roots. Read a file before you Edit or Write it. "
    "Independent reads and searches may be sent together; they run in parallel, while edits and "
    "commands run one at a time in the order sent."
)


OTEL_MIDDLEWARE = "OpenTelemetryMiddleware"
"""The SDK's span-per-request middleware, named rather than imported: it lives in a private module."""


def tracing_configured() -> bool:
    """Whether an OpenTelemetry tracer provider is installed (an SDK, `opentelemetry-instrument`), so spans record."""
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


STATE_HEADER = "State-Id"
"""Its `x-mcp-header` (SEP-2243): 2026-07-28 clients mirror it into `Mcp-Param-State-Id`, which a load balancer
routes by (deploy/haproxy); the SDK refuses a call whose header and argument disagree, or lacks the header.
Only tools that keep state declare it (`Tool.keeps_state`); a search takes none, and one sent anyway is ignored."""


def _lifetime(settings: Settings | None) -> str:
    seconds = settings.session_idle_timeout_s if settings is not None else DEFAULT_SESSION_IDLE_TIMEOUT_S
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


HANDLE_EXPLAINED = frozenset({"Read", "Bash"})
"""Where the handle's lifetime is said in full (Bash makes the jobs); the rest point there (token budget)."""


def with_handles(tool: Tool[Any], schema: dict[str, Any], settings: Settings | None) -> dict[str, Any]:
    """The input schema with the handle a stateless (2026-07-28 HTTP) client passes back, and its lifetime.

    One listing for every client and era: SEP-2567 wants lists that never vary per connection, so the
    argument is there on stdio too, where it is ignored. A tool that keeps no state (a search: absolute
    paths, relative ones start at the first root) takes no handle.
    """
    if not tool.keeps_state:
        return schema
    if tool.name in HANDLE_EXPLAINED:
        text = f"2026-07-28 HTTP: the state_id a result gave; it and its jobs end after {_lifetime(settings)} unused."
    else:
        text = "As for Read."
    handle = {"type": "string", "description": text, "x-mcp-header": STATE_HEADER}
    properties = {**schema.get("properties", {}), STATE_ARG: handle}
    return {**schema, "properties": properties}


def tool_definition(tool: Tool[Any], settings: Settings | None = None) -> types.Tool:
    """The MCP `Tool` a client sees in tools/list: name, description (limits as `settings` set them), schema, hints."""
    description, schema = tool.described(settings)
    schema = with_handles(tool, schema, settings)
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=description,
        input_schema=schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=tool.open_world,
        ),
    )


def to_call_result(output: ToolOutput) -> types.CallToolResult:
    """The one place a tool's output becomes an MCP result: text and images as content, details under META_KEY.

    Whether it is an error was decided before (a ToolError in the pipeline, an exit code in Bash's output).
    `call_result.call_result` gives the same as plain JSON, for the calls answered before the SDK is imported
    (a test holds the two equal); this one builds the SDK's types directly, which costs less per call.
    """
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=output.text)]
    for index, image in enumerate(output.images):
        data = base64.b64encode(image.data).decode("ascii")
        content.append(types.ImageContent(type="image", data=data, mime_type=image.mime_type))
        if index in output.trailing:
            content.append(types.TextContent(type="text", text=output.trailing[index]))
    return types.CallToolResult(
        content=content,
        is_error=output.is_error,
        _meta={META_KEY: output.meta},
    )


_APPS: weakref.WeakKeyDictionary[Server[Any], weakref.ref[CodeToolsServer]] = weakref.WeakKeyDictionary()


def app_of(server: Server[Any]) -> CodeToolsServer | None:
    """The `CodeToolsServer` that built `server`, so stdio finds its pipeline and session (`fast_lane.py`)."""
    ref = _APPS.get(server)
    return ref() if ref is not None else None


class CodeToolsServer:
    """The server and the sessions it serves: one per HTTP session (`Mcp-Session-Id`); on stdio, the process."""

    def __init__(
        self,
        settings: Settings,
        tools: list[Tool[Any]] | None = None,
        gate: PermissionGate | None = None,
        *,
        pipeline: Pipeline | None = None,
        local: CodeSession | None = None,
    ) -> None:
        """The server over `settings`; its pipeline is built from `tools` and `gate`, or given.

        `pipeline` and `local`: the pipeline and the stdio session that answered calls before the SDK was
        imported (`early_calls.py`), carried on.
        """
        Workspace(settings.roots)  # refuse a bad root at start-up, not on the first call
        self.settings = settings
        self.pipeline = pipeline or Pipeline(tools if tools is not None else default_tools(), gate)
        self._definitions = [tool_definition(tool, settings) for tool in self.pipeline.tools.values()]
        self._schemas = {tool.name: tool.input_schema for tool in self._definitions}
        self._local: CodeSession | None = local
        self.http_sessions = SessionRegistry(settings)
        self.http_states = StateRegistry(settings)
        """2026-07-28 HTTP clients' states, reached through handles (`state_handles`)."""
        self.serves_http = False
        """Set by the HTTP server before it starts: the lifespan then closes idle HTTP sessions."""
        self.server: Server[Any] = Server(
            "mcp-codetools",
            version=__version__,
            title="Code tools",
            instructions=INSTRUCTIONS,
            lifespan=self._lifespan,
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
        )
        if not tracing_configured():
            # The SDK's OpenTelemetry middleware opens a span per request even when nothing records it:
            # 0.05-0.15 ms of a 0.6 ms Read. It stays when a tracer provider is installed.
            self.server.middleware = [m for m in self.server.middleware if type(m).__name__ != OTEL_MIDDLEWARE]
        # Mcp-Param header checks (2026-07-28 HTTP) look a tool's schema up here instead of listing every tool.
        self.server.get_tool_input_schema = self._schemas.get
        self.server.middleware.append(self._follow_roots)
        self.client_log = ClientLog()
        self._serve_logging()
        _APPS[self.server] = weakref.ref(self)

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            async with anyio.create_task_group() as tg:
                if self.serves_http:
                    tg.start_soon(self.http_sessions.run_reaper)
                    tg.start_soon(self.http_states.run_reaper)
                tg.start_soon(self.client_log.run)
                yield {}
                tg.cancel_scope.cancel()
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the stdio session and every HTTP session, even while the server is being cancelled."""
        with anyio.CancelScope(shield=True):
            local, self._local = self._local, None
            if local is not None:
                await local.aclose()
            await self.http_sessions.aclose()
            await self.http_states.aclose()

    def live_sessions(self) -> list[CodeSession]:
        """Every CodeSession open now (the process's own, and one per live HTTP session)."""
        local = [self._local] if self._local is not None else []
        return local + self.http_sessions.live() + self.http_states.live()

    def stdio_session(self) -> CodeSession:
        """The process's session: the one client of stdio (or of an in-process connection)."""
        if self._local is None:
            self._local = CodeSession(self.settings)
        return self._local

    def session_for(self, ctx: ServerRequestContext[Any]) -> CodeSession:
        """The CodeSession a request belongs to, found through public SDK API only.

        Over HTTP the key is the `Mcp-Session-Id` header of the request (`ctx.request` is the HTTP request
        there): it is the SDK's own identity for a handshake session, minted at `initialize` (128 random
        bits), the one thing every later request of that client carries, and answered with 404 by the SDK
        once the session is gone; its end (DELETE, idle) is seen by the HTTP layer, which closes the
        CodeSession. `ctx.session._connection` named the same thing through a private attribute. Per-request objects
        (`ctx.session` is a new `ServerSession` for every request) cannot be keys, and 2026-07-28 requests
        carry no client identity at all: those find their state through handles (`_call_stateless`). Without
        an HTTP request (stdio, or an in-process client) one process serves one client, so the process has
        one session.
        """
        request = ctx.request
        if request is None:
            return self.stdio_session()
        key = request.headers.get(MCP_SESSION_ID_HEADER)
        if not key:
            raise MCPError(code=types.INVALID_REQUEST, message="this server needs an MCP session (Mcp-Session-Id)")
        try:
            return self.http_sessions.session(key)
        except SessionEnded:
            raise MCPError(
                code=types.INVALID_REQUEST, message="this MCP session has ended; start a new one (initialize)"
            ) from None

    def _serve_logging(self) -> None:
        """The `logging` capability: `logging/setLevel` (handshake era) sets what `client_log` sends a session.

        Registered with `add_request_handler`, which also makes the SDK declare the capability; the
        constructor's `on_set_logging_level` would do the same with a deprecation warning at every start.
        """

        async def set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
            self.client_log.set_level(self.session_for(ctx), ctx, params.level)
            return types.EmptyResult()

        self.server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)

    async def _follow_roots(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """After `notifications/roots/list_changed` the session asks for the roots again before its next call."""
        if roots_changed(ctx):
            try:
                self.session_for(ctx).roots_wanted = True
            except MCPError:
                pass  # a notification outside any session changes nothing
        return await call_next(ctx)

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._definitions)

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        arguments = dict(params.arguments) if params.arguments is not None else None
        state_id = arguments.pop(STATE_ARG, None) if arguments is not None else None
        params = params.model_copy(update={"arguments": arguments})
        if ctx.request is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await self._call(ctx, params, self.session_for(ctx))  # a session (or the process) holds the state
        return await self._call_stateless(ctx, params, state_id)

    async def _call_stateless(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, state_id: object
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A 2026-07-28 HTTP call: in the state its handle names, or in a new one kept only if it holds something."""
        assert ctx.request is not None
        principal = principal_of(ctx.request.headers.get("authorization"))
        states = self.http_states
        tool = self.pipeline.tools.get(params.name)
        stateless = tool is not None and not tool.keeps_state
        if stateless:
            # Its schema declares no state_id, so a client does not mirror one into the header a load balancer
            # routes by: honouring it would send the call to a replica that may not hold the state.
            state_id = None
        job_arg = tool.job_arg if tool is not None else None
        job_id = (params.arguments or {}).get(job_arg) if job_arg else None
        minted = False
        try:
            if isinstance(state_id, str) and state_id.strip():
                key = state_id.strip()
                session = states.state(key, principal)
            else:
                key, session = states.mint(principal, beyond_cap=stateless)
                minted = True
            if isinstance(job_id, str) and job_id.strip() not in session.job_ids():
                elsewhere = states.job_elsewhere(job_id)
                if elsewhere is not None:
                    if minted:
                        await states.end(key, "the call named another state's shell")
                    raise elsewhere
        except HandleError as exc:
            output = error_output("invalid_input", str(exc))
            output.meta["handleError"] = type(exc).kind
            return to_call_result(output)
        with states.activity(key):
            result = await self._call(ctx, params, session)
        if minted and isinstance(result, types.CallToolResult) and _error_code(result) == "file_not_read":
            result.content.append(types.TextContent(type="text", text=NO_STATE_NOTE))
        if minted:
            if isinstance(result, types.CallToolResult) and session.holds_state():
                result.content.append(types.TextContent(type="text", text=_state_note(key)))
                result.meta = {**(result.meta or {}), STATE_META_KEY: key}
            else:  # nothing to keep; an `input_required` round is sent again whole, and starts afresh then
                await states.end(key, "the call left nothing to keep")
        return result

    async def _call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, session: CodeSession
    ) -> types.CallToolResult | types.InputRequiredResult:
        asking = await sync_roots(ctx, params, session)
        if asking is not None:
            return asking
        try:
            async with self.client_log.request(session, ctx):
                output = await self.pipeline.run(
                    session,
                    params.name,
                    params.arguments,
                    progress=_progress_of(ctx),
                    ask=permission_asker(ctx, params),
                    ticket=_reserved_ticket(ctx, session),
                )
        except AnswerNeeded as needed:
            return input_required(needed.question)
        return to_call_result(output)


STATE_META_KEY = "codetools/stateId"
NO_STATE_NOTE = (
    "[This call passed no state_id, so it ran in a new state that has read nothing. Pass the state_id that "
    "your Read's result gave.]"
)


def _error_code(result: types.CallToolResult) -> object:
    details = (result.meta or {}).get(META_KEY)
    return details.get("errorCode") if isinstance(details, dict) else None


def _state_note(key: str) -> str:
    return (
        f"[state_id: {key}. Pass it as state_id to later calls: it keeps what you read (needed to Edit or Write "
        "a file), the working directory, file history and background shells.]"
    )


def _reserved_ticket(ctx: ServerRequestContext[Any], session: CodeSession) -> Ticket | None:
    """The place stdio gave this call when it read the request (`stdio.py`), if it did."""
    if ctx.request is not None or ctx.request_id is None:
        return None
    return session.dispatcher.claim(ctx.request_id)


def _progress_of(ctx: ServerRequestContext[Any]) -> ProgressFn | None:
    meta = ctx.meta or {}
    token = meta.get("progress_token", meta.get("progressToken"))
    if token is None:
        return None
    return ctx.session.report_progress
