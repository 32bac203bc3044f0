"""The server's own install is kept from tool calls when it lies in a root (a project's `.venv` serving it).

The server imports its modules on first use and runs the sandbox's launchers, rg and bwrap from its
Python, outside any sandbox. So a sandboxed command that replaced `.venv/bin/python` or a module of the
package would have its code run as the server, unconfined, at the next call. The install folders are
kept like the config files: a file tool's write is asked about as protected, and a sandboxed command
cannot change them, whatever the question's answer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy import loading
from mcp_codetools.policy.engine import CallFacts
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.sandboxing import protected_paths
from mcp_codetools.session import CodeSession
from mcp_codetools.settings.sources import server_install_folders
from mcp_codetools.tools import default_tools
from tests.conftest import Caller
from tests.tools.test_bash_sandbox_kept import YesCaller, backend, made_root, root, settings

__all__ = ["backend", "made_root", "root", "settings"]  # the kept-paths suite's fixtures, one per backend

pytestmark = pytest.mark.anyio

INTERPRETER = '#!/bin/sh\nexec /usr/bin/env python3 "$@"\n'


def test_the_install_folders_are_this_python_and_this_package() -> None:
    folders = server_install_folders()
    assert Path(sys.prefix).resolve() in folders and Path(sys.base_prefix).resolve() in folders
    assert Path(loading.__file__).resolve().parents[1] in folders  # mcp_codetools/
    assert all(folder == folder.resolve() for folder in folders)


@pytest.fixture
def venv(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's Python as a `.venv` inside the root."""
    folder = root / ".venv"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text(INTERPRETER, encoding="utf-8")
    monkeypatch.setattr(loading, "server_install_folders", lambda: (folder,))
    return folder


def test_a_file_tool_writing_the_install_is_asked_about_as_protected(tmp_path: Path, venv: Path) -> None:
    policy = loading.load_policy_config([venv.parent], read_user_file=False).policy([venv.parent])
    decision = policy.decide(CallFacts("Write", read_only=False, write_paths=(venv / "bin" / "python",)))
    assert (decision.behaviour, decision.protected) == ("ask", True), decision.reason
    assert venv in protected_paths(policy, [venv.parent]), "read-only in the sandbox too"


@pytest.fixture
def call(session: CodeSession, root: Path, venv: Path) -> Caller:
    policy = loading.load_policy_config([root], read_user_file=False).policy([root])
    gate = PermissionGate(policy, sandboxed_bash=True, unanswered="allow")
    return YesCaller(Pipeline(default_tools(), gate), session)


@pytest.mark.parametrize(
    "command",
    [
        "printf '#!/bin/sh\\necho pwned\\n' > .venv/bin/python",
        "rm .venv/bin/python && printf 'pwned' > .venv/bin/python",
        "mv .venv .venv-old && mkdir -p .venv/bin && echo pwned > .venv/bin/python",
        "echo pwned > .venv/bin/rg",
    ],
)
async def test_a_sandboxed_command_cannot_change_the_install(
    call: Caller, root: Path, venv: Path, command: str
) -> None:
    await call("Bash", {"command": command})
    assert (venv / "bin" / "python").read_text(encoding="utf-8") == INTERPRETER
    assert sorted(p.name for p in (venv / "bin").iterdir()) == ["python"]
    assert not (root / ".venv-old").exists()
