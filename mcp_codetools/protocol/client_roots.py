"""The client's roots, when it offers them: served beside the configured roots, never instead of them.

A client that declares the `roots` capability is asked for its roots before a session's first call, and
again after it says they changed (`notifications/roots/list_changed`, up to 2025-11-25). Up to
2025-11-25 the server sends `roots/list` in the middle of the call; at 2026-07-28 the call answers
`input_required` with a `roots/list` request and the client sends the call again with the list. Only
`file:` URIs naming existing folders are taken; others are skipped with a log line. An empty list
leaves the configured roots as they are.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import is_version_at_least

from mcp_codetools.session import CodeSession

logger = logging.getLogger(__name__)

ROOTS_KEY = "codetools-roots"
INPUT_REQUIRED_VERSION = "2026-07-28"


async def sync_roots(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, session: CodeSession
) -> types.InputRequiredResult | None:
    """Bring the session's roots up to date with the client's; an `input_required` answer when it must ask."""
    if not session.roots_wanted:
        return None
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        session.roots_wanted = False
        return None
    if is_version_at_least(ctx.protocol_version, INPUT_REQUIRED_VERSION):
        answer = (params.input_responses or {}).get(ROOTS_KEY)
        if answer is None:
            return types.InputRequiredResult(input_requests={ROOTS_KEY: types.ListRootsRequest()})
        result: object = answer
    else:
        try:
            with warnings.catch_warnings():
                # Roots are deprecated from 2026-07-28; this session speaks an older version, where they are not.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await ctx.session.list_roots()
        except Exception as exc:  # the client could not answer: keep the configured roots
            logger.info("roots/list failed (%s); serving the configured roots only", exc)
            session.roots_wanted = False
            return None
    session.roots_wanted = False
    if isinstance(result, types.ListRootsResult):
        apply_roots(session, result)
    return None


def apply_roots(session: CodeSession, result: types.ListRootsResult) -> None:
    """Serve the client's roots beside the configured ones: local file: URIs of existing folders only."""
    folders: list[Path] = []
    for root in result.roots:
        parsed = urlparse(str(root.uri))
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            logger.info("client root %s skipped: only local file: URIs are served", root.uri)
            continue
        folders.append(Path(unquote(parsed.path)))
    taken = session.workspace.set_client_roots(folders)
    skipped = [str(f) for f in folders if f.resolve() not in taken and f.resolve() not in session.workspace.configured]
    for folder in skipped:
        logger.info("client root %s skipped: not an existing folder", folder)
    logger.info("serving roots: %s", ", ".join(str(r) for r in session.workspace.roots))


def roots_changed(ctx: ServerRequestContext[Any]) -> bool:
    """Whether this inbound message is the client saying its roots changed."""
    return ctx.request_id is None and ctx.method == "notifications/roots/list_changed"
