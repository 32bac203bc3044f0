"""Edit is a MultiEdit of one (issue 37): the same path, so the same answers in Claude Code's wording."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Caller

pytestmark = pytest.mark.anyio


async def test_edit_and_multiedit_refuse_a_non_unique_old_string_in_the_same_words(call: Caller, root: Path) -> None:
    f = root / "twice.py"
    f.write_text("x = 1\ny = 2\nx = 1\n")
    await call.ok("Read", {"file_path": str(f)})
    edit = await call.fails("Edit", {"file_path": str(f), "old_string": "x = 1", "new_string": "x = 3"})
    multi = await call.fails(
        "MultiEdit", {"file_path": str(f), "edits": [{"old_string": "x = 1", "new_string": "x = 3"}]}
    )
    assert edit.meta["errorCode"] == multi.meta["errorCode"] == "old_string_not_unique"
    assert multi.text.startswith("edits[0] (the 1st of 1) failed") and multi.text.endswith(edit.text)
    assert "To replace only one occurrence, please provide more context" in edit.text


async def test_edit_and_multiedit_say_no_change_in_the_same_words(call: Caller, root: Path) -> None:
    f = root / "same.py"
    f.write_text("x = 1\n")
    await call.ok("Read", {"file_path": str(f)})
    edit = await call.fails("Edit", {"file_path": str(f), "old_string": "x", "new_string": "x"})
    multi = await call.fails("MultiEdit", {"file_path": str(f), "edits": [{"old_string": "x", "new_string": "x"}]})
    assert multi.text.endswith(edit.text) and edit.text.startswith("No changes to make")


async def test_a_recovered_multiedit_step_writes_the_same_text_as_edit(call: Caller, root: Path) -> None:
    """Both take new_string as sent when only old_string lost its indentation."""
    text = "def f():\n    if x:\n        return 1\n"
    for tool in ("Edit", "MultiEdit"):
        f = root / f"{tool}.py"
        f.write_text(text)
        await call.ok("Read", {"file_path": str(f)})
        step = {"old_string": "if x:\n    return 1", "new_string": "    if x:\n        return 2"}
        args = {"file_path": str(f), **step} if tool == "Edit" else {"file_path": str(f), "edits": [step]}
        await call.ok(tool, args)
        assert f.read_text() == text.replace("return 1", "return 2"), tool
