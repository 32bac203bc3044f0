"""Write: new files with folders, existing files only after a full read, formats kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Caller
from tests.tools.io_spy import file_io

pytestmark = pytest.mark.anyio


async def test_new_file_gets_its_folders(call: Caller, root: Path) -> None:
    f = root / "a" / "b" / "c.txt"
    text = await call.ok("Write", {"file_path": str(f), "content": "hi\n"})
    assert text.startswith(f"File created successfully at: {f}")
    assert f.read_text(encoding="utf-8") == "hi\n"


async def test_existing_file_needs_a_read_and_no_change_since(call: Caller, root: Path) -> None:
    f = root / "e.txt"
    f.write_text("old\n", encoding="utf-8")
    out = await call.fails("Write", {"file_path": str(f), "content": "new\n"})
    assert out.text == "File has not been read yet. Read it first before writing to it."
    await call.ok("Read", {"file_path": str(f)})
    f.write_text("changed\n", encoding="utf-8")
    out = await call.fails("Write", {"file_path": str(f), "content": "new\n"})
    assert out.meta["errorCode"] == "file_changed_since_read"
    await call.ok("Read", {"file_path": str(f)})
    text = await call.ok("Write", {"file_path": str(f), "content": "new\n"})
    assert "updated successfully" in text
    assert f.read_text(encoding="utf-8") == "new\n"
    assert call.session.history.versions(f) == [b"changed\n"]


async def test_write_loads_the_file_once_and_looks_again_only_before_writing(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """validate_input's load reaches call: no second open, and at most a stat to resolve, to open, and the last look."""
    f = root / "once.txt"
    f.write_text("v1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    with file_io(f, monkeypatch) as io:
        await call.ok("Write", {"file_path": str(f), "content": "v2\n"})
    # One open loads it; the last look before writing is an open beneath the root (no symlink can redirect it)
    # and an fstat, which reads the content again only when the stamp changed.
    assert io.opens == 2 and io.looks <= 2, io
    assert f.read_text(encoding="utf-8") == "v2\n"


async def test_partly_read_file_cannot_be_overwritten(call: Caller, root: Path) -> None:
    f = root / "p.txt"
    f.write_text("".join(f"{i}\n" for i in range(1, 11)), encoding="utf-8")
    await call.ok("Read", {"file_path": str(f), "limit": 4})
    out = await call.fails("Write", {"file_path": str(f), "content": "x\n"})
    assert "lines 5-10 were not read" in out.text
    await call.ok("Read", {"file_path": str(f), "offset": 5})
    await call.ok("Write", {"file_path": str(f), "content": "x\n"})
    assert f.read_text(encoding="utf-8") == "x\n"


async def test_crlf_and_bom_of_an_existing_file_are_kept(call: Caller, root: Path) -> None:
    f = root / "w.txt"
    f.write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    await call.ok("Read", {"file_path": str(f)})
    await call.ok("Write", {"file_path": str(f), "content": "x\ny\n"})
    assert f.read_bytes() == b"\xef\xbb\xbfx\r\ny\r\n"


async def test_write_then_edit_needs_no_read(call: Caller, root: Path) -> None:
    f = root / "we.txt"
    await call.ok("Write", {"file_path": str(f), "content": "one\n"})
    await call.ok("Edit", {"file_path": str(f), "old_string": "one", "new_string": "two"})
    assert f.read_text(encoding="utf-8") == "two\n"


async def test_outside_paths_and_directories_are_refused(call: Caller, root: Path, outside: Path) -> None:
    out = await call.fails("Write", {"file_path": str(outside / "x.txt"), "content": "x"})
    assert out.meta["errorCode"] == "permission_denied"
    assert not (outside / "x.txt").exists()
    out = await call.fails("Write", {"file_path": str(root), "content": "x"})
    assert "directory" in out.text


async def test_a_path_ending_in_a_separator_is_refused_not_made_a_file(call: Caller, root: Path) -> None:
    out = await call.fails("Write", {"file_path": f"{root / 'pkg'}/", "content": "x"})
    assert "names a folder, not a file" in out.text, out.text
    out = await call.fails("Edit", {"file_path": f"{root / 'pkg'}/", "old_string": "", "new_string": "x"})
    assert "names a folder, not a file" in out.text, out.text
    assert not (root / "pkg").exists()
