"""The portable rg start by posix_spawn (search/fdspawn.py): taken where the C library has it, Popen's
preexec_fn otherwise; rg lands in the descriptor's folder whatever its path became; failures say what
the preexec start says; a cancelled search leaves no process behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mcp_codetools.errors import ExecutionError
from mcp_codetools.files import fdpaths
from mcp_codetools.search import fdspawn
from mcp_codetools.search import process as search
from mcp_codetools.search.process import run_rg
from mcp_codetools.search.sinks import LineCollector

pytestmark = pytest.mark.anyio

WORKS_WITHOUT_PROC = True  # tests/platform_marks.py: /proc is only asked where mounted (`alive`)
needs_spawn = pytest.mark.skipif(not fdspawn.available(), reason="no posix_spawn_file_actions_addfchdir_np here")
ARGV = ["--no-config", "--no-heading", "-e", "needle"]


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The portable start forced; counts of the calls to fdspawn.spawn and to Popen."""
    monkeypatch.setattr(fdpaths, "FORCE_PORTABLE", True)
    counts = {"spawn": 0, "popen": 0, "preexec": 0}
    real_spawn, real_popen = fdspawn.spawn, subprocess.Popen

    def spawn(*args: Any, **kwargs: Any) -> Any:
        counts["spawn"] += 1
        return real_spawn(*args, **kwargs)

    def popen(*args: Any, **kwargs: Any) -> Any:
        counts["popen"] += 1
        counts["preexec"] += kwargs.get("preexec_fn") is not None
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(fdspawn, "spawn", spawn)
    monkeypatch.setattr(subprocess, "Popen", popen)
    return counts


async def search_in(fd: int) -> tuple[int, list[bytes]]:
    sink = LineCollector(100)
    with anyio.fail_after(20):
        result = await run_rg(ARGV, Path("/"), sink, cwd_fd=fd)
    return result.returncode, sink.records()


@needs_spawn
async def test_the_posix_spawn_start_is_taken_where_available(pinned: tuple[Path, int], starts: dict[str, int]) -> None:
    assert await search_in(pinned[1]) == (0, [b"a.txt:needle\n"])
    assert starts == {"spawn": 1, "popen": 0, "preexec": 0}


async def test_the_preexec_start_is_the_fallback_when_it_is_off(
    pinned: tuple[Path, int], starts: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fdspawn, "enabled", False)
    assert not fdspawn.available()
    assert await search_in(pinned[1]) == (0, [b"a.txt:needle\n"])
    assert starts == {"spawn": 0, "popen": 1, "preexec": 1}


async def test_the_preexec_start_is_the_fallback_without_the_c_function(
    pinned: tuple[Path, int], starts: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fdspawn, "_libc", None)  # as when the symbol is missing or ctypes cannot load libc
    assert await search_in(pinned[1]) == (0, [b"a.txt:needle\n"])
    assert starts["spawn"] == 0 and starts["preexec"] == 1


@pytest.mark.parametrize("use_spawn", [True, False], ids=["posix_spawn", "preexec"])
async def test_rg_runs_in_the_descriptors_folder_after_a_rename(
    pinned: tuple[Path, int], starts: dict[str, int], use_spawn: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if use_spawn and not fdspawn.available():
        pytest.skip("no posix_spawn_file_actions_addfchdir_np here")
    monkeypatch.setattr(fdspawn, "enabled", use_spawn)
    folder, fd = pinned
    folder.rename(folder.with_name("moved"))
    folder.mkdir()  # a new folder under the old name, holding another match
    (folder / "decoy.txt").write_text("needle decoy\n", encoding="utf-8")
    assert await search_in(fd) == (0, [b"a.txt:needle\n"])
    assert starts["spawn" if use_spawn else "preexec"] == 1


async def outcome(fd: int) -> str:
    """What a search in `fd` ends with: the error's message, or the result."""
    try:
        code, records = await search_in(fd)
    except ExecutionError as exc:
        return exc.message
    return f"{code} {records}"


@needs_spawn
async def test_an_unlinked_folder_ends_as_with_the_preexec_start(
    pinned: tuple[Path, int], starts: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, fd = pinned
    shutil.rmtree(folder)
    by_spawn = await outcome(fd)
    monkeypatch.setattr(fdspawn, "enabled", False)
    by_preexec = await outcome(fd)
    assert starts["spawn"] == 1 and starts["preexec"] == 1
    assert by_spawn == by_preexec


@needs_spawn
async def test_a_failed_fchdir_is_the_folders_not_rgs(
    pinned: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """posix_spawn's errno may be the fchdir's: a folder that cannot be entered is blamed, not rg."""
    monkeypatch.setattr(fdpaths, "FORCE_PORTABLE", True)

    def fail(argv: list[str], **kwargs: Any) -> Any:
        raise fdspawn.SpawnFailed(13, os.strerror(13), argv[0])

    monkeypatch.setattr(fdspawn, "spawn", fail)
    monkeypatch.setattr(search.os, "access", lambda *args, **kwargs: False)  # the probe: not searchable
    message = await outcome(pinned[1])
    monkeypatch.undo()
    assert message.startswith("Could not search /: this server's user may not enter that folder"), message
    assert "rg itself is fine" in message


@needs_spawn
async def test_a_refused_exec_with_a_sound_folder_is_rgs(
    pinned: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fdpaths, "FORCE_PORTABLE", True)

    def fail(argv: list[str], **kwargs: Any) -> Any:
        raise fdspawn.SpawnFailed(13, os.strerror(13), argv[0])

    monkeypatch.setattr(fdspawn, "spawn", fail)
    message = await outcome(pinned[1])
    assert "is not executable" in message and "folder" not in message, message


SLOW_RG = """#!/bin/sh
sleep 300 &
echo "started $!"
wait
"""


@pytest.mark.parametrize("use_spawn", [True, False], ids=["posix_spawn", "preexec"])
async def test_a_cancelled_search_leaves_no_process(
    pinned: tuple[Path, int],
    starts: dict[str, int],
    use_spawn: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """rg (here a stand-in that starts a child and waits) and its group are killed and reaped on cancel."""
    if use_spawn and not fdspawn.available():
        pytest.skip("no posix_spawn_file_actions_addfchdir_np here")
    monkeypatch.setattr(fdspawn, "enabled", use_spawn)
    slow = tmp_path / "slow-rg"
    slow.write_text(SLOW_RG, encoding="utf-8")
    slow.chmod(0o755)
    monkeypatch.setattr(search, "find_rg", lambda: str(slow))
    pids: list[int] = []
    real_spawn, real_popen = fdspawn.spawn, subprocess.Popen

    def spawn(*args: Any, **kwargs: Any) -> Any:
        process = real_spawn(*args, **kwargs)
        pids.append(process.pid)
        return process

    def popen(*args: Any, **kwargs: Any) -> Any:
        process = real_popen(*args, **kwargs)
        pids.append(process.pid)
        return process

    monkeypatch.setattr(fdspawn, "spawn", spawn)
    monkeypatch.setattr(subprocess, "Popen", popen)
    printed = threading.Event()
    lines: list[bytes] = []

    def sink(chunk: bytes) -> bool:
        lines.append(chunk)
        printed.set()
        return True

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_rg([], Path("/"), sink, cwd_fd=pinned[1]))
            assert await anyio.to_thread.run_sync(printed.wait, 20)
            tg.cancel_scope.cancel()
    assert len(pids) == 1 and starts["spawn" if use_spawn else "preexec"] == 1
    group = pids[0]
    assert reaped(group)
    # The search ended only once every writer of rg's pipes was gone, the child (which holds them) included.
    child = int(b"".join(lines).split()[1])
    assert alive(child) is not True, "rg's child survived the cancel"


PF_EXITING = 0x4


def reaped(pid: int) -> bool:
    """Whether our child `pid` has been waited for already (it is no child of ours any more)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def alive(pid: int) -> bool | None:
    """Whether `pid` runs: a zombie or an exiting process does not count; None where /proc cannot tell."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False if os.path.isdir("/proc/self") else None
    except OSError:
        return None
    return fields[0] not in ("Z", "X") and not int(fields[6]) & PF_EXITING
