"""The temporary files a killed writer leaves (`.<name>.<nonce><tag>.tmp`) go at the next write of that file,
and nothing else does: not a live writer's (locked, or too young), not another file's, not a link, not a
user's file that merely looks like one (issue 35: `.notes.txt.abcdefabcdef.tmp` was deleted)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_codetools.files import writes
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.session import CodeSession
from mcp_codetools.tools import default_tools
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

LATER = writes.STALE_AFTER_S + 1


def _temp(folder: Path, name: str = "a.txt", spelled: str | None = None) -> Path:
    """A temp file as the writer names it, or (`spelled`) a file of that exact name."""
    path = folder / (spelled if spelled is not None else writes.temp_name(name))
    path.write_bytes(b"half a write")
    return path


def _killed_writer(folder: Path) -> Path:
    """A process that makes a temp file as the writer does, locks it, and dies by SIGKILL."""
    path = folder / writes.temp_name("a.txt")
    script = (
        "import fcntl, os, signal, sys\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "os.write(fd, b'half')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], timeout=30, check=False)
    assert done.returncode == -9 and path.exists()
    return path


@pytest.fixture
def folder_fd(root: Path) -> Iterator[int]:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def test_a_killed_writers_temp_file_is_swept_once_stale(root: Path, folder_fd: int) -> None:
    dead = _killed_writer(root)
    assert writes.sweep_stale_temps("a.txt", folder_fd) == []  # too young: it might be a writer's in flight
    assert writes.sweep_stale_temps("a.txt", folder_fd, now=time.time() + LATER) == [dead.name]
    assert not dead.exists()


def test_a_live_writers_temp_file_is_kept_however_old(root: Path, folder_fd: int) -> None:
    live = _temp(root)
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a writer of another replica holds it
        assert writes.sweep_stale_temps("a.txt", folder_fd, now=time.time() + LATER) == []
    finally:
        os.close(fd)
    assert live.exists()
    assert writes.sweep_stale_temps("a.txt", folder_fd, now=time.time() + LATER) == [live.name]


def test_only_this_files_own_temp_files_are_touched(root: Path, outside: Path, folder_fd: int) -> None:
    stale = _temp(root)
    ours = writes.temp_name("a.txt")
    kept = [
        _temp(root, name="b.txt"),  # another file's
        _temp(root, spelled=ours.upper()),  # not the writer's hex
        _temp(root, spelled=ours[:-6] + ".tmp"),
        root / ".a.txt.tmp",
        root / ours[1:],
        root / f"{ours}.bak",
    ]
    for path in kept[3:]:
        path.write_bytes(b"x")
    target = outside / "secret.txt"
    link = root / writes.temp_name("a.txt")
    link.symlink_to(target)
    folder = root / writes.temp_name("a.txt")
    folder.mkdir()
    linked = _temp(root)
    os.link(linked, root / "other-name")  # a second name: another file, whatever it is called here
    assert writes.sweep_stale_temps("a.txt", folder_fd, now=time.time() + LATER) == [stale.name]
    for path in (*kept, link, folder, linked):
        assert os.path.lexists(path), path
    assert target.read_text(encoding="utf-8") == "top secret\n"


async def test_the_next_write_of_the_file_removes_a_dead_writers_temp(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = root / "a.txt"
    target.write_text("old\n", encoding="utf-8")
    dead = _killed_writer(root)
    fresh = _temp(root)
    other = _temp(root, name="b.txt")
    await call.ok("Read", {"file_path": str(target)})
    await call.ok("Write", {"file_path": str(target), "content": "new\n"})
    assert dead.exists() and fresh.exists()  # young: kept
    monkeypatch.setattr(writes, "STALE_AFTER_S", 0.0)  # as if a minute had passed
    await call.ok("Write", {"file_path": str(target), "content": "newer\n"})
    assert not dead.exists() and not fresh.exists() and other.exists()
    assert target.read_text(encoding="utf-8") == "newer\n"
    assert sorted(p.name for p in root.iterdir()) == [other.name, "a.txt"]


async def test_a_write_in_flight_is_never_swept(call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another replica's sweep while this write runs (here: from inside it) finds its temp file locked."""
    target = root / "a.txt"
    swept: list[list[str]] = []
    real_write_all = writes._write_all

    def write_all(fd: int, data: bytes) -> None:
        real_write_all(fd, data)
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            swept.append(writes.sweep_stale_temps("a.txt", folder, now=time.time() + LATER))
        finally:
            os.close(folder)

    monkeypatch.setattr(writes, "_write_all", write_all)
    await call.ok("Write", {"file_path": str(target), "content": "whole\n"})
    assert swept == [[]]
    assert target.read_text(encoding="utf-8") == "whole\n"


@pytest.mark.parametrize(
    "spelled",
    [
        ".notes.txt.abcdefabcdef.tmp",  # the file: the old pattern, 12 hex digits
        ".notes.txt.abcdefab01234567.tmp",  # the new length, but a tag that does not check
    ],
)
def test_a_users_file_that_looks_like_a_temp_file_is_never_swept(root: Path, folder_fd: int, spelled: str) -> None:
    """Only names the writer made (their tag checks) are ever removed, however old and unlocked."""
    users = _temp(root, spelled=spelled)
    ours = _temp(root, name="notes.txt")
    assert writes.sweep_stale_temps("notes.txt", folder_fd, now=time.time() + LATER) == [ours.name]
    assert users.read_bytes() == b"half a write"


async def test_a_write_keeps_a_users_look_alike_file_that_an_edit_deny_covers(
    session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35's reproduction: a Write of notes.txt swept the user's own `.notes.txt.abcdefabcdef.tmp`."""
    target = root / "notes.txt"
    target.write_text("old\n", encoding="utf-8")
    users = _temp(root, spelled=".notes.txt.abcdefabcdef.tmp")
    deny = (parse_rule("Edit(./.notes.txt.*.tmp)", "deny", source="test.toml", base=root),)
    call = Caller(Pipeline(default_tools(), PermissionGate(Policy(roots=(root,), deny=deny))), session)
    monkeypatch.setattr(writes, "STALE_AFTER_S", 0.0)  # as if a minute had passed
    await call.ok("Read", {"file_path": str(target)})
    await call.ok("Write", {"file_path": str(target), "content": "new\n"})
    assert users.read_bytes() == b"half a write"
