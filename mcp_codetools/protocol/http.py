"""Streamable HTTP for remote use: one CodeSession per `Mcp-Session-Id`, a bearer token when not on loopback.

The SDK serves the protocol; the layer here sees every request first. It refuses a missing or wrong
token, keeps each session's activity (which decides when it idles out) and closes its CodeSession
when the client deletes it, answers a GET or DELETE that names no session without minting one, and
logs every refused request at INFO. The SDK caps the sessions open at once (`http_max_sessions`); the
client it refuses is told the cap and how a slot frees up. A session id is as good as the token for
its session's state (files read, cwd, jobs), so it is only ever sent to the client that opened it.
Behind a load balancer (deploy/haproxy) two more things matter:
`GET /healthz` answers 200 without a token (a liveness check that reveals nothing else), and a request
naming a session this process does not hold (ended, or held by a replica that went away) gets a 404 whose
message says the session is lost and to start a new one, which the SDK's client shows as the error.
"""

from __future__ import annotations

import errno
import hmac
import json
import logging
import os
import socket
import sys
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from mcp_codetools.protocol.http_sessions import SessionRegistry
from mcp_codetools.protocol.server import CodeToolsServer

logger = logging.getLogger(__name__)

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
SESSION_LOST = (
    "Session not found: this server holds no session with this Mcp-Session-Id. It ended (deleted, or idle "
    "for too long), or it was lost when the server process that held it stopped (a restarted server, or a "
    "replica behind a load balancer that went away); its reads, working directory and background jobs are "
    "gone. Start a new session: initialize again, without the Mcp-Session-Id header."
)
"""The 404 message for a session id this process does not hold (the SDK's own says only "Session not found")."""
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


def _jsonrpc_error(message: str, code: int = -32600) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


_SDK_CAP_MESSAGE = b"Too many open sessions"
"""What the SDK's session manager answers (503) to a request that would open a session past `max_sessions`."""


def session_cap_message(max_sessions: int, idle_timeout_s: float) -> str:
    """What a client refused at the session cap reads: the cap, the setting, and how a slot frees up."""
    return (
        f"Too many open sessions: this server allows {max_sessions} at once ([http] max_sessions, "
        "MCP_CODETOOLS_HTTP_MAX_SESSIONS). End sessions you no longer use (HTTP DELETE with their "
        f"Mcp-Session-Id; clients do this when they close), or retry once an idle session has closed "
        f"(after {idle_timeout_s:g} s without a request), or ask the operator to raise the limit."
    )


async def _session_lost(send: Any) -> None:
    body = _jsonrpc_error(SESSION_LOST)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await _answer(send, 404, body, headers)


class SessionAdmission:
    """The ASGI layer in front of the SDK's app (see the module docstring)."""

    def __init__(self, app: Any, sessions: SessionRegistry, token: str | None) -> None:
        self._app = app
        self._sessions = sessions
        self._expected = f"Bearer {token}".encode() if token else None
        settings = sessions.settings
        self._cap_body = _jsonrpc_error(
            session_cap_message(settings.http_max_sessions, settings.session_idle_timeout_s), -32000
        )

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        """Check the token and the session id, then pass the request to the SDK's app."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        method = scope.get("method", "")
        if method in ("GET", "HEAD") and scope.get("path", "") == HEALTH_PATH:
            await _answer(send, 200, b"ok\n", [(b"content-type", b"text/plain; charset=utf-8")])
            return
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
            await self._app(scope, receive, _explaining_the_cap(_logging_refusals(send, what), self._cap_body, what))
            return
        if self._sessions.has_ended(key):
            logger.info("refused %s: 404 (session %s has ended)", what, key[:16])
            await _session_lost(send)
            return
        status: list[int] = []
        with self._sessions.activity(key):
            on_mcp_path = scope.get("path", "").rstrip("/") == MCP_PATH
            answer = _explaining_lost_sessions(send) if on_mcp_path else send
            await self._app(scope, receive, _logging_refusals(answer, what, status))
        if method == "DELETE" and status and status[0] < 400:
            await self._sessions.end(key, "deleted by the client")


def _explaining_lost_sessions(send: Any) -> Any:
    """`send`, with the SDK's 404 for a session id it does not know replaced by `SESSION_LOST`."""
    replaced = False

    async def explain(message: dict[str, Any]) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start" and message["status"] == 404:
            replaced = True
            await _session_lost(send)
        elif not replaced:
            await send(message)
        # else: the SDK's own body for the 404 just replaced, dropped

    return explain


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


def _explaining_the_cap(send: Any, body: bytes, what: str) -> Any:
    """`send`, with the SDK's terse 503 at the session cap replaced by `body` (the cap and what to do)."""
    held: list[dict[str, Any]] = []

    async def explain(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] == 503:
            held.append(message)  # wait for the body: only the cap's 503 is rewritten
            return
        if not held:
            await send(message)
            return
        held.append(message)
        if message.get("more_body"):
            return
        sent = b"".join(m.get("body", b"") for m in held[1:])
        if _SDK_CAP_MESSAGE not in sent:
            for m in held:
                await send(m)
            return
        logger.info("refused %s: 503 (at the session cap)", what)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return explain


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets whose proto says TCP, and accepted
    # sockets inherit proto 0 otherwise; with Nagle on, a response written in parts waited ~40 ms for an ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
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
        hint = ""
        if exc.errno == errno.EADDRINUSE:
            hint = (
                f"; another program (perhaps another mcp-codetools) is listening on port {port}: pick another "
                "with --port N (or [http] port, MCP_CODETOOLS_HTTP_PORT; --port 0 picks a free one)"
            )
        print(f"mcp-codetools: cannot listen on {host}:{port}: {exc.strerror or exc}{hint}", file=sys.stderr)
        return 2
    app.serves_http = True
    sdk_app = app.server.streamable_http_app(
        host=host,
        streamable_http_path=MCP_PATH,
        session_idle_timeout=app.settings.session_idle_timeout_s,
        max_sessions=app.settings.http_max_sessions,
    )
    asgi = SessionAdmission(sdk_app, app.http_sessions, token)
    needs = "a bearer token is required (MCP_CODETOOLS_HTTP_TOKEN)" if token else "no token required"
    print(f"mcp-codetools: serving MCP over HTTP at {url_of(sock)}; {needs}", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
