"""Both protocol eras on one stdio connection, whatever order the client uses.

The SDK's stream loop lets the first request fix the connection's era for good: after an enveloped
`server/discover` it refuses `initialize` (-32022), and after `initialize` it refuses every enveloped
request, `server/discover` included (-32600; a bare one is "Method not found"). The 2026-07-28 spec
asks more of a dual-era server: `server/discover` MUST be answered, clients probe with it before they
fall back to `initialize`, and both eras MAY be served side by side on one process. So every request
is routed by what it is, not by what came first:

- an `initialize`, and any request without the 2026-07-28 `_meta` envelope, goes to the one handshake
  connection of the process (its initialize gate and `logging/setLevel` as before);
- an enveloped request is served on its own, as the 2026-07-28 spec has it: checked by the SDK's
  inbound ladder, run with a connection made from its envelope, never able to send a request back;
- `server/discover` is always served the 2026-07-28 way; one without an envelope (a probe that left
  it out) is answered for the newest version rather than refused, since discovery changes nothing.

Both eras reach the same server and so the same process session: one stdio process serves one client.
Everything here is SDK API (the runner kernel, `serve_one`, the inbound ladder); only the routing is ours.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection, NotifyOnlyOutbound
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import ServerRunner, aclose_shielded, modern_error_data, serve_one
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import CallOptions, DispatchContext
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import MessageMetadata, SessionMessage
from mcp.shared.transport_context import TransportContext
from mcp_types.version import LATEST_MODERN_VERSION
from pydantic import ValidationError

logger = logging.getLogger(__name__)

DISCOVER = "server/discover"


def has_modern_envelope(params: Mapping[str, Any] | None) -> bool:
    """Whether a request carries the 2026-07-28 envelope (its reserved protocol-version `_meta` key)."""
    meta = (params or {}).get("_meta")
    return isinstance(meta, Mapping) and types.PROTOCOL_VERSION_META_KEY in meta


def _with_default_envelope(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """`server/discover` params with the envelope's required keys filled in where the client left them out."""
    filled = dict(params or {})
    meta = dict(filled.get("_meta") or {})
    meta.setdefault(types.PROTOCOL_VERSION_META_KEY, LATEST_MODERN_VERSION)
    meta.setdefault(types.CLIENT_CAPABILITIES_META_KEY, {})
    filled["_meta"] = meta
    return filled


@dataclass
class _NoRequestsBack:
    """A request's dispatch context that cannot send the client a request (2026-07-28 has none)."""

    inner: DispatchContext[TransportContext]

    @property
    def transport(self) -> TransportContext:
        return replace(self.inner.transport, can_send_request=False)

    @property
    def can_send_request(self) -> bool:
        return False

    @property
    def request_id(self) -> types.RequestId | None:
        return self.inner.request_id

    @property
    def message_metadata(self) -> MessageMetadata:
        return self.inner.message_metadata

    @property
    def cancel_requested(self) -> Any:
        return self.inner.cancel_requested

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        await self.inner.notify(method, params, opts)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self.inner.progress(progress, total, message)


async def serve_both_eras(
    server: Server[Any],
    read_stream: ReadStream[SessionMessage | Exception],
    write_stream: WriteStream[SessionMessage],
    init_options: InitializationOptions,
) -> None:
    """Serve one duplex connection (stdio) in both eras, request by request, until the read side closes."""
    async with server.lifespan(server) as lifespan_state:
        # `initialize` runs inline, as in the SDK's loop, so a request pipelined behind it sees it done.
        dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
            read_stream, write_stream, inline_methods=frozenset({"initialize"})
        )
        handshake = Connection.for_loop(dispatcher)
        runner = ServerRunner(server, handshake, lifespan_state, init_options=init_options)
        outbound = NotifyOnlyOutbound(dispatcher)

        async def modern(
            dctx: DispatchContext[TransportContext], method: str, params: Mapping[str, Any] | None
        ) -> dict[str, Any]:
            route = classify_inbound_request({"method": method, "params": params})
            if isinstance(route, InboundLadderRejection):
                raise MCPError(code=route.code, message=route.message, data=route.data)
            connection = Connection.from_envelope(
                route.protocol_version, route.client_info, route.client_capabilities, outbound=outbound
            )
            try:
                return await serve_one(
                    server, _NoRequestsBack(dctx), method, params, connection=connection, lifespan_state=lifespan_state
                )
            except (MCPError, ValidationError):
                raise
            except Exception as exc:  # a handler bug: logged, and a generic error on the wire
                error = modern_error_data(exc)
                raise MCPError(code=error.code, message=error.message, data=error.data) from exc

        async def on_request(
            dctx: DispatchContext[TransportContext], method: str, params: Mapping[str, Any] | None
        ) -> dict[str, Any]:
            if method == DISCOVER:
                return await modern(dctx, method, _with_default_envelope(params))
            if method != "initialize" and has_modern_envelope(params):
                return await modern(dctx, method, params)
            return await runner.on_request(dctx, method, params)

        try:
            await dispatcher.run(on_request, runner.on_notify)
        finally:
            await aclose_shielded(handshake)
