"""MCP wiring: `tools/list` from the tool registry, `tools/call` into the pipeline.

The one module where MCP types appear.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from opentelemetry import trace

from mcp_codetools import __version__
from mcp_codetools.client_log import ClientLog
from mcp_codetools.client_roots import roots_changed, sync_roots
from mcp_codetools.config import Settings
from mcp_codetools.elicit import input_required, permission_asker
from mcp_codetools.files.paths import Workspace
from mcp_codetools.pipeline import META_KEY, Pipeline
from mcp_codetools.policy.gate import AnswerNeeded, PermissionGate
from mcp_codetools.session import CodeSession
from mcp_codetools.session_registry import SessionEnded, SessionRegistry
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


def tool_definition(tool: Tool[Any], settings: Settings | None = None) -> types.Tool:
    """The MCP `Tool` a client sees in tools/list: name, description (limits as `settings` set them), schema, hints."""
    description, schema = tool.described(settings)
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


class CodeToolsServer:
    """The server and the sessions it serves: one per HTTP session (`Mcp-Session-Id`); on stdio, the process."""

    def __init__(
        self, settings: Settings, tools: list[Tool[Any]] | None = None, gate: PermissionGate | None = None
    ) -> None:
        Workspace(settings.roots)  # refuse a bad root at start-up, not on the first call
        self.settings = settings
        self.pipeline = Pipeline(tools if tools is not None else default_tools(), gate)
        self._definitions = [tool_definition(tool, settings) for tool in self.pipeline.tools.values()]
        self._local: CodeSession | None = None
        self.http_sessions = SessionRegistry(settings)
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
        self.server.middleware.append(_handshake_era_over_http)
        self.server.middleware.append(self._follow_roots)
        self.client_log = ClientLog()
        self._serve_logging()

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            async with anyio.create_task_group() as tg:
                if self.serves_http:
                    tg.start_soon(self.http_sessions.run_reaper)
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

    def live_sessions(self) -> list[CodeSession]:
        """Every CodeSession open now (the process's own, and one per live HTTP session)."""
        local = [self._local] if self._local is not None else []
        return local + self.http_sessions.live()

    def session_for(self, ctx: ServerRequestContext[Any]) -> CodeSession:
        """The CodeSession a request belongs to, found through public SDK API only.

        Over HTTP the key is the `Mcp-Session-Id` header of the request (`ctx.request` is the HTTP request
        there): it is the SDK's own identity for a handshake session, minted at `initialize` (128 random
        bits), the one thing every later request of that client carries, and answered with 404 by the SDK
        once the session is gone; its end (DELETE, idle) is seen by the HTTP layer, which closes the
        CodeSession. `ctx.session._connection` named the same thing through a private attribute. Per-request objects
        (`ctx.session` is a new `ServerSession` for every request) cannot be keys, and 2026-07-28 requests
        carry no client identity at all (see `_handshake_era_over_http`). Without an HTTP request (stdio,
        or an in-process client) one process serves one client, so the process has one session.
        """
        request = ctx.request
        if request is None:
            if self._local is None:
                self._local = CodeSession(self.settings)
            return self._local
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
        session = self.session_for(ctx)
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
                )
        except AnswerNeeded as needed:
            return input_required(needed.question)
        return to_call_result(output)


async def _handshake_era_over_http(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """Over HTTP, refuse the stateless 2026-07-28 era so that clients open a handshake session.

    A 2026-07-28 HTTP request has no session: it carries the protocol version, client name/version and
    capabilities, nothing that tells two clients apart (two copies of one program send the same
    envelope). The other candidates fail too: the TCP connection is pooled and re-opened by HTTP
    clients (concurrent calls of one client arrive on several connections; httpx drops an idle one after
    5 s), and one bearer token is shared by every client that holds it. The read ledger, working
    directory and background jobs need a per-client session, so over HTTP this server speaks the
    handshake era, which has one. The refusal is the spec's `UnsupportedProtocolVersion` naming the
    versions served; clients that auto-negotiate (the SDK's `Client(url)`) fall back to `initialize`.
    Over stdio the process is the session, so 2026-07-28 is served there.
    """
    if ctx.request is not None and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(
            code=types.UNSUPPORTED_PROTOCOL_VERSION,
            message="over HTTP this server needs a session: use the initialize handshake (2025-11-25)",
            data={"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": ctx.protocol_version},
        )
    return await call_next(ctx)


def _progress_of(ctx: ServerRequestContext[Any]) -> ProgressFn | None:
    meta = ctx.meta or {}
    token = meta.get("progress_token", meta.get("progressToken"))
    if token is None:
        return None
    return ctx.session.report_progress
