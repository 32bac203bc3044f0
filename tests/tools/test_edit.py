"""Edit: read-first, staleness by content, literal matching, and files kept as they were stored."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from mcp_codetools.files import fdpaths
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import ConfigError, Settings, settings_from_env
from tests.conftest import Caller
from tests.tools.io_spy import file_io
from tests.tools.swaps import swap_after_resolve

pytestmark = pytest.mark.anyio


async def read_and_edit(call: Caller, path: Path, old: str, new: str, **extra: object) -> str:
    await call.ok("Read", {"file_path": str(path)})
    return await call.ok("Edit", {"file_path": str(path), "old_string": old, "new_string": new, **extra})


async def test_crlf_file_matched_with_lf_text_stays_crlf(call: Caller, root: Path) -> None:
    f = root / "win.txt"
    f.write_bytes(b"a = 1\r\nb = 2\r\nc = 3\r\n")
    await read_and_edit(call, f, "a = 1\nb = 2", "a = 10\nb = 20\nb2 = 21")
    assert f.read_bytes() == b"a = 10\r\nb = 20\r\nb2 = 21\r\nc = 3\r\n"


async def test_mixed_endings_keep_untouched_lines_byte_identical(call: Caller, root: Path) -> None:
    f = root / "mixed.txt"
    f.write_bytes(b"one\r\ntwo\nthree\r\nfour\n")
    await read_and_edit(call, f, "three", "THREE")
    assert f.read_bytes() == b"one\r\ntwo\nTHREE\r\nfour\n"


async def test_bom_and_missing_final_newline_are_kept(call: Caller, root: Path) -> None:
    f = root / "bom.txt"
    f.write_bytes(b"\xef\xbb\xbfalpha\nbeta")
    await read_and_edit(call, f, "beta", "gamma")
    assert f.read_bytes() == b"\xef\xbb\xbfalpha\ngamma"


async def test_utf16_and_latin1_round_trip(call: Caller, root: Path) -> None:
    u16 = root / "u16.txt"
    u16.write_bytes("x = «1»\n".encode("utf-16"))
    await read_and_edit(call, u16, "«1»", "«2»")
    assert u16.read_bytes() == "x = «2»\n".encode("utf-16")
    latin = root / "latin.txt"
    latin.write_bytes(b"caf\xe9 = 1\n")
    await read_and_edit(call, latin, "café = 1", "café = 2")
    assert latin.read_bytes() == b"caf\xe9 = 2\n"


async def test_invalid_utf8_bytes_elsewhere_survive_an_edit(call: Caller, root: Path) -> None:
    f = root / "odd.txt"
    f.write_bytes(b"good line\n" * 1000 + b"bad \xff\xfe bytes\nlast\n")
    await read_and_edit(call, f, "last", "final")
    assert f.read_bytes() == b"good line\n" * 1000 + b"bad \xff\xfe bytes\nfinal\n"


@pytest.mark.parametrize("replacement", ["$1", "\\1", "\\g<0>", "$&", "a\\nb"])
async def test_replacement_text_is_literal(call: Caller, root: Path, replacement: str) -> None:
    f = root / "lit.txt"
    f.write_text("value = (x)\n", encoding="utf-8")
    await read_and_edit(call, f, "(x)", replacement)
    assert f.read_text(encoding="utf-8") == f"value = {replacement}\n"


async def test_duplicates_are_refused_with_count_and_lines(call: Caller, root: Path) -> None:
    f = root / "dup.txt"
    f.write_text("foo\nbar\nfoo\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "foo", "new_string": "baz"})
    assert out.meta["errorCode"] == "old_string_not_unique"
    assert "Found 2 matches" in out.text and "lines 1, 3" in out.text
    text = await call.ok("Edit", {"file_path": str(f), "old_string": "foo", "new_string": "baz", "replace_all": True})
    assert "All 2 occurrences" in text
    assert f.read_text(encoding="utf-8") == "baz\nbar\nbaz\n"


async def test_second_edit_needs_no_reread(call: Caller, root: Path) -> None:
    f = root / "two.txt"
    f.write_text("a\nb\n", encoding="utf-8")
    await read_and_edit(call, f, "a", "A")
    await call.ok("Edit", {"file_path": str(f), "old_string": "b", "new_string": "B"})
    assert f.read_text(encoding="utf-8") == "A\nB\n"


async def test_touched_but_unchanged_file_is_allowed(call: Caller, root: Path) -> None:
    f = root / "touch.txt"
    f.write_text("same\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    os.utime(f, ns=(10**18, 10**18))
    await call.ok("Edit", {"file_path": str(f), "old_string": "same", "new_string": "new"})
    assert f.read_text(encoding="utf-8") == "new\n"


async def test_really_changed_file_is_refused(call: Caller, root: Path) -> None:
    f = root / "changed.txt"
    f.write_text("v1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    f.write_text("v2 by someone else\n", encoding="utf-8")
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "v2", "new_string": "v3"})
    assert out.meta["errorCode"] == "file_changed_since_read"
    assert out.text.startswith("File has been modified since read")
    assert f.read_text(encoding="utf-8") == "v2 by someone else\n"


async def test_change_between_check_and_write_is_caught(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_codetools.tools import edit as edit_module

    f = root / "race.txt"
    f.write_text("v1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    original = edit_module.EditTool.validate_input

    async def validate_then_someone_writes(self: object, args: object, ctx: object) -> object:
        checked = await original(self, args, ctx)  # type: ignore[arg-type]
        f.write_text("v1 changed behind our back\n", encoding="utf-8")
        return checked

    monkeypatch.setattr(edit_module.EditTool, "validate_input", validate_then_someone_writes)
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "v1", "new_string": "v2"})
    assert out.text.startswith("File has been unexpectedly modified")
    assert f.read_text(encoding="utf-8") == "v1 changed behind our back\n"


async def test_edit_loads_the_file_once_and_looks_again_only_before_writing(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """validate_input's load reaches call: no second open, and at most a stat to resolve, to open, and the last look."""
    f = root / "once.txt"
    f.write_text("v1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    with file_io(f, monkeypatch) as io:
        await call.ok("Edit", {"file_path": str(f), "old_string": "v1", "new_string": "v2"})
    # One open loads it; the last look before writing is an open beneath the root (no symlink can redirect it)
    # and an fstat, which reads the content again only when the stamp changed.
    assert io.opens == 2 and io.looks <= 2, io
    assert f.read_text(encoding="utf-8") == "v2\n"


async def test_a_file_touched_after_the_check_is_read_again_and_edited_when_unchanged(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_codetools.tools import edit as edit_module

    f = root / "touched.txt"
    f.write_text("v1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    original = edit_module.EditTool.validate_input

    async def validate_then_touch(self: object, args: object, ctx: object) -> object:
        checked = await original(self, args, ctx)  # type: ignore[arg-type]
        st = os.stat(f)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        return checked

    monkeypatch.setattr(edit_module.EditTool, "validate_input", validate_then_touch)
    with file_io(f, monkeypatch) as io:
        await call.ok("Edit", {"file_path": str(f), "old_string": "v1", "new_string": "v2"})
    assert io.opens == 2, "a changed stamp is settled by the content, read once more"
    assert f.read_text(encoding="utf-8") == "v2\n"


@pytest.mark.parametrize("tool_name", ["Edit", "Write"])
async def test_an_io_error_while_loading_is_an_error_result_that_says_so(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch, tool_name: str
) -> None:
    from mcp_codetools.files import editing

    f = root / "eio.txt"
    f.write_text("v1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})

    class FailingReads:
        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        def read(self, fd: int, size: int) -> bytes:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(editing, "os", FailingReads())
    args = {"old_string": "v1", "new_string": "v2"} if tool_name == "Edit" else {"content": "v2\n"}
    out = await call.fails(tool_name, {"file_path": str(f), **args})
    assert out.meta["errorCode"] == "execution_failed"
    assert out.text == f"Cannot read {f}: {os.strerror(errno.EIO)}"
    assert f.read_text(encoding="utf-8") == "v1\n"


async def test_whitespace_and_quote_mismatch_shows_the_region_when_recovery_is_off(
    pipeline: Pipeline, root: Path
) -> None:
    session = CodeSession(Settings(roots=(root,), edit_recovery="off"))
    call = Caller(pipeline, session)
    f = root / "q.py"
    f.write_text("def f():\n    say(\u201chello\u201d)\n    return 1\n", encoding="utf-8")
    try:
        await call.ok("Read", {"file_path": str(f)})
        out = await call.fails("Edit", {"file_path": str(f), "old_string": 'say("hello")', "new_string": "x"})
        assert "differs only in whitespace, indentation or quote style" in out.text
        assert "2\t    say(\u201chello\u201d)" in out.text
        out = await call.fails(
            "Edit", {"file_path": str(f), "old_string": "def f():\n  say(\u201chello\u201d)", "new_string": "x"}
        )
        assert "lines 1-2" in out.text
    finally:
        await session.aclose()


async def test_absent_text_is_refused_with_closest_region(call: Caller, root: Path) -> None:
    f = root / "c.py"
    f.write_text("alpha = compute(1, 2)\nbeta = 3\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "alpha = compute(1, 3)", "new_string": "x"})
    assert out.meta["errorCode"] == "old_string_not_found"
    assert "closest" in out.text and "1\talpha = compute(1, 2)" in out.text
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "nothing like it at all zzz", "new_string": "x"})
    assert "Read the file again" in out.text


async def test_same_old_and_new_is_refused(call: Caller, root: Path) -> None:
    f = root / "s.txt"
    f.write_text("x\n", encoding="utf-8")
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "x", "new_string": "x"})
    assert out.meta["errorCode"] == "no_change"


async def test_mode_bits_are_kept_and_history_remembers(call: Caller, root: Path) -> None:
    f = root / "run.sh"
    f.write_text("echo 1\n", encoding="utf-8")
    f.chmod(0o751)
    await read_and_edit(call, f, "echo 1", "echo 2")
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    assert call.session.history.versions(f) == [b"echo 1\n"]
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


async def test_hard_linked_file_is_refused_by_default_and_read_says_so(call: Caller, root: Path, outside: Path) -> None:
    """issue 12: a hard link to an outside file must not carry Edit or Write outside the roots."""
    secret = outside / "secret.txt"
    link = root / "h"
    os.link(secret, link)
    read = await call.ok("Read", {"file_path": str(link)})
    assert "2 hard links" in read
    edit = await call.fails("Edit", {"file_path": str(link), "old_string": "top", "new_string": "changed"})
    assert edit.meta["errorCode"] == "permission_denied"
    assert "hard links" in edit.text and "MCP_CODETOOLS_HARD_LINKS=write-through" in edit.text
    write = await call.fails("Write", {"file_path": str(link), "content": "changed\n"})
    assert write.meta["errorCode"] == "permission_denied"
    assert secret.read_text(encoding="utf-8") == "top secret\n"


async def test_hard_linked_file_is_written_in_place_when_allowed(root: Path, pipeline: Pipeline) -> None:
    f = root / "a.txt"
    f.write_text("shared\n", encoding="utf-8")
    other = root / "b.txt"
    os.link(f, other)
    inode = f.stat().st_ino
    session = CodeSession(Settings(roots=(root,), hard_links="write-through"))
    try:
        text = await read_and_edit(Caller(pipeline, session), f, "shared", "changed")
    finally:
        await session.aclose()
    assert "2 hard links" in text
    assert f.stat().st_ino == inode
    assert other.read_text(encoding="utf-8") == "changed\n"


def test_hard_links_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CODETOOLS_HARD_LINKS", "write-through")
    assert settings_from_env(["."]).hard_links == "write-through"
    monkeypatch.setenv("MCP_CODETOOLS_HARD_LINKS", "write-thru")  # a typo is refused, naming the variable
    with pytest.raises(ConfigError, match="MCP_CODETOOLS_HARD_LINKS"):
        settings_from_env(["."])
    monkeypatch.delenv("MCP_CODETOOLS_HARD_LINKS")
    assert settings_from_env(["."]).hard_links == "refuse"


async def test_read_only_file_is_refused_and_unchanged(call: Caller, root: Path) -> None:
    f = root / "ro.txt"
    f.write_text("keep\n", encoding="utf-8")
    f.chmod(0o444)
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "keep", "new_string": "lose"})
    assert out.meta["errorCode"] == "file_read_only"
    assert f.read_text(encoding="utf-8") == "keep\n"


async def test_symlink_to_outside_cannot_be_edited(call: Caller, root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    out = await call.fails("Edit", {"file_path": str(root / "link.txt"), "old_string": "top", "new_string": "x"})
    assert out.meta["errorCode"] == "permission_denied"
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "top secret\n"


async def test_dangling_symlink_to_outside_cannot_create_a_file(call: Caller, root: Path, outside: Path) -> None:
    (root / "evil.txt").symlink_to(outside / "new.txt")
    out = await call.fails("Write", {"file_path": str(root / "evil.txt"), "content": "x"})
    assert out.meta["errorCode"] == "permission_denied"
    out = await call.fails("Edit", {"file_path": str(root / "evil.txt"), "old_string": "", "new_string": "x"})
    assert out.meta["errorCode"] == "permission_denied"
    assert not (outside / "new.txt").exists()


async def test_empty_old_string_creates_a_missing_file_only(call: Caller, root: Path) -> None:
    f = root / "new" / "made.txt"
    text = await call.ok("Edit", {"file_path": str(f), "old_string": "", "new_string": "hello\n"})
    assert "created" in text
    assert f.read_text(encoding="utf-8") == "hello\n"
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "", "new_string": "again"})
    assert "already exists" in out.text


async def test_missing_field_and_wrong_type_are_named(call: Caller, root: Path) -> None:
    out = await call.fails("Edit", {"file_path": str(root / "x"), "old_string": "a"})
    assert "The required parameter `new_string` is missing." in out.text
    out = await call.fails("Read", {"file_path": str(root / "x"), "limit": "abc"})
    assert "The parameter `limit` must be an integer" in out.text
    out = await call.fails("Read", {"file_path": 5})
    assert "`file_path` must be a string" in out.text
    out = await call.fails("Read", {"file_path": "x", "bogus": 1})
    assert "An unexpected parameter `bogus` was provided." in out.text
    assert out.meta["errorCode"] == "invalid_input"


@pytest.fixture
def swap_after_check(root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder inside the root that becomes a symlink to `outside` right after the path check."""

    folder = root / "d"
    folder.mkdir()
    (folder / "f.txt").write_text("inside\n", encoding="utf-8")
    target = outside / "d_out"
    target.mkdir()
    (target / "f.txt").write_text("top secret\n", encoding="utf-8")
    swap_after_resolve(monkeypatch, folder, target)
    return folder


async def test_read_through_a_parent_swapped_after_the_check_is_refused(call: Caller, swap_after_check: Path) -> None:
    """Read goes through the file the resolver held where it can (the one checked), else the confined open refuses."""
    out = await call("Read", {"file_path": str(swap_after_check / "f.txt")})
    assert "top secret" not in out.text
    if fdpaths.usable():
        assert not out.is_error and out.text == "1\tinside", out.text
    else:
        assert out.meta["errorCode"] == "permission_denied", out.text


async def test_write_through_a_parent_swapped_after_the_check_is_refused(
    call: Caller, swap_after_check: Path, outside: Path
) -> None:
    out = await call.fails("Write", {"file_path": str(swap_after_check / "new.txt"), "content": "x"})
    assert out.meta["errorCode"] == "permission_denied"
    assert not (outside / "d_out" / "new.txt").exists()


async def test_a_huge_replaced_line_is_cut_in_the_result_and_its_patch(call: Caller, root: Path) -> None:
    """A one-line 3 MB edit: the file gets every byte, the result and the structured patch only a cut line."""
    f = root / "one-line.txt"
    f.write_text("head\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    out = await call("Edit", {"file_path": str(f), "old_string": "head", "new_string": "N" * 3_000_000})
    assert not out.is_error, out.text
    assert f.read_text(encoding="utf-8") == "N" * 3_000_000 + "\n"
    assert "[line cut: about 2998000 of its about 3000000 characters hidden]" in out.text and len(out.text) < 5_000
    patch_lines = out.meta["structuredPatch"][0]["lines"]
    assert max(len(line) for line in patch_lines) < 2_100


async def test_the_result_shows_no_line_after_the_final_newline(call: Caller, root: Path) -> None:
    f = root / "three.txt"
    f.write_text("one\ntwo\nthree\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    out = await call("Edit", {"file_path": str(f), "old_string": "two", "new_string": "TWO"})
    assert out.text.endswith("1\tone\n2\tTWO\n3\tthree"), out.text
    assert out.meta["structuredPatch"][0]["lines"] == [" one", "-two", "+TWO", " three"]
    assert out.meta["structuredPatch"][0]["oldLines"] == 3


async def test_an_empty_file_has_no_line_in_the_patch_before_or_after(call: Caller, root: Path) -> None:
    f = root / "empty.txt"
    f.write_text("", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    out = await call("Edit", {"file_path": str(f), "old_string": "", "new_string": "hi\n"})
    assert not out.is_error, out.text
    patch = out.meta["structuredPatch"][0]
    assert (patch["oldLines"], patch["newLines"], patch["lines"]) == (0, 1, ["+hi"])
    out = await call("Edit", {"file_path": str(f), "old_string": "hi\n", "new_string": ""})
    assert not out.is_error, out.text
    assert out.text.endswith("has been updated successfully. The file is now empty."), out.text
    patch = out.meta["structuredPatch"][0]
    assert (patch["oldLines"], patch["newLines"], patch["lines"]) == (1, 0, ["-hi"])
    assert f.read_bytes() == b""
