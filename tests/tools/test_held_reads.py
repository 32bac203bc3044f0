"""The resolver asks the kernel for a file's real path (O_PATH and /proc/self/fd), and Read reads the file it held.

Each answer the kernel gives is checked to name the file held; every doubt falls back to `realpath` (the
portable way, which macOS, Windows and a system without /proc take), and no descriptor outlives its call.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_codetools.files import fdpaths, realpaths
from mcp_codetools.files.paths import Workspace
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.session import CodeSession
from mcp_codetools.tools import default_tools
from tests.conftest import Caller

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not fdpaths.usable(), reason="the system cannot name a held descriptor (/proc/self/fd)"),
]


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_kernel_answers_as_realpath_does(root: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_text("x\n", encoding="utf-8")
    (root / "alias").symlink_to(root / "d")
    for raw in ("d/f.txt", "alias/f.txt", "alias/../d/./f.txt", "alias", "."):
        joined = os.path.join(root, raw)
        pinned = realpaths.pin(joined)
        assert pinned is not None and pinned.real == os.path.realpath(joined), raw
        pinned.close()


@pytest.mark.parametrize("what", ["missing", "dangling link", "link loop"])
def test_what_the_kernel_cannot_open_is_left_to_realpath(root: Path, what: str) -> None:
    if what == "dangling link":
        (root / "p").symlink_to(root / "nowhere")
    elif what == "link loop":
        (root / "p").symlink_to(root / "q")
        (root / "q").symlink_to(root / "p")
    before = open_descriptors()
    assert realpaths.pin(str(root / "p")) is None
    assert open_descriptors() == before


@pytest.mark.parametrize("answer", ["deleted", "another file", "not a path"])
def test_a_kernel_name_that_is_not_the_held_file_falls_back(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    """A name marked ` (deleted)`, one that now names another file, or no path at all: realpath decides."""
    (root / "f.txt").write_text("x\n", encoding="utf-8")
    (root / "other.txt").write_text("y\n", encoding="utf-8")
    named = {
        "deleted": f"{root / 'f.txt'} (deleted)",
        "another file": str(root / "other.txt"),
        "not a path": "anon_inode:[eventfd]",
    }[answer]
    monkeypatch.setattr(realpaths.os, "readlink", lambda _: named)
    before = open_descriptors()
    assert realpaths.pin(str(root / "f.txt")) is None
    assert open_descriptors() == before
    real, pinned = Workspace([root]).resolve_pinned("f.txt", root)
    assert real == root / "f.txt" and pinned is None  # realpath's answer, nothing held


def test_a_kernel_name_outside_the_roots_is_refused_and_let_go(root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    workspace = Workspace([root])
    before = open_descriptors()
    with pytest.raises(Exception, match="outside the workspace roots"):
        workspace.resolve_pinned("link.txt", root)
    assert open_descriptors() == before


def test_the_resolver_takes_the_kernels_answer(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `realpath` walk for a file that exists: the kernel named it."""
    (root / "f.txt").write_text("x\n", encoding="utf-8")
    workspace = Workspace([root])

    def walked(path: str) -> str:
        raise AssertionError(f"realpath walked {path}")

    monkeypatch.setattr("mcp_codetools.files.paths.os.path.realpath", walked)
    real, pinned = workspace.resolve_pinned("f.txt", root)
    assert pinned is not None and real == root / "f.txt" and pinned.real == str(real)
    pinned.close()


async def test_read_reads_the_file_it_checked_after_a_rename(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file renamed away and another put in its place after the check: Read shows the one it checked."""
    (root / "f.txt").write_text("checked\n", encoding="utf-8")
    original = Workspace.resolve_pinned

    def resolve_then_replace(self: Workspace, raw: str, cwd: Path, **kwargs: object) -> object:
        resolved = original(self, raw, cwd, **kwargs)  # type: ignore[arg-type]
        (root / "f.txt").rename(root / "parked.txt")
        (root / "f.txt").write_text("put in its place\n", encoding="utf-8")
        return resolved

    monkeypatch.setattr(Workspace, "resolve_pinned", resolve_then_replace)
    text = await call.ok("Read", {"file_path": "f.txt"})
    assert "1\tchecked" in text and "put in its place" not in text, text


@pytest.mark.parametrize("case", ["a folder", "a FIFO"])
async def test_a_held_non_file_is_refused_without_opening_it_and_let_go(call: Caller, root: Path, case: str) -> None:
    target = root / "x"
    if case == "a folder":
        target.mkdir()
    else:
        os.mkfifo(target)  # a FIFO opened for reading with no writer would block the call
    before = open_descriptors()
    out = await call.fails("Read", {"file_path": "x"})
    assert out.meta["errorCode"] in ("not_a_file", "is_a_directory"), out.text
    assert open_descriptors() == before


async def test_a_call_refused_after_the_resolver_held_its_file_lets_it_go(root: Path, session: CodeSession) -> None:
    """A deny rule refuses the Read after its path was held: the pipeline closes what the tool never took."""
    (root / ".env").write_text("TOKEN=1\n", encoding="utf-8")
    rule = parse_rule("Read(.env)", "deny", source="test.toml", base=root)
    gate = PermissionGate(Policy(roots=(root,), deny=(rule,)), unanswered="deny")
    caller = Caller(Pipeline(default_tools(), gate), session)
    before = open_descriptors()
    out = await caller.fails("Read", {"file_path": ".env"})
    assert out.meta["errorCode"] == "permission_denied" and "TOKEN" not in out.text, out.text
    assert open_descriptors() == before
