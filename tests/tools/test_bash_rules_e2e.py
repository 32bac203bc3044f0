"""The Bash rule tables through the Bash tool, for real: nothing denied is pushed, printed or changed.

The tables are those of `tests/policy/test_bash_rules.py`. The gate is the strict one (`unanswered =
"allow"`: only a question a deny rule raised is refused, every other question is allowed), so a row that
the policy merely asked about, with no deny rule behind the question, would run here and show.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.session import CodeSession
from mcp_codetools.tools import default_tools
from tests.conftest import Caller
from tests.policy import test_bash_rules as tables

pytestmark = pytest.mark.anyio

SECRET = "TOKEN=e2e-7c1d"
_GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return bare


@pytest.fixture
def root(root: Path, remote: Path) -> Path:
    """A repository with a commit to push, a secret, and a `src/` to keep."""
    (root / ".env").write_text(SECRET + "\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "a.txt").write_text("a\n", encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("g\n", encoding="utf-8")
    (root / "list.txt").write_text(".env\n", encoding="utf-8")
    (root / "list").write_text("src/a.txt\n", encoding="utf-8")
    for argv in (["init", "-q", "-b", "main"], ["add", "src", "docs"], ["commit", "-qm", "init"],
                 ["remote", "add", "origin", str(remote)], ["config", "push.default", "current"]):  # fmt: skip
        subprocess.run([*_GIT, *argv], cwd=root, check=True, capture_output=True)
    return root


def caller(session: CodeSession, root: Path, *deny: str) -> Caller:
    rules = tuple(parse_rule(text, "deny", source="test.toml", base=root) for text in deny)
    gate = PermissionGate(Policy(roots=(root,), deny=rules), unanswered="allow")
    return Caller(Pipeline(default_tools(), gate), session)


def pushed(remote: Path) -> bool:
    done = subprocess.run(["git", "rev-parse", "--verify", "-q", "main"], cwd=remote, capture_output=True)
    return done.returncode == 0


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        h.update(str(path).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


async def test_the_workspace_can_push_when_no_rule_denies_it(session: CodeSession, root: Path, remote: Path) -> None:
    await caller(session, root).ok("Bash", {"command": "git push -q origin main"})
    assert pushed(remote)  # so the remote's state below shows what the rule kept


async def test_no_spelling_of_a_denied_push_pushes(session: CodeSession, root: Path, remote: Path) -> None:
    call = caller(session, root, "Bash(git push *)")
    ran = []
    for command in tables.PUSHES:
        out = await call("Bash", {"command": command, "timeout": 10_000})
        if not out.is_error or "Bash(git push *)" not in out.text:
            ran.append((command, out.text[:200]))
        assert not pushed(remote), f"{command!r} pushed: {out.text[:300]}"
    assert ran == []
    assert len(tables.PUSHES) >= 57


async def test_no_read_form_shows_a_read_denied_file(session: CodeSession, root: Path, tmp_path: Path) -> None:
    call = caller(session, root, "Read(.env)")
    for command in tables.READS:
        out = await call("Bash", {"command": command.replace("/tmp/", f"{tmp_path}/"), "timeout": 10_000})
        assert out.is_error and "Read(.env)" in out.text, f"{command!r}: {out.text[:300]}"
        assert SECRET not in out.text
    copies = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != ".env" and ".git" not in p.parts]
    assert not [p for p in copies if SECRET in p.read_text(encoding="utf-8", errors="replace")]
    assert len(tables.READS) >= 44


async def test_no_write_form_changes_an_edit_denied_folder(session: CodeSession, root: Path, tmp_path: Path) -> None:
    call = caller(session, root, "Edit(src/**)")
    before = digest(root / "src")
    for command in tables.WRITES:
        out = await call("Bash", {"command": command.replace("/tmp/", f"{tmp_path}/"), "timeout": 10_000})
        assert out.is_error and "Edit(src/**)" in out.text, f"{command!r}: {out.text[:300]}"
    assert digest(root / "src") == before
    assert len(tables.WRITES) >= 25


async def test_no_protected_write_runs_unasked(session: CodeSession, root: Path, tmp_path: Path) -> None:
    """With no rule at all, the default gate (a question nobody can answer is a refusal)."""
    call = Caller(Pipeline(default_tools(), PermissionGate(Policy(roots=(root,)))), session)
    config = (root / ".git" / "config").read_bytes()
    for command in tables.PROTECTED:
        out = await call("Bash", {"command": command.replace("/tmp/", f"{tmp_path}/"), "timeout": 10_000})
        assert out.is_error and "confirmation" in out.text, f"{command!r}: {out.text[:300]}"
    assert (root / ".git" / "config").read_bytes() == config
    assert sorted(p.name for p in (root / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")) == []
    assert not (root / ".claude").exists() and not (root / ".mcp.json").exists()
    assert not list(tmp_path.rglob("p")) and not list(tmp_path.rglob("pwned"))
