"""Streamable HTTP for remote use: one session per `Mcp-Session-Id`, a bearer token when not on loopback."""

from __future__ import annotations

import hmac
import logging
import os
import sys
from typing import Any

from mcp_codetools.server import CodeToolsServer

logger = logging.getLogger(__name__)

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class _BearerGate:
    """Refuse requests without the configured token (constant-time compare)."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                await send(
                    {"type": "http.response.start", "status": 401, "headers": [(b"www-authenticate", b"Bearer")]}
                )
                await send({"type": "http.response.body", "body": b"unauthorized\n"})
                return
        await self._app(scope, receive, send)


def serve_http(app: CodeToolsServer, host: str, port: int) -> None:
    import uvicorn

    token = os.environ.get("MCP_CODETOOLS_HTTP_TOKEN")
    if host not in _LOOPBACK and not token:
        print(
            "mcp-codetools: refusing to listen on a non-loopback address without MCP_CODETOOLS_HTTP_TOKEN set",
            file=sys.stderr,
        )
        raise SystemExit(2)
    asgi: Any = app.server.streamable_http_app(host=host)
    if token:
        asgi = _BearerGate(asgi, token)
    uvicorn.run(asgi, host=host, port=port, log_level="warning")
