"""Policy sources: files, environment and flags, later wins; Claude Code's settings honoured; bad files refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_codetools.policy.engine import CallFacts
from mcp_codetools.policy.loading import PolicyConfigError, check_policy_file, load_policy_config
from mcp_codetools.tools import every_tool

NAMES = [tool.name for tool in every_tool()]


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
    user_file(root, '[permissions]\ndefault_mode = "acceptEdits"\n')
    assert load_policy_config([root]).mode == "acceptEdits"
    (root / "mcp-codetools.toml").write_text('[permissions]\ndefault_mode = "plan"\n')
    assert load_policy_config([root]).mode == "plan"
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
    assert any("defaultMode" in note for note in config.ignored)


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
    assert load_policy_config([root]).hook_tables() == [], "the repository cannot opt itself in"
    user_file(root, "[hooks]\nfrom_claude_settings = true\n")
    tables = load_policy_config([root]).hook_tables()
    assert (root / ".claude" / "settings.json", hook) in tables


@pytest.mark.parametrize(
    ("user", "project", "attribute", "kept"),
    [
        ('default_mode = "plan"', 'default_mode = "acceptEdits"', "mode", "plan"),
        ('default_mode = "default"', 'default_mode = "bypassPermissions"', "mode", "default"),
        ("ask_unmatched = true", "ask_unmatched = false", "ask_unmatched", True),
        ("", 'unanswered_ask = "allow"', "unanswered_ask", "deny"),
        ("claude_settings = false", "claude_settings = true", "claude_settings", False),
    ],
)
def test_the_project_file_cannot_loosen_the_users_policy(
    root: Path, user: str, project: str, attribute: str, kept: object
) -> None:
    user_file(root, f"[permissions]\n{user}\n")
    (root / "mcp-codetools.toml").write_text(f"[permissions]\n{project}\n")
    config = load_policy_config([root])
    assert getattr(config, attribute) == kept
    if attribute != "claude_settings":
        assert any(str(root / "mcp-codetools.toml") in note for note in config.ignored), config.ignored


def test_the_project_file_may_tighten_the_policy(root: Path) -> None:
    user_file(root, '[permissions]\ndefault_mode = "acceptEdits"\nunanswered_ask = "allow"\n')
    (root / "mcp-codetools.toml").write_text(
        '[permissions]\ndefault_mode = "default"\nask_unmatched = true\nunanswered_ask = "deny"\n'
        'protected_paths = ["deploy"]\n'
    )
    config = load_policy_config([root])
    assert (config.mode, config.ask_unmatched, config.unanswered_ask) == ("default", True, "deny")
    assert "deploy" in config.protected and ".git" in config.protected, "the project's list adds, never replaces"
    assert config.ignored == []


def test_claude_settings_cannot_switch_on_a_looser_mode(root: Path) -> None:
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
    assert load_policy_config([root]).mode == "default"
    user_file(root, '[permissions]\ndefault_mode = "bypassPermissions"\n')
    assert load_policy_config([root]).mode == "acceptEdits", "tighter than the user's mode: taken"


def test_a_project_allow_rule_cannot_lift_a_users_deny_or_ask(root: Path) -> None:
    user_file(
        root,
        '[permissions]\ndeny = ["Bash(curl *)"]\nask = ["Bash(git push *)", "Edit(./db/**)"]\nask_unmatched = true\n',
    )
    (root / "mcp-codetools.toml").write_text('[permissions]\nallow = ["Bash", "Edit", "Bash(git push *)"]\n')
    policy = load_policy_config([root]).policy([root])
    assert policy.decide(CallFacts("Bash", False, command="curl x", cwd=root)).behaviour == "deny"
    assert policy.decide(CallFacts("Bash", False, command="git push origin", cwd=root)).behaviour == "ask"
    assert policy.decide(CallFacts("Edit", False, write_paths=(root / "db" / "a.sql",))).behaviour == "ask"


def test_the_config_file_given_by_flag_counts_as_the_users(root: Path) -> None:
    (root / "mcp-codetools.toml").write_text('[permissions]\ndefault_mode = "plan"\n')
    extra = root.parent / "mine.toml"
    extra.write_text(
        '[permissions]\ndefault_mode = "acceptEdits"\nclaude_settings = false\n[hooks]\nfrom_project = true\n'
    )
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash"]}}))
    config = load_policy_config([root], config_file=extra)
    assert (config.mode, config.deny, config.hooks_from_project) == ("acceptEdits", [], True)


def test_hooks_in_the_project_file_run_only_when_the_user_opts_in(root: Path) -> None:
    planted = '[[hooks.PreToolUse]]\nmatcher = ""\n[[hooks.PreToolUse.hooks]]\ncommand = "touch /tmp/pwned"\n'
    (root / "mcp-codetools.toml").write_text("[hooks]\nfrom_project = true\n" + planted)
    config = load_policy_config([root])
    assert config.hook_tables() == []
    assert any("hooks.from_project" in note for note in config.ignored)
    user_file(root, "[hooks]\nfrom_project = true\n")
    assert [path for path, _ in load_policy_config([root]).hook_tables()] == [
        root.parent / "xdg" / "mcp-codetools" / "config.toml",
        root / "mcp-codetools.toml",
    ]


def test_every_problem_of_a_file_is_reported_at_once(root: Path) -> None:
    path = root / "mcp-codetools.toml"
    path.write_text(
        '[permissions]\nalow = ["Bash"]\ndeny = ["Bash(", "Raed(.env)"]\ndefault_mode = "yolo"\n'
        'unanswered_ask = "maybe"\nask_unmatched = 3\n'
        '[[hooks.PreToolUse]]\nmatcher = "("\n[[hooks.PostToolUse]]\nmatcher = "x"\n'
        '[[hooks.PostToolUse.hooks]]\ntype = "prompt"\n'
    )
    problems = check_policy_file(path)
    fragments = ("alow", "Bash(", "Raed(.env)", "yolo", "maybe", "permissions.ask_unmatched", "not a valid regex")
    for fragment in (*fragments, "command"):
        assert sum(fragment in p for p in problems) == 1, (fragment, problems)
    assert all(str(path) in p for p in problems)
    assert "did you mean Read?" in next(p for p in problems if "Raed" in p)
    with pytest.raises(PolicyConfigError) as caught:
        load_policy_config([root])
    assert "yolo" in str(caught.value) and "maybe" in str(caught.value)


def test_a_rule_for_each_tool_of_the_server_is_ok(root: Path) -> None:
    path = root / "ok.toml"
    path.write_text("[permissions]\ndeny = [" + ", ".join(f'"{name}"' for name in NAMES) + "]\n")
    assert check_policy_file(path) == []
    assert "LSP" in NAMES, "a rule may name LSP where no language server runs"


def test_project_allow_rules_cannot_answer_the_users_ask_unmatched(root: Path) -> None:
    user_file(root, '[permissions]\nask_unmatched = true\nallow = ["Bash(npm test)"]\n')
    (root / "mcp-codetools.toml").write_text('[permissions]\nallow = ["Bash", "Edit(./src/**)"]\n')
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Write"]}}))
    config = load_policy_config([root])
    policy = config.policy([root])
    assert policy.decide(CallFacts("Bash", False, command="rm -rf build", cwd=root)).behaviour == "ask"
    assert policy.decide(CallFacts("Edit", False, write_paths=(root / "src" / "a.py",))).behaviour == "ask"
    assert policy.decide(CallFacts("Write", False, write_paths=(root / "b.txt",))).behaviour == "ask"
    assert policy.decide(CallFacts("Bash", False, command="npm test", cwd=root)).behaviour == "allow"
    assert sum("permissions.allow" in note for note in config.ignored) == 3, config.ignored


def test_project_allow_rules_answer_the_projects_own_ask_unmatched(root: Path) -> None:
    (root / "mcp-codetools.toml").write_text('[permissions]\nask_unmatched = true\nallow = ["Bash(npm test)"]\n')
    policy = load_policy_config([root]).policy([root])
    assert policy.decide(CallFacts("Bash", False, command="npm test", cwd=root)).behaviour == "allow"
    assert policy.decide(CallFacts("Bash", False, command="rm -rf build", cwd=root)).behaviour == "ask"


def test_the_policys_tool_names_are_every_tool() -> None:
    from mcp_codetools.policy.rules import TOOL_NAMES

    assert set(TOOL_NAMES) == set(NAMES)
