"""
MCP wiring: `tools/list` from the tool registry, `tools/call` into the pipeline. The one module where
MCP types appear.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from opentelemetry import trace

from mcp_codetools import __version__
from mcp_codetools.config import Settings
from mcp_codetools.files.paths import Workspace
from mcp_codetools.pipeline import META_KEY, Pipeline
from mcp_codetools.session import CodeSession
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


def tool_definition(tool: Tool[Any]) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema(),
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
    """The server and the sessions it serves: one per connection (on stdio, the process)."""

    def __init__(self, settings: Settings, tools: list[Tool[Any]] | None = None) -> None:
        Workspace(settings.roots)  # refuse a bad root at start-up, not on the first call
        self.settings = settings
        self.pipeline = Pipeline(tools if tools is not None else default_tools())
        self._definitions = [tool_definition(tool) for tool in self.pipeline.tools.values()]
        self._sessions: dict[int, CodeSession] = {}
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

    @asynccontextmanager
    async def _lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.aclose()

    def session_for(self, ctx: ServerRequestContext[Any]) -> CodeSession:
        # The SDK has no public per-connection state in 2.3; its Connection object is the identity of a
        # client connection (legacy stdio and HTTP sessions). Requests without one share a session.
        connection = getattr(ctx.session, "_connection", None)
        key = id(connection) if connection is not None and connection.session_id is not None else 0
        session = self._sessions.get(key)
        if session is None:
            session = CodeSession(self.settings)
            self._sessions[key] = session
            if connection is not None and key:
                connection.exit_stack.push_async_callback(self._drop_session, key)
        return session

    async def _drop_session(self, key: int) -> None:
        session = self._sessions.pop(key, None)
        if session is not None:
            await session.aclose()

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._definitions)

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session = self.session_for(ctx)
        output = await self.pipeline.run(session, params.name, params.arguments, progress=_progress_of(ctx))
        return to_call_result(output)


def _progress_of(ctx: ServerRequestContext[Any]) -> ProgressFn | None:
    meta = ctx.meta or {}
    token = meta.get("progress_token", meta.get("progressToken"))
    if token is None:
        return None
    return ctx.session.report_progress
