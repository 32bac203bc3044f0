"""Scratch folders carry their server's pid and start time; a new server removes those of dead servers, safely."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from mcp_codetools.files import scratch
from tests.reliability.stdio_peer import Peer

WAIT_S = 30


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def folder(base: Path, name: str) -> Path:
    path = base / name
    path.mkdir()
    (path / "sub").mkdir()
    (path / "sub" / "out.log").write_text("saved output\n", encoding="utf-8")
    return path


def test_a_scratch_folder_is_named_after_its_server() -> None:
    made = scratch.make_scratch_dir()
    try:
        pid, start = made.name.split("-")[2:4]
        assert int(pid) == os.getpid() and made.parent == Path(tempfile.gettempdir()).resolve()
        assert int(start) == (scratch.process_start(os.getpid()) or 0)
        assert (made.stat().st_mode & 0o777) == 0o700
        assert not scratch.owner_is_gone(int(pid), int(start))
    finally:
        made.rmdir()


def test_only_folders_of_gone_servers_are_removed(tmp_path: Path) -> None:
    own_start = scratch.process_start(os.getpid()) or 0
    gone = folder(tmp_path, f"mcp-codetools-{dead_pid()}-12345-abcd1234")
    alive = folder(tmp_path, f"mcp-codetools-{os.getppid()}-{scratch.process_start(os.getppid()) or 0}-abcd1234")
    mine = folder(tmp_path, f"mcp-codetools-{os.getpid()}-{own_start}-abcd1234")
    old_style = folder(tmp_path, "mcp-codetools-k2j4h5g6")
    other_name = folder(tmp_path, f"mcp-codetools-{dead_pid()}-12345-abcd1234.bak")
    target = folder(tmp_path, "elsewhere")
    link = tmp_path / f"mcp-codetools-{dead_pid()}-12345-link0000"
    link.symlink_to(target)

    assert scratch.sweep(tmp_path) == 1
    assert not gone.exists()
    for kept in (alive, mine, old_style, other_name, target / "sub" / "out.log"):
        assert kept.exists(), kept
    assert link.is_symlink()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times are read from /proc")
def test_a_reused_pid_does_not_keep_a_folder(tmp_path: Path) -> None:
    """The pid is alive, but its process started at another time than the folder's owner."""
    start = scratch.process_start(os.getppid())
    assert start is not None
    reused = folder(tmp_path, f"mcp-codetools-{os.getppid()}-{start + 1}-abcd1234")
    assert scratch.sweep(tmp_path) == 1
    assert not reused.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_another_users_folder_is_kept(tmp_path: Path) -> None:
    theirs = folder(tmp_path, f"mcp-codetools-{dead_pid()}-12345-abcd1234")
    os.chown(theirs, 65534, 65534)
    assert scratch.sweep(tmp_path) == 0
    assert theirs.exists()


def test_a_sweep_is_bounded(tmp_path: Path) -> None:
    for index in range(3):
        folder(tmp_path, f"mcp-codetools-{dead_pid()}-12345-abcd000{index}")
    assert scratch.sweep(tmp_path, max_removed=2) == 2
    assert len(list(tmp_path.iterdir())) == 1
    assert scratch.sweep(tmp_path, budget_s=0) == 0, "past its time budget a sweep stops"


@pytest.mark.anyio
async def test_the_next_server_removes_a_killed_servers_scratch_folder(root: Path) -> None:
    first = await Peer.start(root)
    try:
        with anyio.fail_after(WAIT_S):
            await first.ask(first.call("Bash", {"command": "echo hello"}))
        left = list(Path(tempfile.gettempdir()).glob(f"mcp-codetools-{first.pid}-*"))
        assert len(left) == 1, left
        first.raw.proc.kill()
        await first.raw.proc.wait()
        assert left[0].is_dir(), "SIGKILL leaves the folder: nothing of the server runs to remove it"
        second = await Peer.start(root, "--log-level", "INFO")
        try:
            with anyio.fail_after(WAIT_S):
                await second.ask(second.call("Glob", {"pattern": "*"}))  # its first session starts the sweep
                # Gone, by this server's sweep or by that of a server another test started meanwhile (tests
                # run in parallel, and every server's first session sweeps): the log line is not waited for.
                while left[0].exists():  # noqa: ASYNC110 - bounded poll: the sweep runs in a thread of the server
                    await anyio.sleep(0.05)
        finally:
            await second.kill()
    finally:
        await first.kill()
