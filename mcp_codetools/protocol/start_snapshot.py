"""Recording the start snapshot from the SDK's own answers, and checking it against them at every fast start.

The answers are the SDK's: a twin of the server (same settings, same tools) is asked, over in-memory
streams and the same era routing as stdio (`eras.serve_both_eras`), `initialize` and `tools/list` in every
handshake version and `server/discover` and the enveloped `tools/list` in every 2026-07-28 version, in a
thread of its own once the real server has answered its first request. At a fast start the SDK still
answers every request it is fed; its answers to the requests the snapshot answered are dropped here and
compared with what was sent: a difference is logged and the snapshot deleted, so the next start records
it again.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from mcp_codetools.protocol.eras import DISCOVER, serve_both_eras
from mcp_codetools.protocol.fast_start import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    PROTOCOL_VERSION_KEY,
    EarlyStart,
    Plan,
)

logger = logging.getLogger(__name__)

RECORD_TIMEOUT_S = 30.0
FINISH_TIMEOUT_S = 5.0
"""How long an exit waits for a recording under way (~50 ms when quiet); 1 s lost recordings at load 13-15,
so the next start recorded again. Only the first start of an install can wait so."""
_CLIENT = {"name": "mcp-codetools-start-snapshot", "version": "0"}


def _requests(handshake: str, modern: tuple[str, ...]) -> list[dict[str, Any]]:
    """One connection's worth: a handshake in `handshake`, then the 2026-07-28 requests beside it."""
    init = {"protocolVersion": handshake, "capabilities": {}, "clientInfo": _CLIENT}
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": "initialize", "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "tools/list", "method": "tools/list"},
    ]
    if modern:
        messages.append({"jsonrpc": "2.0", "id": "discover", "method": DISCOVER})
    for version in modern:
        meta = {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {}, CLIENT_INFO_KEY: _CLIENT}
        messages.extend(
            {"jsonrpc": "2.0", "id": f"{version} {method}", "method": method, "params": {"_meta": meta}}
            for method in (DISCOVER, "tools/list")
        )
    return messages


async def _exchange(server: Server[Any], messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each request's result, asked one at a time on one connection; an error answer raises."""
    inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](len(messages))
    outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](len(messages) + 16)
    results: dict[str, dict[str, Any]] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_both_eras, server, inbound, outbound, server.create_initialization_options())
        async with inbound_send:
            for message in messages:
                parsed = types.jsonrpc_message_adapter.validate_json(json.dumps(message), by_name=False)
                await inbound_send.send(SessionMessage(parsed))
                if "id" not in message:
                    continue
                while True:
                    sent = (await outbound_receive.receive()).message
                    answer = json.loads(sent.model_dump_json(by_alias=True, exclude_unset=True))
                    if answer.get("id") == message["id"]:
                        break
                if not isinstance(answer.get("result"), dict):
                    raise RuntimeError(f"{message['method']} was answered with {answer.get('error')}")
                results[message["id"]] = answer["result"]
        with anyio.move_on_after(5):
            async for _ in outbound_receive:  # until the connection has closed
                pass
    return results


async def collect(make_server: Callable[[], Server[Any]]) -> dict[str, Any]:
    """Every answer a snapshot holds, from a server `make_server` builds (one per connection)."""
    handshake: dict[str, Any] = {}
    modern: dict[str, Any] = {}
    discover: dict[str, Any] = {}
    for index, version in enumerate(HANDSHAKE_PROTOCOL_VERSIONS):
        modern_versions = tuple(MODERN_PROTOCOL_VERSIONS) if index == 0 else ()
        results = await _exchange(make_server(), _requests(version, modern_versions))
        handshake[version] = {"initialize": results["initialize"], "tools/list": results["tools/list"]}
        for modern_version in modern_versions:
            modern[modern_version] = {m: results[f"{modern_version} {m}"] for m in (DISCOVER, "tools/list")}
        if modern_versions:
            discover = results["discover"]
    return {"handshake": handshake, "modern": modern, "discover": discover}


async def _bounded(make_server: Callable[[], Server[Any]]) -> dict[str, Any]:
    with anyio.fail_after(RECORD_TIMEOUT_S):
        return await collect(make_server)


def record(plan: Plan, make_server: Callable[[], Server[Any]]) -> None:
    """Collect and store the snapshot (in the calling thread); a failure is logged, the server runs on."""
    try:
        answers = anyio.run(_bounded, make_server)
        plan.write(answers)
        logger.info("start snapshot recorded: %s", plan.path)
    except Exception:
        logger.warning("the start snapshot could not be recorded", exc_info=True)


class Recorder:
    """Records the snapshot once, in a daemon thread, after the real server answered a `tools/list`.

    That is a start that worked, and later than `initialize`, so the twin does not slow the handshake.
    """

    def __init__(self, plan: Plan, make_server: Callable[[], Server[Any]]) -> None:
        self._plan = plan
        self._make_server = make_server
        self._listings: set[types.RequestId] = set()
        self.thread: threading.Thread | None = None

    def asked(self, message: types.JSONRPCMessage) -> None:
        """A request came in: a `tools/list`'s answer starts the recording."""
        if self.thread is None and isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
            self._listings.add(message.id)

    def answered(self, message: types.JSONRPCMessage) -> None:
        """A message went out: record now (once) when it answers a `tools/list`, beside the server."""
        if self.thread is not None or not isinstance(message, types.JSONRPCResponse):
            return
        if message.id not in self._listings:
            return
        self.thread = threading.Thread(
            target=record, args=(self._plan, self._make_server), name="mcp-codetools-snapshot", daemon=True
        )
        self.thread.start()

    def finish(self, timeout_s: float = FINISH_TIMEOUT_S) -> None:
        """Let a recording under way end (~50 ms) before the process exits, within a bound."""
        if self.thread is not None:
            self.thread.join(timeout_s)


class HandoverCheck:
    """Drops the SDK's answers to requests the snapshot answered, and compares each with what was sent."""

    def __init__(self, early: EarlyStart) -> None:
        self._plan = early.plan
        self._sent = dict(early.answers.answered)
        if self._sent:
            logger.info("answered from the start snapshot: %d request(s)", len(self._sent))

    def claims(self, message: types.JSONRPCMessage, data: str) -> bool:
        """Whether `message` answers a request the snapshot answered (then it is not sent)."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError) or message.id not in self._sent:
            return False
        sent = self._sent.pop(message.id)
        if json.loads(data) != sent:
            logger.warning(
                "the start snapshot answered request %r differently from the server; deleting it (%s)",
                message.id,
                self._plan.path,
            )
            self._plan.delete()
        return True
