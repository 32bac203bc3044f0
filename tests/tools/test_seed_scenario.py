"""The seed's example, exactly: Read -> Edit turns `export const value = 1` into `2`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Caller

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(root: Path) -> Path:
    path = root / "src" / "app.ts"
    path.parent.mkdir()
    path.write_text("export const value = 1", encoding="utf-8")
    return path


async def test_edit_before_read_is_refused(call: Caller, app: Path) -> None:
    out = await call.fails(
        "Edit", {"file_path": str(app), "old_string": "export const value = 1", "new_string": "export const value = 2"}
    )
    assert out.text == "File has not been read yet. Read it first before writing to it."
    assert out.meta["errorCode"] == "file_not_read"
    assert app.read_text(encoding="utf-8") == "export const value = 1"


async def test_read_then_edit_changes_the_value(call: Caller, app: Path) -> None:
    assert await call.ok("Read", {"file_path": str(app)}) == "1\texport const value = 1"
    text = await call.ok(
        "Edit", {"file_path": str(app), "old_string": "export const value = 1", "new_string": "export const value = 2"}
    )
    assert text.startswith(f"The file {app} has been updated successfully.")
    assert app.read_text(encoding="utf-8") == "export const value = 2"


async def test_old_string_with_read_prefix_is_applied_with_a_note(call: Caller, app: Path) -> None:
    await call.ok("Read", {"file_path": str(app)})
    text = await call.ok(
        "Edit",
        {"file_path": str(app), "old_string": "1\texport const value = 1", "new_string": "export const value = 2"},
    )
    assert "ignoring line-number prefixes" in text
    assert app.read_text(encoding="utf-8") == "export const value = 2"
