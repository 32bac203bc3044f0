"""Read, Glob and Grep on stdio's fast lane after the SDK session runs (issue 38): the SDK's answers, in order.

The stdio session is served in-process on a wire the test holds both ends of (`serve_stream`), with the
fast lane on and, for the comparisons, off. The session's log says how many calls the lane answered.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.loading import load_gate, load_policy_config
from mcp_codetools.protocol import fast_lane
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.protocol.stdio import serve_stream
from mcp_codetools.protocol.wire import MAX_LINE_BYTES, WireStream
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from tests.gates import Gates
from tests.protocol.snapshot_runs import handshake, untimed

pytestmark = pytest.mark.anyio

VERSION = "2025-11-25"
LANE_LOG = "answered by the fast lane: "


def _call(request_id: int, name: str, meta: dict[str, Any] | None = None, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _cancel(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


def _text(answer: dict[str, Any]) -> str:
    return "\n".join(part["text"] for part in answer["result"]["content"] if part["type"] == "text")


def _seq(answer: dict[str, Any]) -> int:
    seq: int = answer["result"]["_meta"]["codetools/result"]["timing"]["seq"]
    return seq


class Peer:
    """The client's end of an in-process stdio wire; the server writes into it (`write`, `drain`)."""

    def __init__(self) -> None:
        self.reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        for line in data.splitlines():
            self._send.send_nowait(json.loads(line))

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        pass

    def closed(self) -> None:
        self._send.close()
        self._receive.close()

    def send(self, *messages: dict[str, Any]) -> None:
        """All of `messages` in one write, as a client that pipelines them."""
        self.reader.feed_data(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(20):
            return await self._receive.receive()

    async def answers(self, *ids: int) -> dict[int, dict[str, Any]]:
        """The answers to `ids` (whatever order they come in); any other message fails the test."""
        found: dict[int, dict[str, Any]] = {}
        while len(found) < len(ids):
            message = await self.receive()
            assert message.get("id") in ids and "method" not in message, message
            found[message["id"]] = message
        return found


@asynccontextmanager
async def serving(app: CodeToolsServer, *, fast: bool = True) -> AsyncIterator[Peer]:
    peer = Peer()
    stream = WireStream(peer.reader, cast(Any, peer))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(serve_stream, app.server, stream, fast=fast))
            yield peer
            peer.reader.feed_eof()
    finally:
        peer.closed()
    assert all(write.endswith(b"\n") for write in peer.writes), "every write is whole lines"


async def _greeted(peer: Peer, capabilities: dict[str, Any] | None = None, version: str = VERSION) -> None:
    """The handshake, and a first Read of `a.txt` (id 3): the SDK answers it, which binds the session's log."""
    peer.send(*handshake(version, capabilities), _call(3, "Read", file_path="a.txt"))
    await peer.answers(1, 2, 3)


def _lane(caplog: pytest.LogCaptureFixture) -> tuple[int, int, int]:
    """(answered, handed to the SDK, cancelled) from the session's last log line about the lane."""
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith(LANE_LOG)]
    assert lines, "the session logs what its fast lane did"
    numbers = [int(word) for word in lines[-1].replace(";", " ").split() if word.isdigit()]
    return numbers[0], numbers[1], numbers[2]


@pytest.fixture(autouse=True)
def _lane_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_codetools.protocol.stdio")


@pytest.fixture
def files(root: Path) -> Path:
    (root / "a.txt").write_text("hello\nworld\n", encoding="utf-8")
    (root / "b.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "c.py").write_text("print('wor')\n", encoding="utf-8")
    return root


CALLS = [
    _call(4, "Read", file_path="b.txt", offset=2),
    _call(5, "Grep", pattern="wor", output_mode="content"),
    _call(6, "Glob", pattern="**/*.py"),
    _call(7, "Read", file_path="missing.txt"),
    _call(8, "Read", file_path=3),
    _call(9, "Read", file_path="b.txt", colour="red"),
    _call(10, "Grep", pattern="one", state_id="ignored on stdio"),
    _call(11, "Read", file_path="/etc/hostname"),
    _call(12, "Read", meta={"progressToken": "p"}, file_path="sub/c.py"),
    _call(13, "Edit", file_path="b.txt", old_string="two", new_string="2"),
    _call(14, "Read", file_path="b.txt"),
]
LANE_IDS = {4, 5, 6, 7, 8, 9, 10, 11, 14}
"""12 carries a progress token and 13 is an Edit: the SDK's."""


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
async def test_the_lane_answers_what_the_sdk_answers(
    files: Path, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    answers = {}
    for fast in (False, True):
        app = CodeToolsServer(Settings(roots=(files,)))
        async with serving(app, fast=fast) as peer:
            await _greeted(peer, version=version)
            peer.send(*CALLS)
            answers[fast] = untimed(await peer.answers(*(c["id"] for c in CALLS)))
            (files / "b.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
        if fast:
            assert _lane(caplog) == (len(LANE_IDS), 0, 0), "every Read, Glob and Grep without _meta"
    assert answers[True] == answers[False]
    assert _text(answers[True][14]) == "1\tone\n2\t2\n3\tthree", "the Read after the Edit waited for it"
    assert answers[True][8]["result"]["isError"] and "must be a string" in _text(answers[True][8])


async def test_an_edit_and_the_read_behind_it_run_in_line_order(files: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The Read is the lane's and reaches the dispatcher first; it must still wait for the Edit sent before it."""
    app = CodeToolsServer(Settings(roots=(files,)))
    async with serving(app) as peer:
        await _greeted(peer)
        peer.send(
            _call(4, "Edit", file_path="a.txt", old_string="hello", new_string="bye"),
            _call(5, "Read", file_path="a.txt"),
        )
        found = await peer.answers(4, 5)
    assert not found[4]["result"]["isError"], _text(found[4])
    assert _text(found[5]) == "1\tbye\n2\tworld"
    assert _seq(found[4]) < _seq(found[5])
    assert _lane(caplog)[0] == 1


async def test_an_edit_behind_a_read_of_the_lane_waits_for_it(files: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Edit needs the file read first: it finds the Read sent before it in the same write done."""
    app = CodeToolsServer(Settings(roots=(files,)))
    async with serving(app) as peer:
        await _greeted(peer)
        peer.send(
            _call(4, "Read", file_path="b.txt"), _call(5, "Edit", file_path="b.txt", old_string="two", new_string="2")
        )
        found = await peer.answers(4, 5)
    assert _text(found[4]) == "1\tone\n2\ttwo\n3\tthree"
    assert not found[5]["result"]["isError"], _text(found[5])
    assert _seq(found[4]) < _seq(found[5])
    assert _lane(caplog)[0] == 1


async def test_a_glob_behind_a_bash_command_sees_what_it_made(files: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = CodeToolsServer(Settings(roots=(files,)))
    async with serving(app) as peer:
        await _greeted(peer)
        peer.send(_call(4, "Bash", command="touch made.txt"), _call(5, "Glob", pattern="*.txt"))
        found = await peer.answers(4, 5)
    assert not found[4]["result"]["isError"], _text(found[4])
    assert "made.txt" in _text(found[5]).split("\n")
    assert _lane(caplog)[0] == 2, "both on the lane (Bash too, since issue 38's bashlane)"


async def test_a_call_of_the_lane_is_cancelled_unanswered_and_its_id_stays_in_use_meanwhile(
    root: Path, gates: Gates, caplog: pytest.LogCaptureFixture
) -> None:
    app = CodeToolsServer(Settings(roots=(root,)), [*default_tools(), gates.tool("Read", safe=True)])
    gates.open("first")
    gates.open("after")
    async with serving(app) as peer:
        peer.send(*handshake(VERSION), {**_call(3, "Read", key="first")})
        await peer.answers(1, 2, 3)
        peer.send(_call(4, "Read", key="slow"))
        with anyio.fail_after(10):
            await gates.until(lambda: "slow" in gates.started)
        peer.send(_call(4, "Read", key="after"))
        refused = await peer.receive()
        assert refused["error"]["code"] == -32600 and "in flight" in refused["error"]["data"]
        peer.send(_cancel(4))
        with anyio.fail_after(10):
            await gates.until(lambda: "slow" in gates.cleaned)
        peer.send(_call(5, "Read", key="after"))
        answer = await peer.receive()
        assert answer["id"] == 5 and _text(answer) == "done after", "the cancelled call gets no answer"
    assert _lane(caplog) == (1, 0, 1)


async def test_a_question_hands_the_call_to_the_sdk_in_its_place(
    files: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK asks; the Edit sent behind the Read waits for it (the Read's slot went with it)."""
    (files / "ask.txt").write_text("ask first\n", encoding="utf-8")
    config = tmp_path / "ask.toml"
    config.write_text('[permissions]\nask = ["Read(ask.txt)"]\n', encoding="utf-8")
    gate = PermissionGate(load_policy_config([files], config_file=config, read_user_file=False).policy([files]))
    app = CodeToolsServer(Settings(roots=(files,)), gate=gate)
    async with serving(app) as peer:
        await _greeted(peer, {"elicitation": {}})
        peer.send(
            _call(4, "Read", file_path="ask.txt"),
            _call(5, "Edit", file_path="a.txt", old_string="hello", new_string="bye"),
        )
        question = await peer.receive()
        assert question.get("method") == "elicitation/create", "nothing runs before the question is answered"
        assert "ask.txt" in question["params"]["message"]
        reply = {"action": "accept", "content": {"decision": "allow once"}}
        peer.send({"jsonrpc": "2.0", "id": question["id"], "result": reply})
        found = await peer.answers(4, 5)
        peer.send(_call(6, "Read", file_path="b.txt"))
        later = await peer.answers(6)
    assert _text(found[4]) == "1\task first"
    assert not found[5]["result"]["isError"], _text(found[5])
    assert _seq(found[4]) < _seq(found[5])
    assert _text(later[6]).startswith("1\tone")
    assert _lane(caplog) == (1, 1, 0), "the Read of ask.txt was taken, then handed over; b.txt's answered"


async def test_a_client_with_roots_is_served_by_the_lane_once_the_session_has_them(
    files: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("other root\n", encoding="utf-8")
    app = CodeToolsServer(Settings(roots=(files,)))

    async def roots_asked(peer: Peer) -> None:
        asked = await peer.receive()
        assert asked.get("method") == "roots/list"
        roots = {"roots": [{"uri": other.resolve().as_uri()}]}
        peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": roots})

    async with serving(app) as peer:
        peer.send(*handshake(VERSION, {"roots": {"listChanged": True}}))
        await peer.answers(1, 2)
        peer.send(_call(3, "Read", file_path="a.txt"))
        await roots_asked(peer)
        await peer.answers(3)
        peer.send(_call(4, "Read", file_path=str(other / "o.txt")))
        assert _text((await peer.answers(4))[4]) == "1\tother root"
        peer.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, _call(5, "Read", file_path="b.txt"))
        await roots_asked(peer)
        await peer.answers(5)
    assert _lane(caplog)[0] == 1, "only the Read between the two lists of roots"


async def test_answers_that_end_together_go_out_in_one_write(
    root: Path, gates: Gates, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each write wakes the client: reads that end in the same turn of the loop share one."""
    monkeypatch.setattr(fast_lane, "STREAM_AFTER_S", 3600.0)  # however slow the machine, within the bound
    app = CodeToolsServer(Settings(roots=(root,)), [*default_tools(), gates.tool("Read", safe=True)])
    gates.open("first")
    keys = ["x", "y", "z"]
    async with serving(app) as peer:
        peer.send(*handshake(VERSION), _call(3, "Read", key="first"))
        await peer.answers(1, 2, 3)
        peer.send(*(_call(4 + i, "Read", key=key) for i, key in enumerate(keys)))
        with anyio.fail_after(10):
            await gates.until(lambda: set(keys) <= set(gates.started))
        for key in keys:
            gates.open(key)
        found = await peer.answers(4, 5, 6)
    assert [_text(found[i]) for i in (4, 5, 6)] == ["done x", "done y", "done z"]
    assert peer.writes[-1].count(b"\n") == 3, "the three answers in one write"


@pytest.mark.parametrize("can_ask", [False, True], ids=["no elicitation", "elicitation"])
async def test_pre_tool_use_hooks_run_once_a_call_on_either_path(
    files: Path, tmp_path: Path, can_ask: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """With hooks, a client that can be asked is not served by the lane: a handed-over call would run them twice."""
    log = tmp_path / "hook.log"
    config = tmp_path / "hook.toml"
    config.write_text(
        f'[[hooks.PreToolUse]]\nmatcher = "Read"\n[[hooks.PreToolUse.hooks]]\ncommand = "echo ran >> {log}"\n',
        encoding="utf-8",
    )
    app = CodeToolsServer(Settings(roots=(files,)), gate=load_gate([files], config_file=config, environ={}))
    async with serving(app) as peer:
        await _greeted(peer, {"elicitation": {}} if can_ask else None)
        peer.send(_call(4, "Read", file_path="b.txt"))
        found = await peer.answers(4)
    assert _text(found[4]).startswith("1\tone")
    assert log.read_text(encoding="utf-8").splitlines() == ["ran", "ran"], "once for each of the two Reads"
    assert _lane(caplog)[0] == (0 if can_ask else 1)


@asynccontextmanager
async def _gated_reads(root: Path, gates: Gates, keys: list[str]) -> AsyncIterator[tuple[Peer, int]]:
    """A served lane past its handshake and a first Read, then gated Reads `keys` (ids 4, 5, ...) all started.

    Gives the peer and how many writes it had before those Reads.
    """
    app = CodeToolsServer(Settings(roots=(root,)), [*default_tools(), gates.tool("Read", safe=True)])
    gates.open("first")
    async with serving(app) as peer:
        peer.send(*handshake(VERSION), _call(3, "Read", key="first"))
        await peer.answers(1, 2, 3)
        before = len(peer.writes)
        peer.send(*(_call(4 + i, "Read", key=key) for i, key in enumerate(keys)))
        with anyio.fail_after(10):
            await gates.until(lambda: set(keys) <= set(gates.started))
        yield peer, before


async def test_a_burst_streams_its_answers_once_the_first_has_waited_its_bound(
    root: Path, gates: Gates, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst's calls end in one turn of the loop: past the bound its answers go out while the rest run."""
    monkeypatch.setattr(fast_lane, "STREAM_AFTER_S", 0.0)
    keys = ["x", "y", "z"]
    async with _gated_reads(root, gates, keys) as (peer, before):
        for key in keys:
            gates.open(key)
        await peer.answers(4, 5, 6)
    sizes = [write.count(b"\n") for write in peer.writes[before:]]
    assert sum(sizes) == 3 and len(sizes) > 1, f"the first answer went out before the last was made: {sizes}"


async def test_answers_go_out_in_line_order_behind_a_slow_first_call(root: Path, gates: Gates) -> None:
    """The calls behind a slow one end first; their answers wait for its answer, then all go out in line order."""
    keys = ["slow", "b", "c", "d"]
    async with _gated_reads(root, gates, keys) as (peer, before):
        for key in keys[1:]:
            gates.open(key)
        with anyio.fail_after(10):
            await gates.until(lambda: set(keys[1:]) <= set(gates.finished))
            await anyio.wait_all_tasks_blocked()  # the three answers are made (and, before, were written)
        assert len(peer.writes) == before, "nothing goes out ahead of the slow call's answer"
        gates.open("slow")
        order = [(await peer.receive())["id"] for _ in keys]
    assert order == [4, 5, 6, 7]


async def test_answers_held_behind_a_call_go_out_when_it_is_cancelled(root: Path, gates: Gates) -> None:
    """A cancelled call has no answer: the ones held for it go out then, not never."""
    async with _gated_reads(root, gates, ["slow", "b"]) as (peer, _):
        gates.open("b")
        with anyio.fail_after(10):
            await gates.until(lambda: "b" in gates.finished)
        peer.send(_cancel(4))
        answer = await peer.receive()
    assert answer["id"] == 5 and _text(answer) == "done b"
