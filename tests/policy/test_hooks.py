"""Hooks: what they see, how they allow, block, time out and add context; bad hook tables refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.policy.hooks import HookConfigError, Hooks, parse_hooks

pytestmark = pytest.mark.anyio

SOURCE = Path("/cfg/mcp-codetools.toml")


def hooks(event: str, command: str, *, matcher: str = "", timeout: float = 30) -> Hooks:
    table = {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]}]}
    return Hooks(parse_hooks([(SOURCE, table)]))


def payload(tmp_path: Path, tool: str = "Edit") -> dict[str, Any]:
    return {"session_id": "s1", "cwd": str(tmp_path), "tool_name": tool, "tool_input": {"file_path": "a.py"}}


async def test_the_hook_sees_the_call_as_json(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    with anyio.fail_after(20):
        outcome = await hooks("PreToolUse", f"cat > {seen}").run("PreToolUse", payload(tmp_path))
    assert not outcome.blocked and outcome.decision is None
    data = json.loads(seen.read_text())
    assert data == {**payload(tmp_path), "hook_event_name": "PreToolUse"}


async def test_exit_2_blocks_with_stderr_as_the_message(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        outcome = await hooks("PreToolUse", "echo 'no edits to generated files' >&2; exit 2").run(
            "PreToolUse", payload(tmp_path)
        )
    assert outcome.blocked and outcome.message == "no edits to generated files"


async def test_other_exit_codes_do_not_block(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        outcome = await hooks("PreToolUse", "echo oops >&2; exit 1").run("PreToolUse", payload(tmp_path))
    assert not outcome.blocked and outcome.decision is None


@pytest.mark.parametrize("decision", ["allow", "deny", "ask"])
async def test_a_json_permission_decision(tmp_path: Path, decision: str) -> None:
    answer = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": f"policy says {decision}",
            }
        }
    )
    with anyio.fail_after(20):
        outcome = await hooks("PreToolUse", f"echo '{answer}'").run("PreToolUse", payload(tmp_path))
    assert (outcome.decision, outcome.reason) == (decision, f"policy says {decision}")


async def test_post_tool_use_adds_context(tmp_path: Path) -> None:
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "run the tests"}})
    with anyio.fail_after(20):
        outcome = await hooks("PostToolUse", f"echo '{answer}'").run(
            "PostToolUse", {**payload(tmp_path), "tool_response": "ok"}
        )
    assert outcome.context == ["run the tests"]


async def test_a_hook_past_its_timeout_is_killed_with_its_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"sleep 600 & echo $! > {pids}; wait"
    with anyio.fail_after(30):
        outcome = await hooks("PreToolUse", command, timeout=0.5).run("PreToolUse", payload(tmp_path))
    assert not outcome.blocked, "a timed-out hook is a non-blocking error"
    child = int(pids.read_text())
    with anyio.fail_after(10):
        while _alive(child):  # noqa: ASYNC110 - bounded poll of /proc until the kill lands
            await anyio.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[-1][:1] != "Z"
    except FileNotFoundError:
        return False


async def test_matchers_pick_tools(tmp_path: Path) -> None:
    h = hooks("PreToolUse", "exit 2", matcher="Edit|Write")
    with anyio.fail_after(20):
        assert (await h.run("PreToolUse", payload(tmp_path, "Write"))).blocked
        assert not (await h.run("PreToolUse", payload(tmp_path, "Read"))).blocked
        assert not (await h.run("PostToolUse", payload(tmp_path, "Edit"))).blocked


async def test_the_strictest_decision_of_several_hooks_wins(tmp_path: Path) -> None:
    def answer(decision: str) -> str:
        return "echo '" + json.dumps({"hookSpecificOutput": {"permissionDecision": decision}}) + "'"

    table = {"PreToolUse": [{"hooks": [{"command": answer("allow")}, {"command": answer("ask")}]}]}
    with anyio.fail_after(20):
        outcome = await Hooks(parse_hooks([(SOURCE, table)])).run("PreToolUse", payload(tmp_path))
    assert outcome.decision == "ask"


@pytest.mark.parametrize(
    "table",
    [
        {"BeforeTool": []},
        {"PreToolUse": [{"matcher": "(", "hooks": []}]},
        {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]},
        {"PreToolUse": [{"hooks": [{"command": ""}]}]},
        {"PreToolUse": [{"hooks": [{"command": "x", "timeout": -1}]}]},
        {"PreToolUse": {"matcher": "x"}},
    ],
)
def test_bad_hook_tables_are_refused(table: dict[str, Any]) -> None:
    with pytest.raises(HookConfigError, match=str(SOURCE)):
        parse_hooks([(SOURCE, table)])


async def test_a_hook_planted_in_the_project_file_runs_only_when_the_user_opts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_codetools.policy.loading import load_gate

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "proj"
    root.mkdir()
    marker = tmp_path / "outside" / "pwned"
    (root / "mcp-codetools.toml").write_text(
        '[hooks]\nfrom_project = true\n[[hooks.PreToolUse]]\nmatcher = ""\n'
        f'[[hooks.PreToolUse.hooks]]\ncommand = "mkdir -p {marker.parent} && touch {marker}"\n'
    )
    with anyio.fail_after(20):
        gate = load_gate([root])  # the next start
        assert not gate.hooks
        await gate.hooks.run("PreToolUse", payload(root))
        assert not marker.exists()
        user = tmp_path / "xdg" / "mcp-codetools" / "config.toml"
        user.parent.mkdir(parents=True)
        user.write_text("[hooks]\nfrom_project = true\n")
        await load_gate([root]).hooks.run("PreToolUse", payload(root))
    assert marker.exists()


def test_every_bad_hook_entry_is_reported(tmp_path: Path) -> None:
    table = {
        "PreToolUse": [{"matcher": "("}, {"hooks": [{"type": "prompt"}]}],
        "Stop": [],
    }
    problems: list[str] = []
    assert parse_hooks([(SOURCE, table)], problems=problems) == ()
    assert len(problems) == 3 and all(str(SOURCE) in p for p in problems)
