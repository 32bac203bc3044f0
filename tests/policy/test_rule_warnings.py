"""Rules that do what they say: a rule that can match nothing is reported at start, by `config` and by
`--check` (JSON too); Claude Code's `mcp__<server>__<Tool>` rules for this server are honoured."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_codetools.cli import main
from mcp_codetools.policy.engine import CallFacts
from mcp_codetools.policy.loading import check_policy_file, load_policy_config


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("MCP_CODETOOLS_PERMISSION_MODE", raising=False)
    project = tmp_path / "proj"
    project.mkdir()
    return project


def claude_settings(root: Path, permissions: dict[str, list[str]]) -> Path:
    path = root / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}), encoding="utf-8")
    return path


def denies_rm(config_root: Path) -> str:
    policy = load_policy_config([config_root]).policy([config_root])
    return policy.decide(CallFacts("Bash", False, command="rm victim.txt", cwd=config_root)).behaviour


def test_a_misspelt_rule_is_logged_once_at_load(root: Path, caplog: pytest.LogCaptureFixture) -> None:
    (root / "mcp-codetools.toml").write_text('[permissions]\ndeny = ["Raed(.env)", "Read(.env)"]\n')
    with caplog.at_level(logging.WARNING, logger="mcp_codetools.policy.loading"):
        config = load_policy_config([root])
    [warning] = config.warnings
    assert "`Raed(.env)` names no tool of this server" in warning and "did you mean Read?" in warning
    assert [r.getMessage() for r in caplog.records] == config.warnings


def test_a_specifier_on_a_tool_matched_by_name_is_reported(root: Path) -> None:
    (root / "mcp-codetools.toml").write_text('[permissions]\ndeny = ["KillShell(sleep)", "KillShell", "Bash(rm *)"]\n')
    warnings = load_policy_config([root]).warnings
    assert len(warnings) == 1 and "`KillShell(sleep)` matches nothing" in warnings[0]


def test_other_tools_in_claude_settings_are_not_reported(root: Path) -> None:
    claude_settings(
        root,
        {
            "allow": ["WebFetch(domain:example.com)", "TodoWrite", "mcp__github__create_issue", "mcp__my-db__query"],
            "deny": ["Raed(.env)", "mcp__codetools__Raed(.env)"],
        },
    )
    warnings = load_policy_config([root]).warnings
    assert len(warnings) == 2, warnings
    assert "`Raed(.env)`" in warnings[0] and "`mcp__codetools__Raed(.env)`" in warnings[1]


def test_claude_codes_name_for_this_servers_tool_is_honoured(root: Path) -> None:
    assert denies_rm(root) == "allow"
    claude_settings(root, {"deny": ["mcp__codetools__Bash(rm:*)", "mcp__other__Bash(ls:*)"]})
    config = load_policy_config([root])
    assert [rule.text for rule in config.deny] == ["mcp__codetools__Bash(rm:*)"], "another server's rule is theirs"
    decision = config.policy([root]).decide(CallFacts("Bash", False, command="rm victim.txt", cwd=root))
    assert decision.behaviour == "deny" and "mcp__codetools__Bash(rm:*)" in decision.reason
    ls = config.policy([root]).decide(CallFacts("Bash", False, command="ls", cwd=root))
    assert ls.behaviour == "allow"


def test_a_whole_server_rule_covers_every_tool(root: Path) -> None:
    claude_settings(root, {"deny": ["mcp__codetools"]})
    policy = load_policy_config([root]).policy([root])
    for tool in ("Read", "Bash", "LSP"):
        assert policy.decide(CallFacts(tool, True, command="ls" if tool == "Bash" else None)).behaviour == "deny"


def test_the_server_name_comes_from_the_clients_config(root: Path) -> None:
    claude_settings(root, {"deny": ["mcp__tools__Bash(rm *)"]})
    assert denies_rm(root) == "allow"
    server = {"command": "/opt/mcp-codetools/.venv/bin/mcp-codetools", "args": ["--root", "."]}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"tools": server}}), encoding="utf-8")
    assert denies_rm(root) == "deny"


def test_the_server_name_comes_from_claude_codes_user_config(root: Path) -> None:
    claude_settings(root, {"deny": ["mcp__mine__Bash(rm *)"]})
    home = root.parent / "home"
    home.mkdir()
    local = {"projects": {str(root): {"mcpServers": {"mine": {"command": "mcp-codetools"}}}}}
    (home / ".claude.json").write_text(json.dumps(local), encoding="utf-8")
    assert denies_rm(root) == "deny"


def test_the_server_name_comes_from_a_setting(root: Path) -> None:
    (root / "mcp-codetools.toml").write_text(
        '[permissions]\nserver_names = ["code"]\ndeny = ["mcp__code__Bash(rm *)"]\n', encoding="utf-8"
    )
    assert denies_rm(root) == "deny"


def test_check_reads_claude_settings_as_json(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = claude_settings(root, {"allow": ["WebFetch", "mcp__codetools__Read(src/**)"]})
    assert main(["config", "--check", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"{path}: ok"
    claude_settings(root, {"deny": ["Raed(.env)"]})
    assert main(["config", "--check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "`Raed(.env)` names no tool" in out and "TOML" not in out
    path.write_text("{not json", encoding="utf-8")
    assert main(["config", "--check", str(path)]) == 1
    assert "cannot be read as JSON" in capsys.readouterr().out
    assert check_policy_file(root / "absent.json") == [f"{root / 'absent.json'}: no such file"]


def test_config_prints_the_warning(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (root / "mcp-codetools.toml").write_text('[permissions]\ndeny = ["Raed(.env)"]\n')
    assert main(["config", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "# warning: " in out and "`Raed(.env)` names no tool" in out


def test_the_server_logs_the_warning_at_start(root: Path) -> None:
    (root / "mcp-codetools.toml").write_text('[permissions]\ndeny = ["Raed(.env)"]\n')
    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if "Raed(.env)" in line]
    assert len(lines) == 1 and "WARNING" in lines[0], done.stderr
