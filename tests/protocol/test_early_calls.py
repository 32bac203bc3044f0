"""Calls answered before the SDK is imported (issue 38), over real stdio: the SDK's answers, or the SDK's turn.

Each conversation runs twice: cold (no snapshot yet, so the SDK answers everything, and records one) and warm
(the snapshot answers the handshake; Read, Glob and Grep sent with it are answered while the SDK imports).
The answers must be the same, the log says how many calls were answered early.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.protocol.call_result import call_result
from mcp_codetools.protocol.server import to_call_result
from mcp_codetools.tools.base import ImagePart, ToolOutput
from tests.cmdlines import processes_with
from tests.protocol.snapshot_runs import Recorded, Run, handshake, record_once, run, untimed
from tests.protocol.stdio_raw import RawServer, text

VERSION = "2025-11-25"


def _call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


BLANK_LINES: list[dict[str, Any] | bytes] = [*handshake(VERSION), b"\n", b"  \r\n", _call(3, "Read", file_path="a.txt")]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One workspace with its snapshot recorded, shared by the conversations (a start costs ~1.5 CPU-s).

    Its config holds every test's rule: each test's files are named by no other test's rule.
    The recording start is the SDK's (no snapshot yet): it runs the blank-lines conversation, whose SDK answers
    it gives.
    """
    folder = tmp_path_factory.mktemp("early")
    config = folder / "rules.toml"
    config.write_text('[permissions]\ndeny = ["Read(secret.txt)"]\nask = ["Read(ask.txt)"]\n', encoding="utf-8")
    files = {"a.txt": "hello\nworld\n", "secret.txt": "hidden\n", "ask.txt": "ask first\n"}
    return record_once(folder, BLANK_LINES, ("--config", str(config)), files)


def _warm(recorded: Recorded, lines: Sequence[dict[str, Any] | bytes]) -> Run:
    """A start the snapshot answers the handshake of (each answer checked against the SDK's in the process)."""
    warm = recorded.run(lines)
    assert warm.from_snapshot >= 2, warm.stderr
    assert "differently" not in warm.stderr
    return warm


def _both(recorded: Recorded, lines: Sequence[dict[str, Any] | bytes], made: str | None = None) -> tuple[Run, Run]:
    """The SDK's run (a start with the snapshot setting off) and the warm one; `made`: a file the runs create."""
    sdk = recorded.run(lines, snapshot=False)
    assert sdk.from_snapshot == 0 and sdk.early == 0, sdk.stderr
    if made is not None:
        (recorded.root / made).unlink()
    try:
        return sdk, _warm(recorded, lines)
    finally:
        if made is not None:
            (recorded.root / made).unlink(missing_ok=True)


def _seqs(run: Run) -> dict[Any, int]:
    """Each call's number in the session's dispatcher (before `untimed` drops it)."""
    return {
        key: answer["result"]["_meta"]["codetools/result"]["timing"]["seq"]
        for key, answer in run.answers.items()
        if "timing" in answer.get("result", {}).get("_meta", {}).get("codetools/result", {})
    }


def test_reads_and_searches_sent_with_the_handshake_get_the_sdks_answers_early(recorded: Recorded) -> None:
    lines = [
        *handshake(VERSION),
        _call(3, "Read", file_path="a.txt", offset=2),
        _call(4, "Grep", pattern="wor", output_mode="content"),
        _call(5, "Glob", pattern="*.txt"),
        _call(6, "Read", file_path="secret.txt"),
        _call(7, "Read", file_path="missing.txt"),
        _call(10, "Glob", pattern="a.*", state_id="ignored on stdio"),
        _call(8, "Write", file_path="b.txt", content="new\n"),
        _call(9, "Read", file_path="b.txt"),
    ]
    sdk, warm = _both(recorded, lines, made="b.txt")
    assert warm.early == 6, warm.stderr
    assert _seqs(warm) == _seqs(sdk) and len(_seqs(warm)) == 8, "one session, its calls numbered in order"
    assert untimed(warm.answers) == untimed(sdk.answers)
    assert text(warm.answers[3]) == "2\tworld"
    assert text(warm.answers[10]) == "a.txt", "a state_id means nothing on stdio: dropped, as by the SDK's handler"
    assert warm.answers[6]["result"]["isError"] and "denied by the rule" in text(warm.answers[6]), (
        "the same permission step"
    )
    assert text(warm.answers[9]) == "1\tnew", "the Read after the Write waited for the SDK, in order"


@pytest.mark.parametrize(
    "first",
    [
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "debug"}},
        {**_call(3, "Read", file_path="line.txt"), "params": {"name": "Read", "arguments": {}, "_meta": {"x": 1}}},
        _call(3, "Edit", file_path="line.txt", old_string="hello", new_string="bye"),  # refused: not read yet
    ],
    ids=["ping", "setLevel", "meta", "Edit"],
)
def test_after_a_line_the_early_calls_do_not_take_every_later_call_waits_for_the_sdk(
    recorded: Recorded, first: dict[str, Any]
) -> None:
    """Every call is the SDK's (none early), so each answer is its; the snapshot's are checked in the process."""
    (recorded.root / "line.txt").write_text("hello\n", encoding="utf-8")
    lines = [*handshake(VERSION), first, _call(4, "Read", file_path="line.txt")]
    warm = _warm(recorded, lines)
    assert warm.early == 0, warm.stderr
    assert set(warm.answers) == {1, 2, 3, 4}
    assert "result" in warm.answers[3] and text(warm.answers[4]) == "1\thello", "the SDK served both, in order"


def test_blank_lines_between_calls_are_skipped_as_the_sdk_skips_them(recorded: Recorded) -> None:
    """The SDK's answers are the recording start's (see `recorded`)."""
    sdk, warm = recorded.cold, _warm(recorded, BLANK_LINES)
    assert sdk.from_snapshot == 0 and sdk.early == 0 and set(sdk.answers) == {1, 2, 3}, sdk.stderr
    assert warm.early == 1, warm.stderr
    assert untimed(warm.answers) == untimed(sdk.answers)


def test_a_client_with_roots_is_served_by_the_sdk_which_asks_for_them(recorded: Recorded) -> None:
    lines = [*handshake(VERSION, {"roots": {"listChanged": True}}), _call(3, "Read", file_path="a.txt")]
    warm = _warm(recorded, lines)
    assert warm.early == 0, warm.stderr
    assert any(m.get("method") == "roots/list" for m in warm.messages), "the SDK asked, as without a snapshot"


def test_a_question_for_a_client_that_can_answer_goes_to_the_sdk(recorded: Recorded) -> None:
    lines = [
        *handshake(VERSION, {"elicitation": {}}),
        _call(3, "Read", file_path="a.txt"),
        _call(4, "Read", file_path="ask.txt"),
        _call(5, "Read", file_path="a.txt"),
    ]
    sdk, warm = _both(recorded, lines)
    assert warm.early == 2, warm.stderr  # 3 and 5: taken with 4, which was handed on when it came to ask
    asked = [m for m in warm.messages if m.get("method") == "elicitation/create"]
    assert len(asked) == 1 and "ask.txt" in asked[0]["params"]["message"], "the SDK asked"
    assert untimed(warm.answers) == untimed(sdk.answers)


@pytest.mark.anyio
async def test_an_early_call_can_be_cancelled_and_its_id_stays_in_use_meanwhile(tmp_path: Path, root: Path) -> None:
    """A PreToolUse hook holds the Read; cancelled, its hook dies and it gets no answer; a later Read does."""
    (root / "a.txt").write_text("hello\n", encoding="utf-8")
    marker = f"early{os.getpid()}{id(root)}"
    config = tmp_path / "hook.toml"
    config.write_text(
        f'[[hooks.PreToolUse]]\nmatcher = "Read"\n[[hooks.PreToolUse.hooks]]\n'
        f'command = "if grep -q slow; then sleep 30; fi # {marker}"\n',
        encoding="utf-8",
    )
    extra = ("--config", str(config))
    run(tmp_path, root, handshake(VERSION), extra=extra, cwd=root)  # records the snapshot, started as RawServer is
    env = {
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "no-user-config"),
        "MCP_CODETOOLS_LOG_LEVEL": "INFO",
        "MCP_CODETOOLS_START_SNAPSHOT": "1",
    }
    server = await RawServer.start(root, *extra, env=env)
    slow = _call(3, "Read", file_path="slow/../a.txt")  # the hook's grep sees the name
    try:
        with anyio.fail_after(30):
            for line in [*handshake(VERSION), slow]:
                await server.send(line)
            await server.response_to(2)
            with anyio.fail_after(10):
                while not processes_with(marker, live_only=False):  # noqa: ASYNC110  (another process's state)
                    await anyio.sleep(0.02)
            await server.send(_call(3, "Read", file_path="a.txt"))
            refused = await server.receive()
            assert refused["error"]["code"] == -32600 and "in flight" in refused["error"]["data"]
            await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
            with anyio.fail_after(10):
                while processes_with(marker, live_only=False):  # noqa: ASYNC110
                    await anyio.sleep(0.02)
            await server.send(_call(4, "Read", file_path="a.txt"))
            answer = await server.receive()
            assert answer["id"] == 4, "the cancelled request gets no answer"
            assert text(answer) == "1\thello"
    finally:
        assert await server.close() == 0
    stderr = (await server.proc.stderr.read()).decode() if server.proc.stderr else ""
    assert "answered from the start snapshot" in stderr
    assert "1 cancelled" in stderr, "the early calls took the call, the duplicate and the cancellation"


def test_the_early_result_is_the_sdks_result_as_json() -> None:
    outputs = [
        ToolOutput("plain", {"numLines": 1}),
        ToolOutput("failed", {"errorCode": "file_not_found"}, is_error=True),
        ToolOutput("pages", {}, images=[ImagePart(b"\x89PNG", "image/png"), ImagePart(b"GIF8", "image/gif")],
                   trailing={0: "after the first"}),
    ]  # fmt: skip
    for output in outputs:
        assert call_result(output) == to_call_result(output).model_dump(mode="json", by_alias=True, exclude_unset=True)
