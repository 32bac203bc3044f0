"""Bash on stdio's fast lane (issue 38): what the SDK's path does for a command, the lane does too.

Served in-process on a wire the test holds both ends of, as in test_fast_lane.py; the session's log says how
many calls the lane answered, handed to the SDK and cancelled.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.loading import load_gate, load_policy_config
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings
from mcp_codetools.shell import running
from tests.processes import live_in_group
from tests.protocol.snapshot_runs import untimed
from tests.protocol.test_fast_lane import _call, _cancel, _greeted, _lane, _seq, _text, serving

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _lane_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_codetools.protocol.stdio")


@pytest.fixture
def files(root: Path) -> Path:
    (root / "a.txt").write_text("hello\nworld\n", encoding="utf-8")
    (root / "sub").mkdir()
    return root


async def wait_until(predicate: Callable[[], object], limit: float = 10) -> None:
    """Poll what a command does in its own process (a file, a process group), which no event here signals."""
    with anyio.fail_after(limit):
        while not predicate():  # noqa: ASYNC110
            await anyio.sleep(0.01)


COMMANDS = [
    _call(4, "Bash", command="echo hi"),
    _call(5, "Bash", command="echo out; echo err >&2; exit 3"),
    _call(6, "Bash", command="cd sub && pwd"),
    _call(7, "Bash", command="pwd; grep -q nothing ../a.txt"),
    _call(8, "Bash", command=""),
    _call(9, "Bash", command="echo x", colour="red"),
    _call(10, "Bash", command="echo kept", state_id="ignored on stdio"),
]


async def test_the_lane_answers_bash_as_the_sdk_does(files: Path, caplog: pytest.LogCaptureFixture) -> None:
    answers = {}
    for fast in (False, True):
        app = CodeToolsServer(Settings(roots=(files,)))
        async with serving(app, fast=fast) as peer:
            await _greeted(peer)
            for command in COMMANDS:  # one at a time: the cwd moves between them
                peer.send(command)
                answers[fast, command["id"]] = untimed(await peer.answers(command["id"]))[command["id"]]
        if fast:
            assert _lane(caplog) == (len(COMMANDS), 0, 0)
    for command in COMMANDS:
        assert answers[True, command["id"]] == answers[False, command["id"]], command
    assert _text(answers[True, 4]) == "hi"
    assert answers[True, 5]["result"]["isError"] and _text(answers[True, 5]).startswith("Exit code 3")
    assert _text(answers[True, 7]).startswith(str(files / "sub")), "the cd of the call before moved the session"


async def test_a_bash_command_and_the_reads_and_edits_around_it_keep_line_order(
    files: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = CodeToolsServer(Settings(roots=(files,)))
    async with serving(app) as peer:
        await _greeted(peer)  # the Read of a.txt, so the Edit may change it
        peer.send(
            _call(4, "Edit", file_path="a.txt", old_string="hello", new_string="bye"),
            _call(5, "Bash", command="cat a.txt; echo made > made.txt"),
            _call(6, "Read", file_path="made.txt"),
            _call(7, "Bash", command="cat made.txt; echo more >> made.txt"),
            _call(8, "Read", file_path="made.txt"),
        )
        found = await peer.answers(4, 5, 6, 7, 8)
    assert not found[4]["result"]["isError"], _text(found[4])
    assert _text(found[5]) == "bye\nworld", "the Bash behind the Edit saw its change"
    assert _text(found[6]) == "1\tmade", "the Read behind the Bash saw what it made"
    # Its note proves the Read's ledger entry was committed before it ran.
    assert _text(found[7]).startswith("made\n\n[This command modified 1 file you've previously read: made.txt")
    assert _text(found[8]) == "1\tmade\n2\tmore"
    assert [_seq(found[i]) for i in range(4, 9)] == sorted(_seq(found[i]) for i in range(4, 9))
    assert _lane(caplog)[0] == 4, "all but the Edit"


async def test_a_cancelled_bash_on_the_lane_has_its_process_group_killed_and_no_answer(
    files: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = CodeToolsServer(Settings(roots=(files,)))
    pid_file = files / "bash.pid"
    async with serving(app) as peer:
        await _greeted(peer)
        peer.send(_call(4, "Bash", command="sleep 30 & echo $$ > bash.pid; wait"))
        await wait_until(lambda: pid_file.exists() and pid_file.read_text(encoding="utf-8").endswith("\n"))
        group = int(pid_file.read_text(encoding="utf-8"))
        assert len(live_in_group(group)) == 2, "bash and its sleep"
        peer.send(_cancel(4))
        await wait_until(lambda: not live_in_group(group))
        peer.send(_call(5, "Bash", command="echo after"))
        answer = await peer.receive()
    assert answer["id"] == 5 and _text(answer) == "after", "the cancelled call gets no answer"
    assert _lane(caplog) == (1, 0, 1)


async def test_a_bash_timeout_on_the_lane_stops_the_command(files: Path, caplog: pytest.LogCaptureFixture) -> None:
    app = CodeToolsServer(Settings(roots=(files,)))
    async with serving(app) as peer:
        await _greeted(peer)
        peer.send(_call(4, "Bash", command="echo $$ > bash.pid; sleep 30", timeout=300))
        found = await peer.answers(4)
    assert found[4]["result"]["isError"]
    assert _text(found[4]).startswith("Command timed out after")
    assert found[4]["result"]["_meta"]["codetools/result"]["interrupted"] is True
    assert not live_in_group(int((files / "bash.pid").read_text(encoding="utf-8")))
    assert _lane(caplog)[0] == 1


async def test_a_background_job_started_on_the_lane_is_followed_with_bash_output(
    files: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = CodeToolsServer(Settings(roots=(files,)))
    async with serving(app) as peer:
        await _greeted(peer)
        peer.send(_call(4, "Bash", command="echo from-the-job", run_in_background=True))
        started = (await peer.answers(4))[4]
        job = re.search(r"ID: (\S+?)\.", _text(started))
        assert job is not None, _text(started)
        peer.send(_call(5, "BashOutput", bash_id=job.group(1), wait_s=10))
        followed = (await peer.answers(5))[5]
    assert not started["result"]["isError"]
    assert "from-the-job" in _text(followed)
    assert _lane(caplog)[0] == 1, "the Bash; BashOutput is the SDK's"


async def test_a_bash_with_a_progress_token_is_the_sdks_and_reports_progress(
    files: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(running, "PROGRESS_INTERVAL_S", 0.01)
    app = CodeToolsServer(Settings(roots=(files,)))
    async with serving(app) as peer:
        await _greeted(peer)
        command = "echo waiting; until [ -e go ]; do sleep 0.01; done; echo went"
        peer.send(_call(4, "Bash", meta={"progressToken": "tok"}, command=command))
        note = await peer.receive()
        assert note.get("method") == "notifications/progress", note
        assert note["params"]["progressToken"] == "tok"
        (files / "go").touch()
        while "id" not in (answer := await peer.receive()):
            assert answer.get("method") == "notifications/progress", answer
    assert answer["id"] == 4 and _text(answer) == "waiting\nwent"
    assert _lane(caplog) == (0, 0, 0)


async def test_an_asked_bash_command_is_handed_to_the_sdk_before_it_runs(
    files: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "ask.toml"
    config.write_text('[permissions]\nask = ["Bash(touch:*)"]\n', encoding="utf-8")
    gate = PermissionGate(load_policy_config([files], config_file=config, read_user_file=False).policy([files]))
    app = CodeToolsServer(Settings(roots=(files,)), gate=gate)
    async with serving(app) as peer:
        await _greeted(peer, {"elicitation": {}})
        peer.send(_call(4, "Bash", command="touch asked.txt"), _call(5, "Read", file_path="asked.txt"))
        question = await peer.receive()
        assert question.get("method") == "elicitation/create", question
        assert "touch" in question["params"]["message"]
        assert not (files / "asked.txt").exists(), "nothing ran before the answer"
        reply = {"action": "accept", "content": {"decision": "allow once"}}
        peer.send({"jsonrpc": "2.0", "id": question["id"], "result": reply})
        found = await peer.answers(4, 5)
    assert not found[4]["result"]["isError"], _text(found[4])
    assert not found[5]["result"]["isError"], "the Read behind the Bash waited for it: " + _text(found[5])
    assert _seq(found[4]) < _seq(found[5])
    assert _lane(caplog) == (1, 1, 0), "the Bash was taken and handed over; the Read answered"


@pytest.mark.parametrize("can_ask", [False, True], ids=["no elicitation", "elicitation"])
async def test_bash_hooks_run_once_a_call_on_either_path(
    files: Path, tmp_path: Path, can_ask: bool, caplog: pytest.LogCaptureFixture
) -> None:
    log = tmp_path / "hook.log"
    config = tmp_path / "hook.toml"
    config.write_text(
        f'[[hooks.PreToolUse]]\nmatcher = "Bash"\n[[hooks.PreToolUse.hooks]]\ncommand = "echo pre >> {log}"\n'
        f'[[hooks.PostToolUse]]\nmatcher = "Bash"\n[[hooks.PostToolUse.hooks]]\ncommand = "echo post >> {log}"\n',
        encoding="utf-8",
    )
    app = CodeToolsServer(Settings(roots=(files,)), gate=load_gate([files], config_file=config, environ={}))
    async with serving(app) as peer:
        await _greeted(peer, {"elicitation": {}} if can_ask else None)
        peer.send(_call(4, "Bash", command="echo hi"))
        found = await peer.answers(4)
    assert _text(found[4]).startswith("hi")
    assert log.read_text(encoding="utf-8").splitlines() == ["pre", "post"]
    assert _lane(caplog)[0] == (0 if can_ask else 1)
