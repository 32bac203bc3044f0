"""Which paths the rules keep from a sandboxed command: protected paths at each root, denies expanded, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_codetools.policy import sandboxing
from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.policy.sandboxing import SandboxPathsUnknown, protected_paths, sandbox_paths
from tests.declared import FAMILIES, READERS, WRITERS


def policy(roots: tuple[Path, ...], *deny: str, **options: object) -> Policy:
    rules = tuple(parse_rule(text, "deny", source="t.toml", base=roots[0]) for text in deny)
    return Policy(roots=roots, deny=rules, **{"families": FAMILIES, **options})  # type: ignore[arg-type]


def test_protected_paths_are_kept_at_every_root_whether_or_not_they_exist(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    (one / ".git" / "hooks").mkdir(parents=True)
    two.mkdir()
    kept = protected_paths(policy((one, two)), [one, two])
    assert one / "mcp-codetools.toml" in kept and two / "mcp-codetools.toml" in kept
    assert two / ".claude" in kept and two / ".git" in kept  # missing: cannot be created
    # a repository's own files stay writable; what decides what git runs does not
    assert one / ".git" / "hooks" in kept and one / ".git" / "config" in kept and one / ".git" not in kept


def test_only_paths_inside_the_writable_folders_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    config = tmp_path / "elsewhere" / "mcp-codetools.toml"
    kept = protected_paths(policy((root,), extra_protected_files=(config, root / "cfg.toml")), [root])
    assert config not in kept and root / "cfg.toml" in kept


def test_a_read_deny_at_any_depth_is_found_and_a_folder_is_taken_whole(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / ".env").write_text("x")
    (root / "a" / "b" / ".env").write_text("x")
    (root / "secrets").mkdir()
    (root / "secrets" / "key").write_text("x")
    found = sandbox_paths(policy((root,), "Read(.env)", "Read(./secrets/**)"), [root])
    assert set(found.hidden) == {root / ".env", root / "a" / "b" / ".env", root / "secrets"}


def test_an_edit_deny_is_kept_read_only_as_one_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src" / "deep").mkdir(parents=True)
    for name in ("x", "y", "deep/z"):
        (root / "src" / name).write_text("x")
    found = sandbox_paths(policy((root,), "Edit(src/**)", "Write(*.lock)"), [root])
    assert root / "src" in found.read_only
    assert not any(p.is_relative_to(root / "src") and p != root / "src" for p in found.read_only)
    assert found.hidden == ()


@pytest.mark.parametrize("tool", WRITERS)
def test_a_deny_for_any_tool_that_writes_files_keeps_its_paths_read_only(tmp_path: Path, tool: str) -> None:
    (tmp_path / "a.lock").write_text("x")
    found = sandbox_paths(policy((tmp_path,), f"{tool}(*.lock)"), [tmp_path])
    assert found.read_only[-1:] == (tmp_path / "a.lock",) and found.hidden == ()


@pytest.mark.parametrize("tool", [name for name in READERS if name != "Read"])
def test_a_deny_for_another_reading_tool_keeps_nothing_from_commands(tmp_path: Path, tool: str) -> None:
    """Only `Read(...)` hides from commands; `Grep(x)` hides x from Grep alone (the sandbox's readers are Read's)."""
    (tmp_path / "a.lock").write_text("x")
    found = sandbox_paths(policy((tmp_path,), f"{tool}(*.lock)"), [tmp_path])
    assert tmp_path / "a.lock" not in (*found.read_only, *found.hidden)


def test_a_denied_path_through_a_link_is_kept_by_its_real_path(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / ".env").write_text("x")
    os.symlink(root / "real", root / "link")
    found = sandbox_paths(policy((root,), "Read(./link/.env)"), [root])
    assert found.hidden == (root / "real" / ".env",)


def test_rules_that_cover_more_than_the_bound_refuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for n in range(10):
        (root / f"f{n}").write_text("x")
    monkeypatch.setattr(sandboxing, "MAX_WALKED", 5)
    with pytest.raises(SandboxPathsUnknown, match="more than 5 entries"):
        sandbox_paths(policy((root,), "Read(.env)"), [root])
    assert sandbox_paths(policy((root,), "Read(./f1)"), [root]).hidden == (root / "f1",)  # anchored: no walk


def test_without_deny_rules_nothing_is_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setattr(sandboxing, "MAX_WALKED", 0)
    found = sandbox_paths(policy((root,), "Bash(rm *)"), [root])
    assert found.hidden == () and root / "mcp-codetools.toml" in found.read_only


def test_a_folder_that_cannot_be_listed_is_hidden_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    (root / "locked").mkdir(parents=True)
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        if path == str(root / "locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(sandboxing.os, "scandir", scandir)
    assert sandbox_paths(policy((root,), "Read(.env)"), [root]).hidden == (root / "locked",)
