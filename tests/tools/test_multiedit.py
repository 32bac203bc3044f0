"""MultiEdit: edits in order, all or nothing, the failing edit named, files kept as they were stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Caller

pytestmark = pytest.mark.anyio


def edit(old: str, new: str, **extra: Any) -> dict[str, Any]:
    return {"old_string": old, "new_string": new, **extra}


async def test_edits_apply_in_order_each_to_the_previous_result(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("alpha = 1\nbeta = 2\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    text = await call.ok(
        "MultiEdit",
        {"file_path": str(f), "edits": [edit("alpha", "gamma"), edit("gamma = 1", "gamma = 10"), edit("2", "20")]},
    )
    assert f.read_text(encoding="utf-8") == "gamma = 10\nbeta = 20\n"
    assert "3 edits applied" in text and "1\tgamma = 10" in text


async def test_the_third_of_three_edits_failing_leaves_the_file_unchanged(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("one\ntwo\nthree\n", encoding="utf-8")
    before = f.read_bytes()
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails(
        "MultiEdit",
        {"file_path": str(f), "edits": [edit("one", "1"), edit("two", "2"), edit("four", "4")]},
    )
    assert f.read_bytes() == before
    assert out.meta["errorCode"] == "old_string_not_found"
    assert out.text.startswith("edits[2] (the 3rd of 3) failed")
    assert call.session.history.versions(f) == []


async def test_an_ambiguous_edit_is_named_with_its_code(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("x x\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("MultiEdit", {"file_path": str(f), "edits": [edit("x", "y")]})
    assert out.meta["errorCode"] == "old_string_not_unique" and "edits[0]" in out.text
    await call.ok("MultiEdit", {"file_path": str(f), "edits": [edit("x", "y", replace_all=True)]})
    assert f.read_text(encoding="utf-8") == "y y\n"


async def test_a_no_op_edit_is_refused(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("x\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("MultiEdit", {"file_path": str(f), "edits": [edit("x", "z"), edit("z", "z")]})
    assert out.meta["errorCode"] == "no_change" and "edits[1]" in out.text


async def test_read_first_and_unchanged_since_rules_hold(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("x\n", encoding="utf-8")
    out = await call.fails("MultiEdit", {"file_path": str(f), "edits": [edit("x", "y")]})
    assert out.meta["errorCode"] == "file_not_read"
    await call.ok("Read", {"file_path": str(f)})
    f.write_text("x changed\n", encoding="utf-8")
    out = await call.fails("MultiEdit", {"file_path": str(f), "edits": [edit("x", "y")]})
    assert out.meta["errorCode"] == "file_changed_since_read"


async def test_utf16_and_latin1_round_trip(call: Caller, root: Path) -> None:
    u16 = root / "u16.txt"
    u16.write_bytes("a = «1»\r\nb = «2»\r\n".encode("utf-16"))
    await call.ok("Read", {"file_path": str(u16)})
    before = u16.read_bytes()
    out = await call.fails("MultiEdit", {"file_path": str(u16), "edits": [edit("«1»", "«10»"), edit("nope", "x")]})
    assert "edits[1]" in out.text and u16.read_bytes() == before
    await call.ok("MultiEdit", {"file_path": str(u16), "edits": [edit("«1»", "«10»"), edit("«10»", "«11»")]})
    await call.ok("MultiEdit", {"file_path": str(u16), "edits": [edit("«11»", "«12»"), edit("b = «2»", "b = «3»")]})
    assert u16.read_bytes() == "a = «12»\r\nb = «3»\r\n".encode("utf-16")
    latin = root / "latin.txt"
    latin.write_bytes(b"caf\xe9 = 1\nna\xefve = 2\n")
    await call.ok("Read", {"file_path": str(latin)})
    await call.ok(
        "MultiEdit", {"file_path": str(latin), "edits": [edit("café = 1", "café = 10"), edit("naïve", "naïf")]}
    )
    assert latin.read_bytes() == b"caf\xe9 = 10\nna\xeff = 2\n"


async def test_one_history_entry_for_the_whole_call(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("a\nb\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(f)})
    await call.ok("MultiEdit", {"file_path": str(f), "edits": [edit("a", "A"), edit("b", "B")]})
    assert call.session.history.versions(f) == [b"a\nb\n"]


async def test_an_empty_edit_list_is_a_schema_error(call: Caller, root: Path) -> None:
    f = root / "a.py"
    f.write_text("a\n", encoding="utf-8")
    out = await call.fails("MultiEdit", {"file_path": str(f), "edits": []})
    assert out.meta["errorCode"] == "invalid_input"


async def test_replace_all_with_many_matches_then_a_dependent_edit(call: Caller, root: Path) -> None:
    f = root / "many.txt"
    f.write_bytes(b"x;" * 50 + b"\r\nend\r\n")
    await call.ok("Read", {"file_path": str(f)})
    await call.ok(
        "MultiEdit",
        {"file_path": str(f), "edits": [edit("x", "yy", replace_all=True), edit("yy;\nend", "yy;\nEND")]},
    )
    assert f.read_bytes() == b"yy;" * 50 + b"\r\nEND\r\n"


async def test_creating_a_file_is_pointed_to_write(call: Caller, root: Path) -> None:
    out = await call.fails(
        "MultiEdit", {"file_path": str(root / "new.txt"), "edits": [{"old_string": "", "new_string": "x"}]}
    )
    assert out.meta["errorCode"] == "file_not_found" and "use Write" in out.text
    assert not (root / "new.txt").exists()
