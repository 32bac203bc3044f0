"""
Faults during Edit and Write: a full disk, a refused permission, a read-only mount, and files that change
under the tool between Read and Edit and between Edit's check and its write.

After every fault the original file is intact byte for byte, no temporary file is left, the error says
what happened, nothing outside the root changed, and the session goes on (a retry succeeds).
Faults are injected by replacing the `os` module that mcp_codetools.files.writes sees with one whose chosen
function fails, and, where the machine allows (root, Linux), with a real 64 KiB tmpfs and a read-only
bind mount. Races are driven by hooks at the exact points (validate_input, write_atomic), never sleeps.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.files import editing as editing_module
from mcp_codetools.files import writes as fileio
from mcp_codetools.tools import edit as edit_module
from mcp_codetools.tools import write as write_module
from tests.reliability.deep import hop_link, listing, make_deep
from tests.reliability.harness import Arena
from tests.reliability.report import Figures
from tests.reliability.workspace import Layout, temp_leftovers

pytestmark = pytest.mark.anyio

ORIGINAL = "first line\nsecond line\r\nthird line\n"


class FaultyOS:
    """The os module, except that `name` fails with `code` from its `after`-th call on (0: the first)."""

    def __init__(self, name: str, code: int, after: int = 0, partial: bool = False) -> None:
        self.name, self.code, self.after, self.partial = name, code, after, partial
        self.calls = 0
        self.fired = 0

    def __getattr__(self, attr: str) -> Any:
        real = getattr(os, attr)
        if attr != self.name:
            return real

        def faulty(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls <= self.after:
                return real(*args, **kwargs)
            self.fired += 1
            if self.partial and attr == "write":  # a short write lands first, then the device fails
                real(args[0], bytes(args[1][: max(1, len(args[1]) // 2)]))
            raise OSError(self.code, os.strerror(self.code))

        return faulty


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (renameat2 RENAME_EXCHANGE): neither is ever missing."""
    if _libc is None or _libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2(RENAME_EXCHANGE) failed")


def _load_libc() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "renameat2") else None
    except OSError:
        return None


_libc = _load_libc()


def target(arena: Arena, name: str = "target.txt", *, hard_link: bool = False) -> Path:
    path = arena.layout.root / name
    path.write_bytes(ORIGINAL.encode())
    if hard_link:
        os.link(path, arena.layout.root / f"{name}.link")
    return path


OPERATIONS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Edit": lambda name: {"file_path": name, "old_string": "second line", "new_string": "SECOND" * 2000},
    "Write": lambda name: {"file_path": name, "content": "replaced\n" * 5000},
}

REPLACE_POINTS = [
    ("open", 0, False),  # creating the temporary file
    ("write", 0, False),
    ("write", 0, True),  # a short write, then the failure
    ("fsync", 0, False),
    ("fchmod", 0, False),
    ("replace", 0, False),
]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EIO, errno.EDQUOT])
@pytest.mark.parametrize(("point", "after", "partial"), REPLACE_POINTS)
@pytest.mark.parametrize("tool_name", sorted(OPERATIONS))
async def test_a_failing_write_leaves_the_file_intact_and_says_why(
    arena: Arena,
    monkeypatch: pytest.MonkeyPatch,
    figures: Figures,
    suite: str,
    tool_name: str,
    point: str,
    after: int,
    partial: bool,
    code: int,
) -> None:
    path = target(arena)
    await arena.call("Read", {"file_path": path.name})
    faulty = FaultyOS(point, code, after, partial)
    monkeypatch.setattr(fileio, "os", faulty)
    output = await arena.call(tool_name, OPERATIONS[tool_name](path.name))
    monkeypatch.setattr(fileio, "os", os)
    figures.count(suite, faults=faulty.fired)
    assert faulty.fired, f"os.{point} was never called by {tool_name}"
    assert output.is_error, output.text
    assert os.strerror(code) in output.text, f"the error does not say what happened: {output.text}"
    assert path.read_bytes() == ORIGINAL.encode(), "the original file was changed by a failed write"
    assert not temp_leftovers(arena.layout.root), temp_leftovers(arena.layout.root)
    retry = await arena.call(tool_name, OPERATIONS[tool_name](path.name))
    assert not retry.is_error, f"the retry after the fault failed: {retry.text}"
    await arena.check_world(f"after {tool_name} with os.{point} failing")


@pytest.mark.parametrize("tool_name", sorted(OPERATIONS))
async def test_a_new_file_that_cannot_be_written_is_not_left_behind(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str, tool_name: str
) -> None:
    args = {"file_path": "sub/fresh.txt", "old_string": "", "new_string": "new\n"}
    if tool_name == "Write":
        args = {"file_path": "sub/fresh.txt", "content": "new\n"}
    for point in ("write", "replace"):
        faulty = FaultyOS(point, errno.ENOSPC)
        monkeypatch.setattr(fileio, "os", faulty)
        output = await arena.call(tool_name, args)
        monkeypatch.setattr(fileio, "os", os)
        figures.count(suite, faults=faulty.fired)
        assert output.is_error and "No space left on device" in output.text, output.text
        assert not (arena.layout.root / "sub" / "fresh.txt").exists()
        assert not temp_leftovers(arena.layout.root)


@pytest.mark.parametrize(("point", "code"), [("open", errno.EACCES), ("posix_fallocate", errno.ENOSPC)])
async def test_a_hard_linked_file_written_in_place_is_intact_when_the_write_cannot_start(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str, point: str, code: int
) -> None:
    """In-place writes (several hard links) are protected up to the first byte: open and space reservation."""
    path = target(arena, hard_link=True)
    monkeypatch.setattr(
        arena.session, "settings", dataclasses.replace(arena.session.settings, hard_links="write-through")
    )
    await arena.call("Read", {"file_path": path.name})
    faulty = FaultyOS(point, code)
    monkeypatch.setattr(fileio, "os", faulty)
    output = await arena.call("Write", {"file_path": path.name, "content": "x" * 100_000})
    monkeypatch.setattr(fileio, "os", os)
    figures.count(suite, faults=faulty.fired)
    assert faulty.fired and output.is_error and os.strerror(code) in output.text, output.text
    assert path.read_bytes() == ORIGINAL.encode()


# Real file systems: a 64 KiB tmpfs and a read-only bind mount (root only; skipped where not permitted).


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount {' '.join(args)} is not permitted here: {done.stderr.strip()}")


def _umount(point: Path) -> None:
    subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=30, check=False)


@pytest.fixture
def small_disk(layout: Layout) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount(8) to make a tmpfs")
    point = layout.root / "small"
    point.mkdir()
    _mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", str(point))
    try:
        yield point
    finally:
        _umount(point)


@pytest.mark.parametrize("tool_name", sorted(OPERATIONS))
async def test_a_really_full_disk(arena: Arena, small_disk: Path, figures: Figures, suite: str, tool_name: str) -> None:
    path = small_disk / "data.txt"
    path.write_bytes(b"HEAD\n" + ORIGINAL.encode() * 700)  # ~24 KiB of the 64: a 45 KiB copy does not fit beside it
    before = path.read_bytes()
    name = str(path)
    await arena.call("Read", {"file_path": name, "limit": 5000})
    args = (
        {"file_path": name, "old_string": "HEAD", "new_string": "Z" * 45_000}
        if tool_name == "Edit"
        else {"file_path": name, "content": "y" * 45_000}
    )
    output = await arena.call(tool_name, args)
    figures.count(suite, faults=1)
    assert output.is_error and "No space left on device" in output.text, output.text
    assert path.read_bytes() == before
    assert not temp_leftovers(small_disk), "a partial temporary file was left on the full disk"
    fits = {**args, "new_string": "small"} if tool_name == "Edit" else {**args, "content": "small\n"}
    retry = await arena.call(tool_name, fits)
    assert not retry.is_error, f"a write that fits failed after the disk-full error: {retry.text}"


@pytest.fixture
def read_only_folder(layout: Layout) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount(8) for a read-only bind mount")
    source = layout.root / "rw-source"
    source.mkdir()
    (source / "locked.txt").write_bytes(ORIGINAL.encode())
    point = layout.root / "ro"
    point.mkdir()
    _mount("--bind", str(source), str(point))
    try:
        _mount("-o", "remount,bind,ro", str(point))
        yield point
    finally:
        _umount(point)


@pytest.mark.parametrize("tool_name", sorted(OPERATIONS))
async def test_a_read_only_mount(
    arena: Arena, read_only_folder: Path, figures: Figures, suite: str, tool_name: str
) -> None:
    path = read_only_folder / "locked.txt"
    await arena.call("Read", {"file_path": str(path)})
    output = await arena.call(tool_name, OPERATIONS[tool_name](str(path)))
    figures.count(suite, faults=1)
    assert output.is_error and "Read-only file system" in output.text, output.text
    assert path.read_bytes() == ORIGINAL.encode()
    new = await arena.call("Write", {"file_path": str(read_only_folder / "new.txt"), "content": "x"})
    assert new.is_error and "Read-only file system" in new.text, new.text


# Races: the file changes between Read and Edit, and between Edit's check and its write.


def mutations(arena: Arena, path: Path) -> dict[str, Callable[[], None]]:
    """Ways another process can change `path` (all leave something worth keeping)."""
    outside = arena.layout.outside

    def replace_file() -> None:
        fresh = path.with_name(path.name + ".new")
        fresh.write_text("replaced by someone else\n", encoding="utf-8")
        os.replace(fresh, path)

    def symlink_out() -> None:
        path.unlink()
        path.symlink_to(outside / "secret.txt")

    def symlink_in() -> None:
        path.unlink()
        path.symlink_to(arena.layout.root / "text.txt")

    def same_size_and_mtime() -> None:  # as cp -p, rsync -t, tar or touch -r leave it
        st = os.stat(path)
        path.write_bytes(ORIGINAL.replace("first", "FIRST").encode())
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    return {
        "deleted": path.unlink,
        "replaced": replace_file,
        "symlink out": symlink_out,
        "symlink in": symlink_in,
        "appended": lambda: path.write_text(ORIGINAL + "appended\n", encoding="utf-8"),
        "same size and mtime": same_size_and_mtime,
        "truncated": lambda: path.write_bytes(b""),
    }


def state_of(path: Path) -> tuple[str, bytes | str]:
    if path.is_symlink():
        return ("link", os.readlink(path))
    if not path.exists():
        return ("absent", b"")
    return ("file", path.read_bytes())


MUTATIONS = [
    "deleted",
    "replaced",
    "symlink out",
    "symlink in",
    "appended",
    "same size and mtime",
    "truncated",
]


@pytest.mark.parametrize("change", MUTATIONS)
@pytest.mark.parametrize("tool_name", sorted(OPERATIONS))
async def test_a_change_between_read_and_edit_is_not_overwritten(
    arena: Arena, figures: Figures, suite: str, tool_name: str, change: str
) -> None:
    path = target(arena)
    await arena.call("Read", {"file_path": path.name})
    mutations(arena, path)[change]()
    figures.count(suite, faults=1)
    theirs = state_of(path)
    output = await arena.call(tool_name, OPERATIONS[tool_name](path.name))
    if change == "deleted" and tool_name == "Write":
        assert not output.is_error  # writing a file that is gone creates it: nothing of anyone's is lost
    else:
        assert output.is_error, f"{tool_name} overwrote a file that was {change} since it was read"
        assert state_of(path) == theirs, "the other writer's change was lost"
    await arena.check_world(f"after {change} between Read and {tool_name}")


@pytest.mark.parametrize("change", MUTATIONS)
@pytest.mark.parametrize("tool_name", sorted(OPERATIONS))
async def test_a_change_between_the_check_and_the_write_is_caught(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str, tool_name: str, change: str
) -> None:
    path = target(arena)
    await arena.call("Read", {"file_path": path.name})
    tool_class = edit_module.EditTool if tool_name == "Edit" else write_module.WriteTool
    original = tool_class.validate_input
    theirs: list[tuple[str, bytes | str]] = []

    async def check_then_change(self: Any, args: Any, ctx: Any) -> Any:
        checked = await original(self, args, ctx)
        mutations(arena, path)[change]()
        theirs.append(state_of(path))
        return checked

    monkeypatch.setattr(tool_class, "validate_input", check_then_change)
    output = await arena.call(tool_name, OPERATIONS[tool_name](path.name))
    figures.count(suite, faults=1)
    assert theirs, "the hook did not run"
    assert output.is_error, f"{tool_name} wrote over a file that was {change} after its check: {output.text}"
    assert state_of(path) == theirs[0], "the other writer's change was lost"
    await arena.check_world(f"after {change} between the check and the write of {tool_name}")


@pytest.mark.parametrize("swap", ["leaf symlink out", "folder symlink out"])
@pytest.mark.parametrize("tool_name", sorted(OPERATIONS))
async def test_a_swap_at_the_last_moment_cannot_write_outside(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str, tool_name: str, swap: str
) -> None:
    """Inside write_atomic, after every check: only the descriptor-based write can keep the data inside."""
    folder = arena.layout.root / "swapdir"
    folder.mkdir()
    path = folder / "t.txt"
    path.write_bytes(ORIGINAL.encode())
    await arena.call("Read", {"file_path": str(path)})
    real_write = fileio.write_atomic

    def swap_then_write(*args: Any, **kwargs: Any) -> Any:
        if swap == "leaf symlink out":
            path.unlink()
            path.symlink_to(arena.layout.outside / "secret.txt")
        else:
            folder.rename(folder.with_name("swapdir.moved"))
            folder.symlink_to(arena.layout.outside)
        return real_write(*args, **kwargs)

    # Every writing tool writes through editing.commit_write, which calls write_atomic after its last look.
    monkeypatch.setattr(editing_module, "write_atomic", swap_then_write)
    await arena.call(tool_name, OPERATIONS[tool_name](str(path)))
    figures.count(suite, faults=1)
    await arena.check_world(f"after a last-moment {swap} in {tool_name}")


@pytest.mark.skipif(_libc is None, reason="needs renameat2(RENAME_EXCHANGE) (Linux 3.15+, glibc 2.28+)")
async def test_a_folder_flipping_to_a_symlink_in_a_loop_never_lets_data_out(
    arena: Arena, figures: Figures, suite: str
) -> None:
    """peers 4.7 item 11: while a thread swaps root/a between a folder and a link out, no call reaches outside."""
    root, outside = arena.layout.root, arena.layout.outside
    (outside / "b").mkdir()
    (outside / "b" / "f").write_text("top secret in b\n", encoding="utf-8")
    arena.before = Arena.outside(arena.layout)
    real = root / "a"
    (real / "b").mkdir(parents=True)
    (real / "b" / "f").write_text("inside\n", encoding="utf-8")
    stop = threading.Event()
    flips = 0
    link = root / "a.link"
    link.symlink_to(outside)

    def flipper() -> None:
        nonlocal flips
        while not stop.is_set():
            exchange(real, link)  # root/a is the folder, then the link out, then the folder again: never missing
            flips += 1

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    try:
        with anyio.fail_after(60):
            for i in range(150):
                read = await arena.call("Read", {"file_path": "a/b/f"})
                assert "top secret" not in read.text, "a read followed the swapped-in link"
                await arena.call("Write", {"file_path": f"a/b/new{i}.txt", "content": "x\n"})
                await arena.call("Edit", {"file_path": "a/b/f", "old_string": "inside", "new_string": f"inside {i}"})
    finally:
        stop.set()
        thread.join(10)
    figures.count(suite, faults=450)  # every call of the loop raced the swaps
    figures.measure("swap loop: folder/symlink flips raced against 450 Read/Write/Edit calls", flips)
    await arena.check_world("after the swap loop")


@pytest.mark.parametrize("tool_name", ["Read", "Write"])
async def test_a_link_vanishing_while_the_path_is_resolved_is_an_error_result(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str, tool_name: str
) -> None:
    link = arena.layout.root / "flicker"
    link.symlink_to(arena.layout.root / "sub")
    real_readlink = os.readlink

    real_open = os.open

    def vanished(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path) == str(link):  # the link was removed between realpath's lstat and this readlink
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
        return real_readlink(path, *args, **kwargs)

    def vanished_before_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        # Read's resolver opens the path itself first (O_PATH, files/realpaths.py): the link is gone for it too.
        if isinstance(path, str) and path.startswith(f"{link}/"):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "readlink", vanished)
    monkeypatch.setattr(os, "open", vanished_before_open)
    args = {"file_path": "flicker/inner.py"} if tool_name == "Read" else {"file_path": "flicker/n.txt", "content": "x"}
    arena.log.records.clear()
    output = await arena.pipeline.run(arena.session, tool_name, args)
    figures.count(suite, calls=1, faults=1)
    assert output.is_error and output.meta.get("errorCode") != "internal_error", output.text


async def test_a_file_vanishing_between_the_last_stat_and_the_re_read_is_an_error_result(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str
) -> None:
    path = target(arena)
    await arena.call("Read", {"file_path": path.name})
    original = edit_module.EditTool.validate_input

    async def check_then_touch(self: Any, args: Any, ctx: Any) -> Any:
        checked = await original(self, args, ctx)
        path.write_bytes(ORIGINAL.encode() + b"more\n")  # the stamp differs, so the re-read happens
        return checked

    opened: list[Path] = []

    def vanished(path: Path, *args: Any, **kwargs: Any) -> Any:  # and the file is gone by the time it is opened
        opened.append(path)
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))

    monkeypatch.setattr(edit_module.EditTool, "validate_input", check_then_touch)
    monkeypatch.setattr(editing_module, "open_beneath", vanished)
    output = await arena.pipeline.run(arena.session, "Edit", OPERATIONS["Edit"](path.name))
    figures.count(suite, calls=1, faults=1)
    assert opened, "the re-read did not happen"
    assert output.is_error and output.meta.get("errorCode") != "internal_error", output.text


async def test_a_folder_swapped_before_mkdir_cannot_create_folders_outside(
    arena: Arena, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str
) -> None:
    root, outside = arena.layout.root, arena.layout.outside
    (root / "a").mkdir()

    class SwapBeforeMkdir:
        def __getattr__(self, name: str) -> Any:
            if name != "mkdir":
                return getattr(os, name)

            def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
                if (root / "a").is_dir() and not (root / "a").is_symlink():
                    (root / "a").rename(root / "a.parked")  # the check saw a folder; now it is a link out
                    (root / "a").symlink_to(outside)
                os.mkdir(path, *args, **kwargs)

            return mkdir

    monkeypatch.setattr(fileio, "os", SwapBeforeMkdir())
    output = await arena.call("Write", {"file_path": "a/newdir/deeper/f.txt", "content": "x\n"})
    monkeypatch.setattr(fileio, "os", os)
    figures.count(suite, faults=1)
    assert output.is_error
    assert not (outside / "newdir").exists(), "a folder was created outside the roots"


RACE_ROUNDS = 6
"""Rounds of the extended swap loop per variant (each round is RACE_CALLS calls); --run-slow runs thirty times more.
The flips fall differently in every run, so CI runs add up; the swapper spins all along (20 rounds: 24 CPU-s, 10
rounds: 12)."""
SECRET_NAME = "secret-name.txt"
FLIPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop, fifo = (os.fsencode(p) for p in sys.argv[1:5])
flips = 0
report = None
while not os.path.exists(stop):
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit(f"renameat2 failed: {ctypes.get_errno()}")
    flips += 1
    if report is None:
        report = os.open(fifo, os.O_WRONLY)  # the test waits on the other end: the swapper is running
        os.write(report, b"started\\n")
os.write(report, f"flips {flips}\\n".encode())
"""


def notebook(source: str) -> str:
    """A one-cell notebook (nbformat 4) whose cell holds `source`."""
    cell = {"cell_type": "markdown", "id": "c0", "metadata": {}, "source": source}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def race_calls(i: int) -> list[tuple[str, dict[str, Any]]]:
    """One round of the extended loop: every tool that opens a path below `a`, Grep and Glob in every mode."""
    return [
        ("Read", {"file_path": "a/b/f"}),
        ("Write", {"file_path": f"a/b/new{i}.txt", "content": "x\n"}),
        ("Write", {"file_path": f"a/b/dir{i}/deeper/new.txt", "content": "x\n"}),
        ("Edit", {"file_path": "a/b/f", "old_string": "inside", "new_string": f"inside {i}"}),
        ("Edit", {"file_path": f"a/b/e{i}.txt", "old_string": "", "new_string": "created\n"}),
        ("Read", {"file_path": "a/b/secret-nam.txt"}),  # a miss: the "Did you mean" hint lists the folder
        ("Grep", {"pattern": "secret|inside", "path": "a", "output_mode": "content"}),
        ("Grep", {"pattern": "secret|inside", "path": "a/b/f", "output_mode": "content"}),
        ("Grep", {"pattern": "secret|inside", "path": "a/b", "output_mode": "files_with_matches"}),
        ("Grep", {"pattern": "secret|inside", "path": "a", "output_mode": "count"}),
        ("Glob", {"pattern": "**/*", "path": "a"}),
        ("Glob", {"pattern": "a/b/*.txt"}),
        # From the root: rg walks into a/ by path while it flips (the sandbox keeps rg below the root).
        ("Grep", {"pattern": "secret|inside", "output_mode": "content"}),
        ("Grep", {"pattern": "secret|inside"}),
        ("Glob", {"pattern": "**/*.txt"}),
        # The rest of the edit family: the same confined opens, and restore writes back an old version.
        ("MultiEdit", {"file_path": "a/b/f", "edits": [{"old_string": "inside", "new_string": f"inside {i}"}]}),
        ("Read", {"file_path": "a/b/n.ipynb"}),
        ("NotebookEdit", {"notebook_path": "a/b/n.ipynb", "new_source": f"print({i})", "edit_mode": "insert"}),
        ("FileHistory", {"action": "list", "file_path": "a/b/f"}),
        ("FileHistory", {"action": "restore", "file_path": "a/b/f", "version": 1 + i % 8, "force": True}),
    ]


RACE_CALLS = len(race_calls(0))


@pytest.mark.skipif(_libc is None, reason="needs renameat2(RENAME_EXCHANGE) (Linux 3.15+, glibc 2.28+)")
@pytest.mark.parametrize("swapper", ["thread", "background Bash job"])
@pytest.mark.parametrize("depth", ["shallow", "deep"])
async def test_a_folder_flipping_to_a_link_never_lets_any_tool_out(
    arena: Arena, figures: Figures, suite: str, tmp_path_factory: pytest.TempPathFactory, depth: str, swapper: str
) -> None:
    """issue 12: root/a flips between a folder and a link out (to a folder > PATH_MAX deep, where /proc
    cannot name what was opened) while every tool that opens a path runs on paths below it."""
    root = arena.layout.root
    real = root / "a"
    (real / "b").mkdir(parents=True)
    (real / "b" / "f").write_text("inside\n", encoding="utf-8")
    (real / "b" / "n.ipynb").write_text(notebook("inside"), encoding="utf-8")
    link = root / "a.link"
    outside_files = {
        "b/f": "top secret far away\n",
        f"b/{SECRET_NAME}": "top secret far away\n",
        "b/n.ipynb": notebook("top secret far away"),
    }
    if depth == "deep":
        far = tmp_path_factory.mktemp("deep")  # beside the arena: its snapshot could not walk this deep
        _bottom, names = make_deep(far, files=outside_files)
        hop_link(link, far / "hop", far, names)
        before_far = listing(far, names)
    else:
        far, names = arena.layout.outside / "flip", []
        for relative, text in outside_files.items():
            (far / relative).parent.mkdir(parents=True, exist_ok=True)
            (far / relative).write_text(text, encoding="utf-8")
        link.symlink_to(far)
        before_far = []
    arena.before = Arena.outside(arena.layout)
    stop = threading.Event()
    flips = 0
    job: str | None = None
    aside = tmp_path_factory.mktemp("swapper")  # the swapper's own files, beside the arena's snapshot
    stop_file = aside / "stop"

    def flipper() -> None:
        nonlocal flips
        while not stop.is_set():
            exchange(real, link)
            flips += 1

    thread = threading.Thread(target=flipper, daemon=True)
    if swapper == "thread":
        thread.start()
    else:
        script = aside / "flipper.py"
        script.write_text(FLIPPER, encoding="utf-8")
        fifo = aside / "flipper.fifo"
        os.mkfifo(fifo)
        report = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        started = await arena.call(
            "Bash",
            {
                "command": f"{sys.executable} {script} {real} {link} {stop_file} {fifo}",
                "run_in_background": True,
                "description": "flip a folder and a link",
            },
        )
        assert not started.is_error, started.text
        job = str(started.meta["backgroundTaskId"])
        with anyio.fail_after(30):
            await anyio.wait_readable(report)  # the swapper writes to the FIFO after its first flip
    rounds = RACE_ROUNDS * (30 if figures.long_mode else 1)
    calls = 0
    try:
        with anyio.fail_after(600):
            for i in range(rounds):
                for name, args in race_calls(i):
                    output = await arena.call(name, args)  # asserts: no secret text, no internal error
                    calls += 1
                    assert SECRET_NAME not in output.text, f"{name} {args} named an outside file: {output.text}"
    finally:
        stop.set()
        stop_file.touch()
        if thread.is_alive():
            thread.join(10)
    if job is not None:
        said = b""
        with anyio.fail_after(30):
            while True:
                await anyio.wait_readable(report)
                chunk = os.read(report, 1024)
                said += chunk
                if not chunk:
                    break
        os.close(report)
        await arena.call("KillShell", {"shell_id": job})
        flips = int(said.split(b"flips", 1)[1].split()[0]) if b"flips" in said else 0
    figures.count(suite, faults=calls)
    figures.measure(f"swap loop ({depth} target, {swapper}): calls raced / leaks", f"{calls} / 0")
    figures.measure(f"swap loop ({depth} target, {swapper}): folder/link flips", flips)
    assert flips > 0, "the swapper never ran"
    await arena.check_world(f"after the {depth} swap loop with a {swapper}")
    if depth == "deep":
        assert listing(far, names) == before_far, "something was written in the deep folder outside"
