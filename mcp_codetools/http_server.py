"""Streamable HTTP for remote use: one CodeSession per `Mcp-Session-Id`, a bearer token when not on loopback.

The SDK serves the protocol; the layer here sees every request first. It refuses a missing or wrong
token, keeps each session's activity (which decides when it idles out) and closes its CodeSession
when the client deletes it, answers a GET or DELETE that names no session without minting one, and
logs every refused request at INFO.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import socket
import sys
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from mcp_codetools.server import CodeToolsServer
from mcp_codetools.session_registry import SessionRegistry

logger = logging.getLogger(__name__)

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
MCP_PATH = "/mcp"
REFUSED_STATUSES = frozenset({401, 403, 404, 421})
"""Answers that refuse the request itself (token, Origin, unknown session, Host): logged at INFO."""

_SESSION_HEADER = MCP_SESSION_ID_HEADER.encode()

Scope = dict[str, Any]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _peer(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "?"


async def _answer(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or []})
    await send({"type": "http.response.body", "body": body})


def _unauthorized(token_given: bool) -> bytes:
    problem = "the bearer token does not match" if token_given else "this server needs a bearer token"
    return (
        f"401 Unauthorized: {problem}. Send the header `Authorization: Bearer <token>`, where <token> is the "
        "value of MCP_CODETOOLS_HTTP_TOKEN the server was started with.\n"
    ).encode()


def _jsonrpc_error(message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()


class SessionGate:
    """The ASGI layer in front of the SDK's app (see the module docstring)."""

    def __init__(self, app: Any, sessions: SessionRegistry, token: str | None) -> None:
        self._app = app
        self._sessions = sessions
        self._expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Check the token and the session id, then pass the request to the SDK's app."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        method = scope.get("method", "")
        what = f"{method} {scope.get('path', '')} from {_peer(scope)}"
        if self._expected is not None:
            given = _header(scope, b"authorization") or ""
            if not hmac.compare_digest(given.encode("latin-1"), self._expected):
                logger.info("refused %s: 401 (%s bearer token)", what, "wrong" if given else "no")
                headers = [(b"www-authenticate", b"Bearer"), (b"content-type", b"text/plain; charset=utf-8")]
                await _answer(send, 401, _unauthorized(bool(given)), headers)
                return
        key = _header(scope, _SESSION_HEADER)
        if key is None:
            if method in ("GET", "DELETE") and scope.get("path", "").rstrip("/") == MCP_PATH:
                # The SDK would mint a session for this request and throw it away, still naming it in the answer.
                logger.info("refused %s: 400 (no Mcp-Session-Id)", what)
                await _answer(
                    send,
                    400,
                    _jsonrpc_error("Bad Request: Missing session ID"),
                    [(b"content-type", b"application/json")],
                )
                return
            await self._app(scope, receive, _logging_refusals(send, what))
            return
        if self._sessions.has_ended(key):
            logger.info("refused %s: 404 (session %s has ended)", what, key[:16])
            await _answer(send, 404, _jsonrpc_error("Session not found"), [(b"content-type", b"application/json")])
            return
        status: list[int] = []
        with self._sessions.activity(key):
            await self._app(scope, receive, _logging_refusals(send, what, status))
        if method == "DELETE" and status and status[0] < 400:
            await self._sessions.end(key, "deleted by the client")


def _logging_refusals(send: Any, what: str, status: list[int] | None = None) -> Any:
    async def watch(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            code = int(message["status"])
            if status is not None:
                status.append(code)
            if code in REFUSED_STATUSES:
                logger.info("refused %s: %d", what, code)
        await send(message)

    return watch


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """The MCP endpoint's URL on the bound socket (brackets around an IPv6 host)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}{MCP_PATH}" if ":" in host else f"http://{host}:{port}{MCP_PATH}"


def serve_http(app: CodeToolsServer, host: str, port: int) -> int:
    """Serve MCP over streamable HTTP until stopped; 2 when it cannot listen or would be open without a token."""
    import uvicorn

    token = os.environ.get("MCP_CODETOOLS_HTTP_TOKEN") or None
    if host not in _LOOPBACK and not token:
        print(
            "mcp-codetools: refusing to listen on a non-loopback address without MCP_CODETOOLS_HTTP_TOKEN set",
            file=sys.stderr,
        )
        return 2
    try:
        sock = _bind(host, port)
    except OSError as exc:
        print(f"mcp-codetools: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    app.serves_http = True
    sdk_app = app.server.streamable_http_app(
        host=host, streamable_http_path=MCP_PATH, session_idle_timeout=app.settings.session_idle_timeout_s
    )
    asgi = SessionGate(sdk_app, app.http_sessions, token)
    needs = "a bearer token is required (MCP_CODETOOLS_HTTP_TOKEN)" if token else "no token required"
    print(f"mcp-codetools: serving MCP over HTTP at {url_of(sock)}; {needs}", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
