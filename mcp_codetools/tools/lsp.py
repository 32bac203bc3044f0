"""LSP: code intelligence from a language server — definitions, references, hovers, symbols, call hierarchy.

It reads files as Read does, so Read's deny rules hold for it: the file it is asked about, and every file an
answer would name (a location there is left out, as Grep and Glob leave such files out, and a hover on a
name defined there is refused, since it would show that file's text).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import ExecutionError, InvalidInputError, PermissionDeniedError, ToolError
from mcp_codetools.files.editing import read_whole
from mcp_codetools.files.paths import is_within
from mcp_codetools.files.text import BinaryContentError, detect
from mcp_codetools.lsp.outline import python_outline
from mcp_codetools.lsp.render import MAX_LOCATIONS, Hidden, Renderer, Window
from mcp_codetools.lsp.servers import ServerSpec, available
from mcp_codetools.lsp.warming import StillIndexing
from mcp_codetools.lsp.wire import ServerError, ServerGone
from mcp_codetools.lsp.workspace import (
    MAX_DOCUMENT_BYTES,
    NEEDS,
    LanguageServerUnavailable,
    file_uri,
    refuse_project_program,
)
from mcp_codetools.policy.engine import CallFacts
from mcp_codetools.policy.hiding import Hider
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput

Operation = Literal[
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
]
_WHOLE_FILE = frozenset({"documentSymbol", "workspaceSymbol"})
Request = Callable[[str, Any], Awaitable[Any]]
MAX_PAGE = 500
"""The most results one answer shows (a line each, so a page stays far below the result limit)."""


class LSPInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    operation: Operation = Field(description="What to ask.")
    file_path: str = Field(description="The file (workspaceSymbol: any of its language).")
    line: int | None = Field(default=None, ge=1, description="1-based line of the symbol.")
    character: int | None = Field(default=None, ge=1, description="Its 1-based column.")
    query: str = Field(default="", description="workspaceSymbol: a name or part of it.")
    offset: int = Field(default=0, ge=0, description="Results to skip (findReferences, workspaceSymbol).")
    limit: int = Field(default=MAX_LOCATIONS, ge=1, le=MAX_PAGE, description="Results to show.")


@dataclass(frozen=True, slots=True)
class _Target:
    root: Path
    text: str
    began: float
    """When the call's checks began (time.monotonic): a cold server's first-call budget counts from there."""


def language_servers_available() -> bool:
    """Whether any language server can run here (the tool is listed only then)."""
    return bool(available())


class LSPTool(Tool[LSPInput, _Target]):
    """LSP: ask the session's language server about code; read-only, runs beside other reads."""

    name = "LSP"
    title = "Code intelligence"
    description = (
        "Ask a language server (Python built in). documentSymbol: a file's outline; workspaceSymbol: find by "
        "query; the other operations act on the symbol at file_path, 1-based line and character. Answers give "
        "path:line:col and the line; the first call starts the server."
    )
    input_model = LSPInput
    read_only = True
    destructive = False
    idempotent = True
    path_fields = ("file_path",)

    @override
    def is_concurrency_safe(self, args: LSPInput) -> bool:
        return True

    @override
    async def validate_input(self, args: LSPInput, ctx: CallContext) -> _Target:
        began = time.monotonic()
        path = ctx.paths["file_path"]
        _refuse_what_read_may_not(path, ctx)
        if args.operation == "workspaceSymbol" and not args.query.strip():
            raise InvalidInputError("workspaceSymbol needs a query: the symbol's name or part of it.")
        if args.operation not in _WHOLE_FILE and (args.line is None or args.character is None):
            raise InvalidInputError(
                f"{args.operation} needs the symbol's position: line and character (1-based, as Read numbers lines)."
            )
        servers = ctx.session.language_servers
        spec = servers.spec_for(path)
        if spec is None:
            raise ExecutionError(servers.no_server_message(path))
        try:
            refuse_project_program(spec, ctx.session.workspace.roots)
        except LanguageServerUnavailable as exc:
            raise ExecutionError(str(exc)) from None
        root = next((r for r in ctx.session.workspace.roots if is_within(path, r)), ctx.session.workspace.roots[0])
        return _Target(root, _document_text(path, ctx), began)

    @override
    async def call(self, args: LSPInput, ctx: CallContext, target: _Target) -> ToolOutput:
        path = ctx.paths["file_path"]
        session = ctx.session
        servers = session.language_servers
        outline = _outline(path, target.text, servers.spec_for(path)) if args.operation == "documentSymbol" else None
        if outline is not None:
            return ToolOutput(
                _renderer(ctx, utf16=False).document_symbols(outline, path),
                meta={"operation": args.operation, "server": "python (ast)"},
            )
        if servers.running(path, target.root) is None:
            await ctx.progress(0, None, "starting the language server")
        try:
            client = await servers.client(path, target.root)
        except LanguageServerUnavailable as exc:
            raise ExecutionError(str(exc)) from None
        if not client.supports(NEEDS[args.operation]):
            raise ExecutionError(
                f"The {client.spec.name} language server does not support {args.operation}. "
                "Use findReferences, goToDefinition or Grep instead."
            )
        renderer = _renderer(ctx, client.utf16)
        timeout_s = session.settings.lsp_timeout_s
        cold = client.indexing
        # A cold server's budget counts from the call's checks, its start included; a warm one's from the question.
        deadline = target.began + session.settings.lsp_first_call_s if cold else time.monotonic() + timeout_s
        try:
            version = await client.sync(path, target.text)

            async def request(method: str, params: Any) -> Any:
                return await client.warming.ask(
                    method, params, version, deadline=deadline, cold=cold, progress=ctx.progress
                )

            text = await _ask(request, args, path, target.text, renderer, client.utf16)
        except StillIndexing as late:
            return ToolOutput(
                f"The {client.spec.name} language server is still indexing the project ({late.since_start_s:.0f} s "
                f"since it started) and has not answered {args.operation} yet. It keeps working on this question: "
                f"ask again in about {late.retry_after_s} s to collect the answer, or use Grep meanwhile.",
                meta={
                    "operation": args.operation,
                    "server": client.spec.name,
                    "indexing": True,
                    "retryAfterS": late.retry_after_s,
                },
            )
        except TimeoutError:
            late_text = f"The {client.spec.name} language server did not answer {args.operation} within {timeout_s:g} s"
            if await servers.missed(client):
                raise ExecutionError(
                    f"{late_text}, twice in a row: it was stopped, and the next call starts it afresh. Try again, "
                    "or use Grep."
                ) from None
            raise ExecutionError(f"{late_text}. Try again, or use Grep.") from None
        except ServerGone as exc:
            raise ExecutionError(
                f"The {client.spec.name} language server stopped ({exc}). The next call starts it again."
            ) from None
        except ServerError as exc:
            raise ExecutionError(f"The {client.spec.name} language server refused {args.operation}: {exc}.") from None
        servers.answered(client)
        return ToolOutput(text, meta={"operation": args.operation, "server": client.spec.name})


def _refuse_what_read_may_not(path: Path, ctx: CallContext) -> None:
    """Read's deny rules cover this tool's file too (the policy keeps rule families by tool name).

    Raises:
        PermissionDeniedError: a deny rule covers reading `path`.
    """
    if ctx.policy is None:
        return
    decision = ctx.policy.decide(CallFacts("Read", True, read_paths=(path,), cwd=ctx.session.cwd))
    if decision.behaviour == "deny":
        raise PermissionDeniedError(
            f"LSP reads {path} as Read would, and reading it is {decision.reason}. Ask about another file."
        )


def _hidden(ctx: CallContext) -> Hidden | None:
    """Whether a file may appear in an answer: not when a deny rule hides it from Read (or from this tool)."""
    hiders = [h for h in (ctx.hidden, Hider.for_tool(ctx.policy, "Read") if ctx.policy else None) if h is not None]
    if not hiders:
        return None
    return lambda path: any(hider(str(path)) for hider in hiders)


def _document_text(path: Path, ctx: CallContext) -> str:
    data, st = read_whole(path, ctx.session.workspace)
    if st.st_size > MAX_DOCUMENT_BYTES:
        raise InvalidInputError(f"{path} is too large for the language server ({st.st_size} bytes; at most 4 MiB).")
    try:
        fmt = detect(data)
    except BinaryContentError:
        raise InvalidInputError(f"{path} is not a text file.") from None
    return data[len(fmt.bom) :].decode(fmt.encoding, "replace")


def _outline(path: Path, text: str, spec: ServerSpec | None) -> list[dict[str, Any]] | None:
    """The built-in server's documentSymbol of a Python file, from Python's parser (None: ask the server)."""
    if spec is None or not spec.builtin or path.suffix.lower() not in (".py", ".pyi"):
        return None
    return python_outline(text)


def _renderer(ctx: CallContext, utf16: bool) -> Renderer:
    workspace = ctx.session.workspace

    def lines_of(path: Path) -> list[str] | None:
        if not workspace.contains(path):
            return None
        try:
            data, _ = read_whole(path, workspace)
        except (ToolError, OSError):
            return None
        if len(data) > MAX_DOCUMENT_BYTES:
            return None
        return data.decode("utf-8", "replace").split("\n")

    def shown(path: Path) -> str:
        for root in workspace.roots:
            if is_within(path, root):
                return os.path.relpath(path, ctx.session.cwd) if is_within(path, ctx.session.cwd) else str(path)
        return str(path)

    return Renderer(lines_of, shown, utf16, _hidden(ctx))


def _position(args: LSPInput, text: str, utf16: bool) -> dict[str, int]:
    lines = text.split("\n")
    line = (args.line or 1) - 1
    if line >= len(lines):
        raise InvalidInputError(f"line {args.line} is past the end of the file ({len(lines)} lines).")
    column = min((args.character or 1) - 1, len(lines[line]))
    units = len(lines[line][:column].encode("utf-16-le")) // 2 if utf16 else column
    return {"line": line, "character": units}


async def _ask(request: Request, args: LSPInput, path: Path, text: str, renderer: Renderer, utf16: bool) -> str:
    document = {"uri": file_uri(path)}
    if args.operation == "documentSymbol":
        return renderer.document_symbols(await request("textDocument/documentSymbol", {"textDocument": document}), path)
    if args.operation == "workspaceSymbol":
        query = args.query.strip()
        found = await request("workspace/symbol", {"query": query})
        return renderer.workspace_symbols(found, query, Window(args.offset, args.limit))
    at: dict[str, Any] = {"textDocument": document, "position": _position(args, text, utf16)}
    if args.operation == "goToDefinition":
        return renderer.locations(await request("textDocument/definition", at), "definitions")
    if args.operation == "goToImplementation":
        return renderer.locations(await request("textDocument/implementation", at), "implementations")
    if args.operation == "findReferences":
        params = {**at, "context": {"includeDeclaration": True}}
        found = await request("textDocument/references", params)
        return renderer.locations(found, "references", Window(args.offset, args.limit))
    if args.operation == "hover":
        if renderer.hides_files:
            # A hover shows the definition's signature and docstring: never those of a hidden file.
            defined = await request("textDocument/definition", at)
            for item in [defined] if isinstance(defined, dict) else list(defined or []):
                if not renderer.visible(item.get("targetUri") or item.get("uri")):
                    raise PermissionDeniedError(
                        "The name at this position is defined in a file a deny rule keeps from Read, so its "
                        "hover is not shown."
                    )
        return renderer.hover(await request("textDocument/hover", at))
    items = await request("textDocument/prepareCallHierarchy", at)
    if args.operation == "prepareCallHierarchy" or not items:
        return renderer.call_items(items)
    method = "callHierarchy/incomingCalls" if args.operation == "incomingCalls" else "callHierarchy/outgoingCalls"
    direction = "incoming" if args.operation == "incomingCalls" else "outgoing"
    return renderer.calls(await request(method, {"item": items[0]}), direction)
