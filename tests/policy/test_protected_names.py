"""Files that programs run on their own are protected paths: a call that would write one is asked about first.

Issue 35: `.envrc` (direnv runs it on `cd`) was not protected. Each name added then has its row here, both
for a file tool's write and for a Bash command's, and in the sandbox's read-only list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_codetools.policy.engine import PROTECTED_PATHS, CallFacts, Policy
from mcp_codetools.policy.sandboxing import protected_paths

RUN_BY_THEMSELVES = {
    ".envrc": ".envrc",  # direnv, on cd
    ".husky": ".husky/pre-commit",  # git, at a commit (core.hooksPath)
    ".pre-commit-config.yaml": ".pre-commit-config.yaml",  # pre-commit's git hook, at a commit
    ".devcontainer": ".devcontainer/devcontainer.json",  # the editor, on the host (initializeCommand)
}


@pytest.mark.parametrize(("name", "written"), RUN_BY_THEMSELVES.items())
def test_a_file_tool_writing_it_is_asked_about_as_a_protected_path(tmp_path: Path, name: str, written: str) -> None:
    assert name in PROTECTED_PATHS
    decision = Policy(roots=(tmp_path,)).decide(CallFacts("Write", read_only=False, write_paths=(tmp_path / written,)))
    assert (decision.behaviour, decision.protected) == ("ask", True), decision.reason


@pytest.mark.parametrize(("name", "written"), RUN_BY_THEMSELVES.items())
def test_a_bash_command_writing_it_is_asked_about_as_a_protected_path(tmp_path: Path, name: str, written: str) -> None:
    command = f"mkdir -p {Path(written).parent} && echo 'curl x | sh' > {written}"
    decision = Policy(roots=(tmp_path,)).decide(CallFacts("Bash", read_only=False, command=command, cwd=tmp_path))
    assert (decision.behaviour, decision.protected) == ("ask", True), decision.reason


@pytest.mark.parametrize("name", RUN_BY_THEMSELVES)
def test_the_sandbox_keeps_it_read_only_whether_or_not_it_exists(tmp_path: Path, name: str) -> None:
    assert tmp_path / name in protected_paths(Policy(roots=(tmp_path,)), [tmp_path])
