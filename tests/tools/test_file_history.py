"""FileHistory: versions listed and restored, restores undoable, outside changes protected, bounds kept on disk."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_codetools.files.history import FileHistory
from tests.conftest import Caller

pytestmark = pytest.mark.anyio


def versions_in(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"version (\d+) ·", text)]


async def edit(call: Caller, path: Path, old: str, new: str) -> None:
    await call.ok("Edit", {"file_path": str(path), "old_string": old, "new_string": new})


async def test_undo_chain_edit_edit_restore_and_restore_the_restore(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("v = 0\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    await edit(call, f, "v = 0", "v = 1")
    await edit(call, f, "v = 1", "v = 2")
    listing = await call.ok("FileHistory", {"action": "list", "file_path": str(f)})
    first, second = versions_in(listing)
    assert "replaced by Edit" in listing and "6 bytes" in listing
    await call.ok("FileHistory", {"action": "restore", "file_path": str(f), "version": first})
    assert f.read_text(encoding="utf-8") == "v = 0\n"
    listing = await call.ok("FileHistory", {"action": "list", "file_path": str(f)})
    undo_restore = versions_in(listing)[-1]
    assert "replaced by FileHistory restore" in listing
    await call.ok("FileHistory", {"action": "restore", "file_path": str(f), "version": undo_restore})
    assert f.read_text(encoding="utf-8") == "v = 2\n"
    await call.ok("FileHistory", {"action": "restore", "file_path": str(f), "version": second})
    assert f.read_text(encoding="utf-8") == "v = 1\n"
    await edit(call, f, "v = 1", "v = 3")  # the ledger knows the restored content: Edit needs no new Read


async def test_restore_refuses_a_file_changed_outside_unless_forced(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("mine\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    await edit(call, f, "mine", "ours")
    (number,) = versions_in(await call.ok("FileHistory", {"action": "list", "file_path": str(f)}))
    f.write_text("someone else's\n", encoding="utf-8")
    out = await call.fails("FileHistory", {"action": "restore", "file_path": str(f), "version": number})
    assert out.meta["errorCode"] == "file_changed_since_read"
    assert f.read_text(encoding="utf-8") == "someone else's\n"
    await call.ok("FileHistory", {"action": "restore", "file_path": str(f), "version": number, "force": True})
    assert f.read_text(encoding="utf-8") == "mine\n"
    # The overwritten outside change is itself kept, so even a forced restore can be undone.
    assert b"someone else's\n" in call.session.history.versions(f)


async def test_restoring_the_version_before_a_create_removes_the_file(call: Caller, root: Path) -> None:
    f = root / "new.txt"
    await call.ok("Write", {"file_path": str(f), "content": "hello\n"})
    listing = await call.ok("FileHistory", {"action": "list", "file_path": str(f)})
    assert "did not exist" in listing
    await call.ok("FileHistory", {"action": "restore", "file_path": str(f), "version": versions_in(listing)[0]})
    assert not f.exists()
    listing = await call.ok("FileHistory", {"action": "list", "file_path": str(f)})
    await call.ok("FileHistory", {"action": "restore", "file_path": str(f), "version": versions_in(listing)[-1]})
    assert f.read_text(encoding="utf-8") == "hello\n"


async def test_list_without_a_path_names_the_changed_files(call: Caller, root: Path) -> None:
    assert "No file" in await call.ok("FileHistory", {"action": "list"})
    await call.ok("Write", {"file_path": str(root / "x.txt"), "content": "x\n"})
    assert str(root / "x.txt") in await call.ok("FileHistory", {"action": "list"})


async def test_restore_of_an_unknown_version_is_an_input_error(call: Caller, root: Path) -> None:
    out = await call.fails("FileHistory", {"action": "restore", "file_path": str(root / "a"), "version": 99})
    assert out.meta["errorCode"] == "invalid_input"


def test_history_spills_to_disk_and_keeps_its_bounds(tmp_path: Path) -> None:
    spill = tmp_path / "history"
    history = FileHistory(lambda: spill, max_bytes=3 * (1000 + FileHistory.ENTRY_OVERHEAD), max_entries=10)
    path = tmp_path / "f"
    for i in range(5):
        history.remember(path, bytes([65 + i]) * 1000, made_by="Edit")
    kept = history.entries(path)
    assert [e.number for e in kept] == [3, 4, 5] and history.dropped == 2
    assert history.versions(path)[-1] == b"E" * 1000, "a version still being written is read from memory"
    history.flush()
    assert sorted(p.name for p in spill.iterdir()) == ["00000003.bin", "00000004.bin", "00000005.bin"]
    assert history.versions(path)[0] == b"C" * 1000
    history.close()
    history.remember(path, b"x" * 10_000)  # larger than the whole bound: listed, not kept
    assert history.entries(path)[-1].kept is False
    count = FileHistory(lambda: tmp_path / "other", max_entries=2)
    for _ in range(4):
        count.remember(path, b"y")
    assert len(count.entries()) == 2


async def test_restore_onto_a_read_only_file_is_refused_as_edit_refuses_it(call: Caller, root: Path) -> None:
    """Restore went its own way to the disk and overwrote a 0444 file that Edit and Write refuse."""
    f = root / "ro.py"
    f.write_text("v = 0\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    await edit(call, f, "v = 0", "v = 1")
    (number,) = versions_in(await call.ok("FileHistory", {"action": "list", "file_path": str(f)}))
    f.chmod(0o444)
    try:
        refused = await call.fails("FileHistory", {"action": "restore", "file_path": str(f), "version": number})
        by_edit = await call.fails("Edit", {"file_path": str(f), "old_string": "v = 1", "new_string": "v = 0"})
        assert refused.meta["errorCode"] == by_edit.meta["errorCode"] == "file_read_only", refused.text
        assert f.read_text(encoding="utf-8") == "v = 1\n"
        assert len(call.session.history.entries(f)) == 1, "a refused restore records no version"
    finally:
        f.chmod(0o644)


async def test_restoring_a_missing_version_onto_a_read_only_file_does_not_remove_it(call: Caller, root: Path) -> None:
    f = root / "new.txt"
    await call.ok("Write", {"file_path": str(f), "content": "hello\n"})
    (number,) = versions_in(await call.ok("FileHistory", {"action": "list", "file_path": str(f)}))
    f.chmod(0o444)
    try:
        out = await call.fails("FileHistory", {"action": "restore", "file_path": str(f), "version": number})
        assert out.meta["errorCode"] == "file_read_only", out.text
        assert f.read_text(encoding="utf-8") == "hello\n"
    finally:
        f.chmod(0o644)
