"""
Confined opens (issue 12): a folder swapped for a symlink after the path check, even to a target too deep
for /proc to name, cannot carry Read, Write or Edit outside the roots. Every test runs twice: once with
the one-call open (openat2 on Linux, O_NOFOLLOW_ANY on macOS) and once with the component-by-component
walk that stands in for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.files import fdpaths, opening
from mcp_codetools.files.paths import Workspace
from mcp_codetools.search import sandbox
from tests import facilities
from tests.conftest import Caller
from tests.reliability.deep import listing, make_deep
from tests.tools.swaps import around_each_resolve, swap_after_resolve

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["one-call", "walk"])
def open_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(opening, "use_one_call", request.param == "one-call")
    if request.param == "one-call" and opening.method() == "walk":
        pytest.skip("this system has no one-call confined open (openat2: Linux 5.6+; O_NOFOLLOW_ANY: macOS 11+)")
    return str(request.param)


def deep_listing(top: Path, names: list[str]) -> list[str]:
    return listing(top, names)


@pytest.fixture
def deep_swap(root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, list[str]]]:
    """root/d becomes a symlink to a folder over 4096 bytes deep outside, right after the path check."""
    folder = root / "d"
    (folder / "sub").mkdir(parents=True)
    (folder / "f.txt").write_text("inside\n", encoding="utf-8")
    deep, names = make_deep(outside, files={"f.txt": "top secret deep\n", "sub/.keep": ""})
    # A symlink's target holds at most PATH_MAX bytes, so the way down takes two links.
    half = len(names) // 2
    (outside / "hop").symlink_to(outside.joinpath(*names[:half]))
    target = (outside / "hop").joinpath(*names[half:])
    swap_after_resolve(monkeypatch, folder, target)
    yield outside, names
    if folder.is_symlink():  # let tmp_path cleanup see plain folders only
        folder.unlink()


@pytest.fixture(params=["held", "by path"])
def read_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Read through the file the resolver held (Linux with /proc), or by its path from the root's descriptor."""
    if request.param == "held" and not fdpaths.usable():
        pytest.skip("this system cannot name a held descriptor (/proc/self/fd): Read goes by path")
    monkeypatch.setattr(fdpaths, "FORCE_PORTABLE", request.param != "held")
    return str(request.param)


async def test_read_through_a_folder_swapped_to_a_deep_target_is_refused(
    call: Caller, root: Path, deep_swap: tuple[Path, list[str]], open_mode: str, read_by: str
) -> None:
    """By path, the confined open refuses the link; held, the read is of the file that was checked."""
    out = await call("Read", {"file_path": str(root / "d" / "f.txt")})
    assert "top secret" not in out.text
    if read_by == "held":
        assert not out.is_error and "1\tinside" in out.text, out.text
    else:
        assert out.meta["errorCode"] == "permission_denied", out.text


@pytest.mark.parametrize(
    "tool_args",
    [
        ("Write", {"file_path": "d/sub/new.txt", "content": "x\n"}),
        ("Write", {"file_path": "d/sub/more/new.txt", "content": "x\n"}),
        ("Edit", {"file_path": "d/sub/new.txt", "old_string": "", "new_string": "x\n"}),
    ],
)
async def test_a_create_through_a_folder_swapped_to_a_deep_target_is_refused(
    call: Caller,
    root: Path,
    deep_swap: tuple[Path, list[str]],
    open_mode: str,
    tool_args: tuple[str, dict[str, str]],
) -> None:
    outside, names = deep_swap
    before = deep_listing(outside, names)
    name, args = tool_args
    out = await call.fails(name, args)
    assert out.meta["errorCode"] == "permission_denied", out.text
    assert deep_listing(outside, names) == before, "a file was created outside the roots"


async def test_edit_re_read_through_a_swapped_folder_is_refused(
    call: Caller, root: Path, outside: Path, open_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last look before writing is a confined open too: a swap before it leaves everything as it was."""
    from mcp_codetools.tools import edit as edit_module

    folder = root / "e"
    folder.mkdir()
    (folder / "f.txt").write_text("alpha\n", encoding="utf-8")
    away = outside / "e_out"
    away.mkdir()
    (away / "f.txt").write_text("alpha\n", encoding="utf-8")
    await call.ok("Read", {"file_path": "e/f.txt"})
    original = edit_module.EditTool.validate_input

    async def check_then_swap(self: object, args: object, ctx: object) -> None:
        await original(self, args, ctx)  # type: ignore[arg-type]
        folder.rename(root / "e.parked")
        folder.symlink_to(away)

    monkeypatch.setattr(edit_module.EditTool, "validate_input", check_then_swap)
    out = await call.fails("Edit", {"file_path": "e/f.txt", "old_string": "alpha", "new_string": "beta"})
    assert out.meta["errorCode"] in ("file_changed_since_read", "permission_denied"), out.text
    assert (away / "f.txt").read_text(encoding="utf-8") == "alpha\n"
    assert (root / "e.parked" / "f.txt").read_text(encoding="utf-8") == "alpha\n"


async def test_a_file_deep_inside_the_root_still_works(call: Caller, root: Path, open_mode: str) -> None:
    """Depth alone is never a reason to refuse: a path near PATH_MAX opens like any other."""
    deep, names = make_deep(root, total=3900, files={"f.txt": "top secret deep\n", "sub/.keep": ""})
    assert call.session.set_cwd(deep)
    read = await call.ok("Read", {"file_path": "f.txt"})
    assert "top secret deep" in read
    await call.ok("Edit", {"file_path": "f.txt", "old_string": "deep", "new_string": "deeper"})
    await call.ok("Write", {"file_path": "sub/n/new.txt", "content": "made\n"})
    assert "sub/n/" in deep_listing(root, names)


async def test_a_replaced_root_is_refused(call: Caller, root: Path, tmp_path: Path, open_mode: str) -> None:
    (root / "a.txt").write_text("one\n", encoding="utf-8")
    root.rename(tmp_path / "old-root")
    root.mkdir()
    (root / "a.txt").write_text("two\n", encoding="utf-8")
    out = await call.fails("Read", {"file_path": str(root / "a.txt")})
    assert out.meta["errorCode"] == "permission_denied" and "replaced" in out.text, out.text


def test_the_walk_refuses_every_symlink_on_the_way(root: Path, open_mode: str) -> None:
    (root / "real").mkdir()
    (root / "real" / "f").write_text("x", encoding="utf-8")
    (root / "inner").symlink_to(root / "real")  # even a link that stays inside: the resolver gave a real path
    workspace = Workspace([root])
    fd = opening.open_beneath(root / "real" / "f", workspace, os.O_RDONLY)
    os.close(fd)
    for path in (root / "inner" / "f", root / "inner"):
        with pytest.raises(OSError) as caught:
            opening.open_beneath(path, workspace, os.O_RDONLY)
        assert opening.is_link_error(caught.value)


async def test_did_you_mean_never_names_a_file_outside(
    call: Caller, root: Path, outside: Path, open_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint lists the folder through a confined descriptor: a folder swapped for a link out lends no names."""
    folder = root / "h"
    folder.mkdir()
    (folder / "public.txt").write_text("x\n", encoding="utf-8")

    def put_back() -> None:  # from the last call's swap
        if folder.is_symlink():
            folder.unlink()
            (root / "h.parked").rename(folder)

    def swap() -> None:
        folder.rename(root / "h.parked")
        folder.symlink_to(outside)

    around_each_resolve(monkeypatch, swap, put_back)
    out = await call.fails("Read", {"file_path": "h/secret.tx"})
    assert out.meta["errorCode"] == "file_not_found" and "secret.txt" not in out.text, out.text
    edit = await call.fails("Edit", {"file_path": "h/secret.tx", "old_string": "a", "new_string": "b"})
    assert edit.meta["errorCode"] == "file_not_found" and "secret.txt" not in edit.text, edit.text


async def test_did_you_mean_still_helps_inside(call: Caller, root: Path, open_mode: str) -> None:
    (root / "notes.txt").write_text("x\n", encoding="utf-8")
    out = await call.fails("Read", {"file_path": "notes.tx"})
    assert f"Did you mean {root / 'notes.txt'}?" in out.text, out.text


@pytest.fixture
def search_swap(root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """root/g becomes a symlink to a folder outside right after each path check (and is put back before)."""
    folder = root / "g"
    folder.mkdir()
    (folder / "f.txt").write_text("needle inside\n", encoding="utf-8")
    away = outside / "g_out"
    away.mkdir()
    (away / "f.txt").write_text("needle top secret\n", encoding="utf-8")
    (away / "secret-name.txt").write_text("needle top secret\n", encoding="utf-8")

    def put_back() -> None:
        if folder.is_symlink():
            folder.unlink()
            (root / "g.parked").rename(folder)

    def swap() -> None:
        folder.rename(root / "g.parked")
        folder.symlink_to(away)

    around_each_resolve(monkeypatch, swap, put_back)
    return folder


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
@pytest.mark.parametrize("path", ["g", "g/f.txt"])
async def test_grep_through_a_folder_swapped_after_the_check_stays_inside(
    call: Caller, search_swap: Path, open_mode: str, mode: str, path: str
) -> None:
    out = await call("Grep", {"pattern": "needle", "path": path, "output_mode": mode})
    assert "top secret" not in out.text and "secret-name" not in out.text, out.text
    assert out.is_error and out.meta["errorCode"] == "permission_denied", out.text


async def test_glob_through_a_folder_swapped_after_the_check_stays_inside(
    call: Caller, search_swap: Path, open_mode: str
) -> None:
    out = await call("Glob", {"pattern": "*.txt", "path": "g"})
    assert "secret-name" not in out.text, out.text
    assert out.is_error and out.meta["errorCode"] == "permission_denied", out.text


async def test_search_names_that_became_links_are_dropped(root: Path, outside: Path, open_mode: str) -> None:
    """rg walks below the pinned folder by path; a name whose folder turned into a link is left out."""
    from mcp_codetools.search.targets import names_below, pin_search_target

    (root / "s" / "a").mkdir(parents=True)
    (root / "s" / "a" / "f.txt").write_text("x\n", encoding="utf-8")
    (root / "s" / "b").symlink_to(outside)
    pinned = pin_search_target(root / "s", root, Workspace([root]))
    try:
        kept, dropped = names_below(pinned, [b"s/a/f.txt", b"s/b/secret.txt", b"s/a/missing.txt", b"elsewhere/f"])
    finally:
        pinned.close()
    assert kept == [b"s/a/f.txt"] and dropped == 3


async def test_grep_shows_paths_as_given_after_pinning(call: Caller, root: Path, open_mode: str) -> None:
    (root / "src" / "sub").mkdir(parents=True)
    (root / "src" / "sub" / "a.py").write_text("needle\n", encoding="utf-8")
    assert await call.ok("Grep", {"pattern": "needle", "path": "src/sub/a.py"}) == "Found 1 file\nsrc/sub/a.py"
    assert await call.ok("Grep", {"pattern": "needle", "path": "src"}) == "Found 1 file\nsrc/sub/a.py"
    counted = await call.ok("Grep", {"pattern": "needle", "path": "src", "output_mode": "count"})
    assert counted.startswith("src/sub/a.py:1\n")
    content = await call.ok("Grep", {"pattern": "needle", "path": "src", "output_mode": "content", "-C": 1})
    assert content.startswith("src/sub/a.py:1:needle"), content
    globbed = await call.ok("Grep", {"pattern": "needle", "path": "src", "glob": "src/sub/*.py"})
    assert globbed == "Found 1 file\nsrc/sub/a.py"


async def test_rg_cannot_read_outside_the_pinned_folder_even_through_a_link(root: Path, outside: Path) -> None:
    """Landlock holds rg below the pinned folder: even told to follow links, it reads nothing outside."""
    if not sandbox.available():
        facilities.missing("landlock", "this kernel has no Landlock")
    from mcp_codetools.search.process import run_rg_on
    from mcp_codetools.search.sinks import LineCollector
    from mcp_codetools.search.targets import pin_search_target

    (root / "s").mkdir()
    (root / "s" / "f.txt").write_text("needle inside\n", encoding="utf-8")
    (root / "s" / "out").symlink_to(outside)
    (outside / "g.txt").write_text("needle top secret\n", encoding="utf-8")
    pinned = pin_search_target(root / "s", root, Workspace([root]))
    try:
        collect = LineCollector(1 << 20, sep=b"\n")
        result = await run_rg_on(
            ["--no-config", "--follow", "--no-heading", "--null", "-e", "needle", "--"], pinned, collect
        )
    finally:
        pinned.close()
    shown = b"\n".join(collect.records())
    assert b"needle inside" in shown
    assert b"top secret" not in shown, shown
    assert "Permission denied" in result.stderr


def test_only_executables_whose_needs_are_known_are_sandboxed(tmp_path: Path) -> None:
    from mcp_codetools.search.locate import find_rg

    script = tmp_path / "rg"
    script.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    assert sandbox.executable_kind(str(script)) == "other"
    assert sandbox.executable_kind(str(tmp_path / "missing")) == "other"
    rg = find_rg()
    assert rg is not None and sandbox.executable_kind(rg) in ("static", "dynamic")


async def test_ignore_files_above_the_searched_folder_still_apply(call: Caller, root: Path) -> None:
    """rg runs in (and, sandboxed, may read only below) the searched folder, yet the rules above it hold."""
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (root / "src" / "generated").mkdir(parents=True)
    (root / "src" / "generated" / "g.py").write_text("needle\n", encoding="utf-8")
    (root / "src" / "a.py").write_text("needle\n", encoding="utf-8")
    assert await call.ok("Grep", {"pattern": "needle", "path": "src"}) == "Found 1 file\nsrc/a.py"
    assert await call.ok("Glob", {"pattern": "**/*.py", "path": "src"}) == "src/a.py"


async def test_a_glob_whose_folder_changes_while_resolved_is_not_an_internal_error(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """realpath meets a name that was a link at lstat and a folder at readlink (EINVAL): Glob goes on."""
    import errno

    from mcp_codetools.tools import glob as glob_module

    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "x.txt").write_text("x\n", encoding="utf-8")
    real_realpath = os.path.realpath

    def flipping(path: object, *args: object, **kwargs: object) -> str:
        if str(path).endswith("/a/b"):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(path))
        return real_realpath(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(glob_module.os.path, "realpath", flipping)
    out = await call("Glob", {"pattern": "a/b/*.txt"})
    monkeypatch.undo()
    assert out.meta.get("errorCode") != "internal_error", out.text


@pytest.fixture(params=["fd path", "fchdir", "fchdir-preexec"])
def rg_start(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """rg started through /proc/self/fd/N (Linux with /proc) or by fchdir and stdin (macOS, no /proc).

    The fchdir is a posix_spawn file action where the C library has one, else Popen's preexec_fn.
    """
    from mcp_codetools.files import fdpaths
    from mcp_codetools.search import fdspawn

    if request.param == "fd path" and not fdpaths.usable():
        pytest.skip("/proc/self/fd does not name open descriptors here")
    if request.param == "fchdir" and not fdspawn.available():
        pytest.skip("no posix_spawn_file_actions_addfchdir_np here")
    monkeypatch.setattr(fdpaths, "FORCE_PORTABLE", request.param != "fd path")
    monkeypatch.setattr(fdspawn, "enabled", request.param == "fchdir")
    return str(request.param)


@pytest.fixture
def swap_at_spawn(root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """root/g (and root/g/f.txt) swapped for links out after rg's target was pinned, just before rg starts."""
    import subprocess

    folder = root / "g"
    folder.mkdir()
    (folder / "f.txt").write_text("needle inside\n", encoding="utf-8")
    away = outside / "g_out"
    away.mkdir()
    (away / "f.txt").write_text("needle top secret\n", encoding="utf-8")
    (away / "secret-name.txt").write_text("needle top secret\n", encoding="utf-8")
    from mcp_codetools.search import fdspawn

    real_popen, real_spawn = subprocess.Popen, fdspawn.spawn

    def swap() -> None:
        if not folder.is_symlink():
            folder.rename(root / "g.parked")
            folder.symlink_to(away)
            parked = root / "g.parked" / "f.txt"
            parked.rename(root / "g.parked" / "f.parked")
            parked.symlink_to(away / "f.txt")

    def swap_then_popen(*args: Any, **kwargs: Any) -> Any:
        swap()
        return real_popen(*args, **kwargs)

    def swap_then_spawn(*args: Any, **kwargs: Any) -> Any:
        swap()
        return real_spawn(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", swap_then_popen)
    monkeypatch.setattr(fdspawn, "spawn", swap_then_spawn)  # the posix_spawn start: the same last moment
    return folder


async def _search(target: Path, root: Path, argv: list[str]) -> bytes:
    from mcp_codetools.search.process import run_rg_on
    from mcp_codetools.search.sinks import LineCollector
    from mcp_codetools.search.targets import pin_search_target

    pinned = pin_search_target(target, root, Workspace([root]))
    try:
        collect = LineCollector(1 << 20, sep=b"\n")
        await run_rg_on(argv, pinned, collect)
    finally:
        pinned.close()
    return b"\n".join(collect.records())


@pytest.mark.parametrize("landlock", [True, False])
@pytest.mark.parametrize("what", ["folder", "file"])
async def test_a_swap_after_pinning_cannot_move_rg_out(
    root: Path, swap_at_spawn: Path, rg_start: str, what: str, landlock: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last moment before rg starts: rg still searches the pinned folder or file, not the link's target."""
    if landlock and not sandbox.available():
        facilities.missing("landlock", "this kernel has no Landlock")
    monkeypatch.setattr(sandbox, "enabled", landlock)
    target = swap_at_spawn if what == "folder" else swap_at_spawn / "f.txt"
    shown = await _search(target, root, ["--no-config", "--no-heading", "-H", "--null", "-e", "needle", "--"])
    assert b"needle inside" in shown, shown
    assert b"top secret" not in shown and b"secret-name" not in shown, shown


async def test_the_swap_is_real_a_start_by_path_would_follow_it(root: Path, swap_at_spawn: Path) -> None:
    """The control for the test above: rg started in the folder's path lands outside, so that test can fail."""
    from mcp_codetools.search.process import run_rg
    from mcp_codetools.search.sinks import LineCollector

    collect = LineCollector(1 << 20, sep=b"\n")
    await run_rg(["--no-config", "--no-heading", "-e", "needle"], swap_at_spawn, collect)
    assert b"top secret" in b"\n".join(collect.records())


def test_rg_complaints_name_only_paths_still_below_the_pinned_folder(root: Path) -> None:
    """Unsandboxed, rg can list a folder swapped in from outside; its errors must not name what it saw there."""
    from mcp_codetools.search.targets import CHANGED_PATH, pin_search_target, redact_stderr

    (root / "s" / "a").mkdir(parents=True)
    (root / "s" / "a" / "f.txt").write_text("x\n", encoding="utf-8")
    pinned = pin_search_target(root / "s", root, Workspace([root]))
    try:
        stderr = (
            "rg: s/a/f.txt: Permission denied (os error 13)\n"
            "rg: s/a/secret-name.txt: No such file or directory (os error 2)\n"
            "rg: some other note"
        )
        shown = redact_stderr(pinned, stderr)
    finally:
        pinned.close()
    assert shown.splitlines() == [
        "rg: s/a/f.txt: Permission denied (os error 13)",
        f"rg: {CHANGED_PATH}: No such file or directory (os error 2)",
        "rg: some other note",
    ]
