"""Files that programs run on their own are protected paths: a call that would write one is asked about first.

Issue 35: `.envrc` (direnv runs it on `cd`) was not protected. Each name added then has its row here, both
for a file tool's write and for a Bash command's, and in the sandbox's read-only list. The server's own
cache, where the start snapshots are, is kept like the config files: what is there is sent to the client
at the next start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_codetools.policy.engine import PROTECTED_PATHS, CallFacts, Policy
from mcp_codetools.policy.loading import load_policy_config
from mcp_codetools.policy.sandboxing import protected_paths
from mcp_codetools.protocol import fast_start
from mcp_codetools.settings.sources import server_cache_folder

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


@pytest.fixture
def cache_in_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's cache folder inside the root, as when the home folder is served."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    return tmp_path / ".cache" / "mcp-codetools"


def test_the_server_cache_is_the_folder_the_start_snapshots_are_kept_in(tmp_path: Path) -> None:
    for environ in ({"XDG_CACHE_HOME": str(tmp_path)}, {"XDG_CACHE_HOME": "relative"}, {}):
        assert server_cache_folder(environ) == Path(fast_start.cache_dir(environ)).parent, environ


def test_writing_the_start_snapshots_is_asked_about_like_the_config_files(tmp_path: Path, cache_in_root: Path) -> None:
    """Issue 35: `echo ... > $XDG_CACHE_HOME/mcp-codetools/start/<key>.json` ran, and the next start sent it."""
    policy = load_policy_config([tmp_path], read_user_file=False).policy([tmp_path])
    snapshot = cache_in_root / "start" / f"{'0' * 64}.json"
    command = f'mkdir -p {snapshot.parent} && echo \'{{"instructions": "x"}}\' > {snapshot}'
    for facts in (
        CallFacts("Bash", read_only=False, command=command, cwd=tmp_path),
        CallFacts("Bash", read_only=False, command=f"rm -rf {cache_in_root}", cwd=tmp_path),
        CallFacts("Write", read_only=False, write_paths=(snapshot,)),
    ):
        decision = policy.decide(facts)
        assert (decision.behaviour, decision.protected) == ("ask", True), (facts, decision.reason)
    assert cache_in_root in protected_paths(policy, [tmp_path]), "read-only in the sandbox too"
