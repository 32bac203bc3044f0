"""Hider: answers as Policy.hides for every path, and its rg exclusion globs never exclude a visible file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.hiding import Hider
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.search.process import rg_executable
from tests.declared import FAMILIES, READERS

RULES = [
    "Read(.env)",
    "Read(.env.*)",
    "Read(./secrets/**)",
    "Read(*.pem)",
    "Read(./config/prod)",
    "Read(**/cache/*.bin)",
    "Read(src/**/private/*)",
    "Read(/settings-relative/x)",
    "Read([ab]key.txt)",
    "Read(k\\*y)",
    "Read(./we{ir}d/**)",
    "Read(lib/*/gen)",
    "Grep(*.key)",
    "Glob(./listing-only/**)",
    "Edit(src/**)",
    "Bash(rm *)",
]
FILES = [
    ".env",
    "src/.env",
    "src/.env.local",
    "src/.envrc",
    "secrets/a.txt",
    "secrets/d/b.txt",
    "src/secrets/c.txt",
    "cert.pem",
    "src/deep/cert.pem",
    "config/prod/db.yml",
    "config/prod.yml",
    "src/config/prod/x.yml",
    "cache/a.bin",
    "src/cache/b.bin",
    "src/cache/c.txt",
    "src/private/k.txt",
    "src/a/private/k.txt",
    "private/k.txt",
    "settings-relative/x",
    "akey.txt",
    "src/bkey.txt",
    "ckey.txt",
    "k*y",
    "kay",
    "we{ir}d/f.txt",
    "weid/f.txt",
    "lib/one/gen",
    "lib/two/gen/deep.py",
    "lib/gen",
    "id.key",
    "listing-only/f.txt",
    "src/app.py",
    "README.md",
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    for rel in FILES:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    return root


def policy_over(root: Path) -> Policy:
    rules = [parse_rule(text, "deny", source="test", base=root) for text in RULES]
    return Policy(roots=(root,), deny=tuple(rules), families=FAMILIES)


@pytest.mark.parametrize("tool", READERS)
def test_the_hider_answers_as_the_policy_does(tree: Path, tool: str) -> None:
    policy = policy_over(tree)
    hider = Hider.for_tool(policy, tool)
    assert hider is not None
    paths = [str(tree / rel) for rel in FILES] + [str(tree), "/elsewhere/.env", str(tree) + "x/.env"]
    assert [hider(p) for p in paths] == [policy.hides(tool, p) for p in paths]
    assert any(hider(p) for p in paths) and not all(hider(p) for p in paths)


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_alone_hides_what_the_policy_hides(rule: str) -> None:
    # One rule at a time, under a short root: the literal pre-check alone decides most paths here.
    root = Path("/w")
    policy = Policy(roots=(root,), deny=(parse_rule(rule, "deny", source="test", base=root),), families=FAMILIES)
    paths = [f"/w/{rel}" for rel in FILES]
    for tool in READERS:
        hider = Hider.for_tool(policy, tool)
        hides = [policy.hides(tool, p) for p in paths]
        assert (hider is None and not any(hides)) or [hider(p) for p in paths] == hides, (rule, tool)


def test_no_path_rule_for_the_tool_means_no_hider(tree: Path) -> None:
    rules = [parse_rule(text, "deny", source="test", base=tree) for text in ("Bash(rm *)", "Edit(*.py)", "WebFetch")]
    assert Hider.for_tool(Policy(roots=(tree,), deny=tuple(rules), families=FAMILIES), "Grep") is None
    assert Hider.for_tool(Policy(roots=(tree,), families=FAMILIES), "Glob") is None


def listing(folder: Path, globs: list[str]) -> set[str]:
    argv = [rg_executable(), "--no-config", "--hidden", "--no-ignore", "--files", *globs]
    out = subprocess.run(argv, cwd=folder, capture_output=True, check=False, timeout=30).stdout
    return set(out.decode().splitlines())


@pytest.mark.parametrize("tool", ["Grep", "Glob"])
def test_rg_globs_exclude_only_hidden_files_from_every_folder(tree: Path, tool: str) -> None:
    hider = Hider.for_tool(policy_over(tree), tool)
    assert hider is not None
    folders = sorted({tree, *(p.parent for p in tree.rglob("*"))})
    for folder in folders:
        globs = hider.rg_globs(str(folder))
        everything = listing(folder, [])
        excluded = everything - listing(folder, globs)
        assert all(hider(f"{folder}/{name}") for name in excluded), (folder, globs, excluded)
    # The common rules (bare names, folders anchored at the root) are spared from rg at the root.
    spared = listing(tree, []) - listing(tree, hider.rg_globs(str(tree)))
    assert {".env", "src/.env", "secrets/a.txt", "secrets/d/b.txt", "cert.pem", "config/prod/db.yml"} <= spared
