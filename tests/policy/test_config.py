"""Policy sources: files, environment and flags, later wins; Claude Code's settings honoured; bad files refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_codetools.policy.config import PolicyConfigError, load_policy_config
from mcp_codetools.policy.engine import CallFacts


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MCP_CODETOOLS_PERMISSION_MODE", raising=False)
    project = tmp_path / "proj"
    project.mkdir()
    return project


def user_file(root: Path, text: str) -> Path:
    path = root.parent / "xdg" / "mcp-codetools" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_rules_from_the_project_file_carry_their_source(root: Path) -> None:
    (root / "mcp-codetools.toml").write_text('[permissions]\ndeny = ["Read(.env)"]\nask = ["Bash(git push *)"]\n')
    config = load_policy_config([root])
    policy = config.policy([root])
    decision = policy.decide(CallFacts("Read", True, read_paths=(root / "a" / ".env",)))
    assert decision.behaviour == "deny"
    assert str(root / "mcp-codetools.toml") in decision.reason
    assert policy.decide(CallFacts("Bash", False, command="git push origin", cwd=root)).behaviour == "ask"


def test_later_sources_win_for_the_mode(root: Path) -> None:
    user_file(root, '[permissions]\ndefault_mode = "plan"\n')
    assert load_policy_config([root]).mode == "plan"
    (root / "mcp-codetools.toml").write_text('[permissions]\ndefault_mode = "acceptEdits"\n')
    assert load_policy_config([root]).mode == "acceptEdits"
    extra = root.parent / "extra.toml"
    extra.write_text('[permissions]\ndefault_mode = "default"\n')
    assert load_policy_config([root], config_file=extra).mode == "default"
    env = {"MCP_CODETOOLS_PERMISSION_MODE": "plan"}
    assert load_policy_config([root], config_file=extra, environ=env).mode == "plan"
    flagged = load_policy_config([root], config_file=extra, environ=env, mode_flag="bypassPermissions")
    assert (flagged.mode, flagged.mode_source) == ("bypassPermissions", "--permission-mode flag")


def test_rule_lists_add_up_across_sources(root: Path) -> None:
    user_file(root, '[permissions]\ndeny = ["Read(./a)"]\n')
    (root / "mcp-codetools.toml").write_text('[permissions]\ndeny = ["Read(./b)"]\n')
    config = load_policy_config([root])
    assert [r.text for r in config.deny] == ["Read(./a)", "Read(./b)"]


def test_claude_settings_are_honoured_except_bypass(root: Path) -> None:
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(./secrets/**)"], "defaultMode": "bypassPermissions"}})
    )
    (root / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"ask": ["Bash(rm *)"]}}))
    config = load_policy_config([root])
    assert [r.text for r in config.deny] == ["Read(./secrets/**)"]
    assert [r.text for r in config.ask] == ["Bash(rm *)"]
    assert config.mode == "default", "bypassPermissions is only taken from the server's own configuration"


def test_claude_settings_can_be_switched_off(root: Path) -> None:
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash"]}}))
    (root / "mcp-codetools.toml").write_text("[permissions]\nclaude_settings = false\n")
    assert load_policy_config([root]).deny == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[permissions]\nalow = ["Bash"]\n', "unknown key"),
        ('[permissions]\ndeny = ["Bash("]\n', "permissions.deny"),
        ('[permissions]\ndefault_mode = "yolo"\n', "not a permission mode"),
        ("[permissions]\ndeny = 'Bash'\n", "list of strings"),
        ("[permissions\n", "not valid TOML"),
        ('[permissions]\nunanswered_ask = "maybe"\n', "unanswered_ask"),
    ],
)
def test_bad_files_are_refused_with_the_file_named(root: Path, text: str, message: str) -> None:
    path = root / "mcp-codetools.toml"
    path.write_text(text)
    with pytest.raises(PolicyConfigError) as caught:
        load_policy_config([root])
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_a_missing_config_file_given_by_flag_is_refused(root: Path) -> None:
    with pytest.raises(PolicyConfigError, match="not found"):
        load_policy_config([root], config_file=root / "nope.toml")


def test_a_bad_mode_from_the_environment_is_refused(root: Path) -> None:
    with pytest.raises(PolicyConfigError, match="MCP_CODETOOLS_PERMISSION_MODE"):
        load_policy_config([root], environ={"MCP_CODETOOLS_PERMISSION_MODE": "loud"})


def test_the_config_files_themselves_are_protected(root: Path) -> None:
    extra = root.parent / "policy.toml"
    extra.write_text('[permissions]\nallow = ["Edit"]\n')
    policy = load_policy_config([root], config_file=extra).policy([root])
    decision = policy.decide(CallFacts("Bash", False, command=f"echo x > {extra}", cwd=root))
    assert decision.behaviour == "ask", decision.reason
    assert policy.decide(CallFacts("Write", False, write_paths=(root / "mcp-codetools.toml",))).behaviour == "ask"


def test_hooks_in_claude_settings_run_only_when_asked_for(root: Path) -> None:
    (root / ".claude").mkdir()
    hook = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]}
    (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": hook}))
    assert load_policy_config([root]).hook_tables() == []
    (root / "mcp-codetools.toml").write_text("[hooks]\nfrom_claude_settings = true\n")
    tables = load_policy_config([root]).hook_tables()
    assert (root / ".claude" / "settings.json", hook) in tables
