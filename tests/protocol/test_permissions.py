"""The permission step through a real MCP client: rules, modes, hooks, and asking the user by elicitation
on both protocol eras (a live `elicitation/create` up to 2025-11-25, an `input_required` round at 2026-07-28)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from mcp_codetools.policy.loading import load_gate
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]
"""`legacy` speaks 2025-11-25 (a live elicitation request); `auto` in memory speaks 2026-07-28 (input_required)."""

Callback = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]


def app_with(root: Path, toml: str, *, user: str = "", **gate: Any) -> CodeToolsServer:
    """The server with `toml` as the project file and `user` as the user's own (hooks and loosening live there)."""
    (root / "mcp-codetools.toml").write_text(toml, encoding="utf-8")
    xdg = root.parent / "no-user-config"
    if user:
        (xdg / "mcp-codetools").mkdir(parents=True, exist_ok=True)
        (xdg / "mcp-codetools" / "config.toml").write_text(user, encoding="utf-8")
    settings = Settings(roots=(root,))
    return CodeToolsServer(settings, gate=load_gate(settings.roots, environ={"XDG_CONFIG_HOME": str(xdg)}, **gate))


def answering(decision: str, asked: list[str]) -> Callback:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": decision})

    return callback


async def declining(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-user-config"))


@pytest.mark.parametrize("mode", MODES)
async def test_a_deny_rule_refuses_and_names_itself(root: Path, mode: str) -> None:
    app = app_with(root, '[permissions]\ndeny = ["Bash(rm *)", "Read(./secrets/**)"]\n')
    (root / "secrets").mkdir()
    (root / "secrets" / "key.txt").write_text("k")
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode) as client:  # type: ignore[arg-type]
            refused = await client.call_tool("Bash", {"command": "echo hi && rm -rf build"})
            read = await client.call_tool("Read", {"file_path": "secrets/key.txt"})
    assert refused.is_error and "`Bash(rm *)`" in text(refused) and "mcp-codetools.toml" in text(refused)
    assert read.is_error and "`Read(./secrets/**)`" in text(read)


@pytest.mark.parametrize("mode", MODES)
async def test_an_ask_rule_asks_and_an_allow_runs_the_call(root: Path, mode: str) -> None:
    app = app_with(root, '[permissions]\nask = ["Write(*.md)"]\n')
    asked: list[str] = []
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode, elicitation_callback=answering("allow once", asked)) as client:  # type: ignore[arg-type]
            done = await client.call_tool("Write", {"file_path": "notes.md", "content": "hi\n"})
    assert not done.is_error, text(done)
    assert (root / "notes.md").read_text() == "hi\n"
    assert len(asked) == 1 and "notes.md" in asked[0] and "Write(*.md)" in asked[0]


@pytest.mark.parametrize("mode", MODES)
async def test_a_declined_question_refuses_the_call(root: Path, mode: str) -> None:
    app = app_with(root, '[permissions]\nask = ["Write"]\n')
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode, elicitation_callback=declining) as client:  # type: ignore[arg-type]
            refused = await client.call_tool("Write", {"file_path": "a.txt", "content": "x"})
    assert refused.is_error and "declined" in text(refused)
    assert not (root / "a.txt").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_be_asked_is_refused_with_the_reason(root: Path, mode: str) -> None:
    app = app_with(root, '[permissions]\nask = ["Bash(git push *)"]\n')
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode) as client:  # type: ignore[arg-type]
            refused = await client.call_tool("Bash", {"command": "git push origin main"})
    assert refused.is_error and "cannot be asked" in text(refused) and "Bash(git push *)" in text(refused)


async def test_unanswerable_asks_can_be_allowed_by_the_server_config(root: Path) -> None:
    app = app_with(root, "", user='[permissions]\nask = ["Write"]\nunanswered_ask = "allow"\n')
    with anyio.fail_after(20):
        async with Client(app.server, mode="legacy") as client:
            done = await client.call_tool("Write", {"file_path": "a.txt", "content": "x"})
    assert not done.is_error, text(done)


async def test_protected_paths_are_asked_about_by_default(root: Path) -> None:
    app = app_with(root, "")
    asked: list[str] = []
    with anyio.fail_after(20):
        async with Client(app.server, mode="legacy", elicitation_callback=answering("deny", asked)) as client:
            refused = await client.call_tool("Write", {"file_path": ".vscode/settings.json", "content": "{}"})
            ordinary = await client.call_tool("Write", {"file_path": "src/a.py", "content": "x = 1\n"})
    assert refused.is_error and not (root / ".vscode").exists()
    assert len(asked) == 1 and "protected path" in asked[0]
    assert not ordinary.is_error


async def test_plan_mode_runs_reads_and_refuses_the_rest(root: Path) -> None:
    app = app_with(root, "", mode_flag="plan")
    (root / "a.txt").write_text("one\n")
    with anyio.fail_after(20):
        async with Client(app.server, mode="legacy") as client:
            read = await client.call_tool("Read", {"file_path": "a.txt"})
            write = await client.call_tool("Write", {"file_path": "b.txt", "content": "x"})
            bash = await client.call_tool("Bash", {"command": "touch c.txt"})
            listing = await client.call_tool("Bash", {"command": "ls"})
    assert not read.is_error and not listing.is_error
    assert write.is_error and "plan mode" in text(write) and "--permission-mode flag" in text(write)
    assert bash.is_error and not (root / "c.txt").exists()


async def test_hooks_block_and_add_context(root: Path) -> None:
    log = root.parent / "hook-input.json"
    toml = f"""
[[hooks.PreToolUse]]
matcher = "Bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "cat > {log}; grep -q forbidden {log} && echo 'no forbidden commands' >&2 && exit 2; exit 0"

[[hooks.PostToolUse]]
matcher = "Write"
[[hooks.PostToolUse.hooks]]
type = "command"
command = "echo '{{\\"hookSpecificOutput\\": {{\\"additionalContext\\": \\"remember to run the tests\\"}}}}'"
"""
    app = app_with(root, "", user=toml)
    with anyio.fail_after(30):
        async with Client(app.server, mode="legacy") as client:
            blocked = await client.call_tool("Bash", {"command": "echo forbidden"})
            payload = json.loads(log.read_text())
            allowed = await client.call_tool("Bash", {"command": "echo fine"})
            written = await client.call_tool("Write", {"file_path": "x.txt", "content": "x"})
    assert blocked.is_error and "no forbidden commands" in text(blocked)
    assert payload["tool_name"] == "Bash" and payload["tool_input"]["command"] == "echo forbidden"
    assert payload["hook_event_name"] == "PreToolUse" and payload["session_id"]
    assert not allowed.is_error and "fine" in text(allowed)
    assert "remember to run the tests" in text(written)


async def test_a_hook_allow_does_not_lift_a_deny_rule(root: Path) -> None:
    answer = json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}})
    toml = f"""[permissions]
deny = ["Bash(rm *)"]

[[hooks.PreToolUse]]
[[hooks.PreToolUse.hooks]]
command = '''echo '{answer}' '''
"""
    app = app_with(root, "", user=toml)
    (root / "keep").write_text("k")
    with anyio.fail_after(20):
        async with Client(app.server, mode="legacy") as client:
            refused = await client.call_tool("Bash", {"command": "rm keep"})
    assert refused.is_error and (root / "keep").exists()


async def test_the_config_file_cannot_be_rewritten_by_a_tool_call(root: Path) -> None:
    app = app_with(root, '[permissions]\ndeny = ["Bash(curl *)"]\n')
    with anyio.fail_after(20):
        async with Client(app.server, mode="legacy") as client:
            refused = await client.call_tool("Bash", {"command": "echo '' > mcp-codetools.toml"})
    assert refused.is_error
    assert "deny" in (root / "mcp-codetools.toml").read_text()


@pytest.mark.parametrize("mode", MODES)
async def test_a_denied_file_is_silently_absent_from_a_grep(root: Path, mode: str) -> None:
    app = app_with(root, '[permissions]\ndeny = ["Read(.env)"]\n')
    (root / "src").mkdir()
    (root / "src" / ".env").write_text("TOKEN=needle\n")
    (root / "src" / "app.py").write_text("needle = 1\n")
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode) as client:  # type: ignore[arg-type]
            found = await client.call_tool("Grep", {"pattern": "needle", "output_mode": "content"})
    assert not found.is_error, text(found)
    assert text(found) == "src/app.py:1:needle = 1"


@pytest.mark.parametrize("answer", ["deny", "allow once"])
@pytest.mark.parametrize("mode", MODES)
async def test_the_question_shows_the_whole_command_with_the_asked_part_marked(
    root: Path, mode: str, answer: str
) -> None:
    """An "allow once" runs the whole command, so the question must show all of it, not only its subject."""
    app = app_with(root, '[permissions]\nask = ["Bash(git push *)"]\n')
    asked: list[str] = []
    command = "git push origin main; echo owned > pwned"
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode, elicitation_callback=answering(answer, asked)) as client:  # type: ignore[arg-type]
            result = await client.call_tool("Bash", {"command": command})
    if answer == "deny":
        assert result.is_error and not (root / "pwned").exists()
    else:
        assert (root / "pwned").read_text() == "owned\n", text(result)
    assert len(asked) == 1 and command in asked[0], asked
    assert ">> Asked about this part: git push origin main" in asked[0]
    assert "only part of the call" in asked[0]


@pytest.mark.parametrize("mode", MODES)
async def test_a_long_command_is_shown_by_its_start_and_end_and_says_so(root: Path, mode: str) -> None:
    app = app_with(root, '[permissions]\nask = ["Bash(git push *)"]\n')
    asked: list[str] = []
    command = "git push origin main " + "-o x " * 2_000 + "; echo owned > pwned"
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode, elicitation_callback=answering("deny", asked)) as client:  # type: ignore[arg-type]
            await client.call_tool("Bash", {"command": command})
    assert len(asked) == 1 and len(asked[0]) < 4_000
    assert asked[0].count("git push origin main") >= 1 and "; echo owned > pwned" in asked[0]
    assert "too long to show whole" in asked[0] and "NOT shown" in asked[0]


async def test_an_answer_binds_the_whole_command_not_its_subject(root: Path) -> None:
    """At 2026-07-28 the answer travels in `input_responses` under the question's key: replayed for another
    command with the same triggering part, it answers nothing, and that command is asked about afresh."""
    app = app_with(root, '[permissions]\nask = ["Bash(echo *)"]\n')
    allow = types.ElicitResult(action="accept", content={"decision": "allow once"})
    first = {"command": "echo hi > said"}
    other = {"command": "echo hi > said; touch pwned"}
    with anyio.fail_after(20):
        async with Client(app.server, mode="auto", elicitation_callback=answering("deny", [])) as client:  # type: ignore[arg-type]
            await client.list_tools()
            round_one = await client.session.call_tool("Bash", first, allow_input_required=True)
            assert isinstance(round_one, types.InputRequiredResult)
            (key,) = round_one.input_requests
            replayed = await client.session.call_tool(
                "Bash", other, input_responses={key: allow}, allow_input_required=True
            )
            ran = await client.session.call_tool("Bash", first, input_responses={key: allow}, allow_input_required=True)
    assert isinstance(replayed, types.InputRequiredResult), "an answer for one command ran another"
    assert key not in replayed.input_requests
    assert not (root / "pwned").exists()
    request = next(iter(replayed.input_requests.values()))
    assert isinstance(request, types.ElicitRequest) and other["command"] in request.params.message
    assert isinstance(ran, types.CallToolResult) and not ran.is_error, "the answer still holds for its own call"
    assert (root / "said").read_text() == "hi\n"
