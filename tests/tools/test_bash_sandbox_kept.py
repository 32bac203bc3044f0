"""What the permission rules keep from a sandboxed Bash command, held by the kernel on each backend.

Protected paths stay read-only (and a missing one cannot be created), a `Read(...)` deny makes a path
unreadable and an `Edit(...)` deny read-only, and a refused write says so in the result. The question
the permission step asks is answered "yes" here (an asker that always allows: `unanswered_ask` never answers a
protected-path question), or the command is one the rules cannot read (python): either way the command
reaches the sandbox, which must hold on its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from typing_extensions import override

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy import sandboxing
from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.gate import PermissionGate, Question
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import SandboxSettings, Settings
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import ToolOutput
from tests.conftest import Caller
from tests.tools.test_bash_sandbox import working

pytestmark = pytest.mark.anyio

HOOK = "#!/bin/sh\ntouch /tmp/pwned\n"


@pytest.fixture(params=["bwrap", "landlock", "seatbelt"])
def backend(request: pytest.FixtureRequest) -> str:
    working(request.param)  # skips, or fails where CI requires the backend
    return str(request.param)


@pytest.fixture(scope="module")
def made_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _workspace(tmp_path_factory.mktemp("kept") / "ws")


@pytest.fixture
def root(tmp_path: Path, made_root: Path) -> Path:
    """A copy of the module's workspace (a git run a test cost more than the copy)."""
    return Path(shutil.copytree(made_root, (tmp_path / "ws").resolve(), symlinks=True))


def _workspace(workspace: Path) -> Path:
    """A git repository with a `.claude/settings.json`, a `.env`, a `src/` and a file at the top."""
    workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text("{}\n", encoding="utf-8")
    (workspace / ".env").write_text("TOKEN=root-secret\n", encoding="utf-8")
    (workspace / "src").mkdir()
    (workspace / "src" / "a.txt").write_text("a\n", encoding="utf-8")
    (workspace / "src" / ".env").write_text("TOKEN=nested-secret\n", encoding="utf-8")
    (workspace / "notes.txt").write_text("notes\n", encoding="utf-8")
    return workspace


@pytest.fixture
def settings(root: Path, backend: str) -> Settings:
    return Settings(roots=(root,), sandbox=SandboxSettings(enabled=True, backend=backend))  # type: ignore[arg-type]


def gate_for(root: Path, *rules: str) -> PermissionGate:
    deny = tuple(parse_rule(text, "deny", source="test.toml", base=root) for text in rules)
    return PermissionGate(Policy(roots=(root,), deny=deny), sandboxed_bash=True, unanswered="allow")


class YesCaller(Caller):
    """Answers every question the permission step asks with "allow once", as a user saying yes would."""

    @override
    async def __call__(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        return await self.pipeline.run(self.session, name, arguments, ask=_yes)


async def _yes(question: Question) -> bool:
    return True


@pytest.fixture
def call(session: CodeSession, root: Path) -> Caller:
    return YesCaller(Pipeline(default_tools(), gate_for(root)), session)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every entry of the protected places, with its content (None for a folder)."""
    seen: dict[str, bytes | None] = {}
    for top in (".claude", ".git/hooks", ".git/config", "mcp-codetools.toml", ".mcp.json", ".vscode"):
        path = root / top
        if path.is_file():
            seen[top] = path.read_bytes()
        elif path.is_dir():
            seen[top] = None
            for found in sorted(path.rglob("*")):
                seen[str(found.relative_to(root))] = found.read_bytes() if found.is_file() else None
    return seen


ATTACKS = {
    "append the server's config": "printf '[sandbox]\\nenabled = false\\n' >> mcp-codetools.toml",
    "plant a git hook": f"printf '{HOOK}' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "rewrite .claude/settings.json": """echo '{"hooks": {}}' > .claude/settings.json""",
    "cd into .claude first": "cd .claude && echo '{}' > settings.json",
    "write with python": "python3 -c \"open('.mcp.json', 'w').write('{}')\"",
    "swap .claude for a new one": "mv .claude .claude-old; mkdir .claude && echo '{}' > .claude/settings.json",
    "point git at other hooks": "git config core.hooksPath /tmp",
    "remove the hooks folder": "rm -rf .git/hooks",
    "create .vscode": "mkdir .vscode && echo '{}' > .vscode/tasks.json",
    "append with perl": """perl -e 'open(F, ">>", ".git/config") or die "$!"; print F "[core]\\n"'""",
    "write through a hard link": "ln .git/config src/cfg && echo '[core]' >> src/cfg",
    "write through a symlink": "ln -s ../.git/hooks/pre-commit src/hook; echo x > src/hook",
    "move .git aside": "mv .git .git-old && mkdir -p .git/hooks",
    "remove .claude": "rm -rf .claude",
    "sed -i a protected file": "sed -i 's/{}/{1}/' .claude/settings.json",
    "dd over .git/config": "dd if=/dev/zero of=.git/config bs=1 count=1",
    "unpack a tar over .claude": "mkdir -p src/t/.claude && echo x > src/t/.claude/x.json && "
    "tar -C src/t -cf src/t.tar .claude && tar -xf src/t.tar",
}


@pytest.mark.parametrize("command", ATTACKS.values(), ids=ATTACKS.keys())
async def test_a_protected_path_cannot_be_written_or_created(call: Caller, root: Path, command: str) -> None:
    before = snapshot(root)
    out = await call("Bash", {"command": f"cd {root} && {command}"})
    assert out.is_error, out.text
    assert snapshot(root) == before
    assert not (root / ".claude-old").exists()
    assert "[Sandbox: " in out.text and ("read-only" in out.text), out.text


async def test_an_existing_config_file_keeps_its_content(call: Caller, root: Path) -> None:
    config = root / "mcp-codetools.toml"
    config.write_text("[sandbox]\nenabled = true\n", encoding="utf-8")
    out = await call("Bash", {"command": "printf '[sandbox]\\nenabled = false\\n' >> mcp-codetools.toml"})
    assert out.is_error
    assert config.read_text(encoding="utf-8") == "[sandbox]\nenabled = true\n"
    assert "`mcp-codetools.toml` is read-only in the Bash sandbox" in out.text
    out = await call("Bash", {"command": "rm -f mcp-codetools.toml; mv mcp-codetools.toml x.toml"})
    assert config.exists() and not (root / "x.toml").exists(), out.text


async def test_a_client_added_root_is_protected_too(call: Caller, session: CodeSession, tmp_path: Path) -> None:
    added = (tmp_path / "client").resolve()
    (added / "src").mkdir(parents=True)
    session.workspace.set_client_roots([added])
    out = await call("Bash", {"command": f"cd {added} && echo x >> mcp-codetools.toml; mkdir .claude"})
    assert out.is_error and "[Sandbox: " in out.text, out.text
    assert sorted(os.listdir(added)) == ["src"]
    await call.ok("Bash", {"command": f"echo ok > {added}/src/a.txt"})
    assert (added / "src" / "a.txt").read_text(encoding="utf-8") == "ok\n"


async def test_writes_elsewhere_in_the_root_still_work(call: Caller, root: Path, backend: str) -> None:
    await call.ok("Bash", {"command": "echo more >> notes.txt && mkdir -p src/new/deep && echo x > src/new/deep/f"})
    assert (root / "notes.txt").read_text(encoding="utf-8") == "notes\nmore\n"
    assert (root / "src" / "new" / "deep" / "f").read_text(encoding="utf-8") == "x\n"
    assert await call.ok("Bash", {"command": "cat .claude/settings.json && grep -c core .git/config"}) == "{}\n1"
    if backend != "landlock":  # under Landlock `.git`'s top level is fixed too (see the README)
        text = await call.ok("Bash", {"command": "git add notes.txt && git -c user.name=t -c user.email=t@t "
                                      "commit -qm notes && git log --format=%s"})  # fmt: skip
        assert text == "notes"


async def test_a_new_entry_at_the_top_of_a_root_is_refused_with_a_way_on(
    call: Caller, root: Path, backend: str
) -> None:
    supervised = backend == "landlock" and working("landlock").supervised
    if backend in ("seatbelt", "bwrap") or supervised:  # only the kept names are refused (supervisor.py)
        await call.ok("Bash", {"command": "echo x > new.txt"})
        assert (root / "new.txt").read_text(encoding="utf-8") == "x\n"
        return
    out = await call("Bash", {"command": "echo x > new.txt"})
    assert out.is_error and not (root / "new.txt").exists()
    assert "no entry can be created, removed or renamed at a root's top level" in out.text
    assert "Write" in out.text


@pytest.fixture
def denying(session: CodeSession, root: Path) -> Caller:
    return YesCaller(Pipeline(default_tools(), gate_for(root, "Read(.env)", "Edit(src/**)")), session)


@pytest.mark.parametrize("command", ["cat .env", "python3 -c \"print(open('.env').read())\"", "cat src/.env"])
async def test_a_read_deny_makes_the_path_unreadable(denying: Caller, command: str) -> None:
    out = await denying("Bash", {"command": command})
    assert out.is_error
    assert "secret" not in out.text


async def test_a_refused_read_says_the_sandbox_hides_it(denying: Caller) -> None:
    out = await denying("Bash", {"command": "python3 -c \"open('.env').read()\""})
    assert "`.env` is unreadable in the Bash sandbox" in out.text, out.text


async def test_an_edit_deny_leaves_the_folder_readable_but_not_writable(denying: Caller, root: Path) -> None:
    assert await denying.ok("Bash", {"command": "cat src/a.txt"}) == "a"
    for write in ("open('src/a.txt', 'a').write('x')", "open('src/new.txt', 'w').write('x')"):
        out = await denying("Bash", {"command": f'python3 -c "{write}"'})
        assert out.is_error, out.text
    assert (root / "src" / "a.txt").read_text(encoding="utf-8") == "a\n"
    assert not (root / "src" / "new.txt").exists()
    await denying.ok("Bash", {"command": "echo more >> notes.txt"})


async def test_deny_rules_that_cover_too_much_to_list_refuse_the_command(
    denying: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandboxing, "MAX_WALKED", 3)
    out = await denying("Bash", {"command": "true"})
    assert out.is_error and "was not run" in out.text and "Anchor the deny rule" in out.text, out.text


async def test_a_git_commondir_a_command_makes_is_removed(call: Caller, root: Path, backend: str) -> None:
    """`.git/commondir` would send git, outside the sandbox, to another folder's config and hooks."""
    (root / "src" / "evil").mkdir()
    out = await call("Bash", {"command": f"echo {root}/src/evil > .git/commondir"})
    assert not (root / ".git" / "commondir").exists()
    assert "[Sandbox: " in out.text, out.text


async def test_a_background_job_cannot_make_a_git_commondir(call: Caller, root: Path, session: CodeSession) -> None:
    out = await call("Bash", {"command": "echo elsewhere > .git/commondir; echo done", "run_in_background": True})
    job = session.jobs.get(str(out.meta["backgroundTaskId"]))
    assert job is not None
    with anyio.fail_after(30):
        await job.done.wait()
    assert not (root / ".git" / "commondir").exists()
