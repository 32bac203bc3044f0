"""Edit-miss recovery (issue 21): an old_string damaged by copying lands where exactly one region matches."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_codetools.files import recovery
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

PY = (
    "class Shop:\n"
    "    def price(self, item):\n"
    "        if item.sale:\n"
    "            return item.cost * 0.9\n"
    "        return item.cost\n"
    "\n"
    "    def name(self):\n"
    "        return 'shop'\n"
)


async def edit(call: Caller, f: Path, old: str, new: str, **extra: object) -> str:
    await call.ok("Read", {"file_path": str(f)})
    return await call.ok("Edit", {"file_path": str(f), "old_string": old, "new_string": new, **extra})


def write(root: Path, text: str, name: str = "shop.py", newline: str = "\n") -> Path:
    f = root / name
    f.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return f


async def test_read_prefixes_in_old_and_new_are_taken_off(call: Caller, root: Path) -> None:
    f = write(root, PY)
    old = "3\t        if item.sale:\n4\t            return item.cost * 0.9"
    new = "3\t        if item.sale:\n4\t            return item.cost * 0.8"
    text = await edit(call, f, old, new)
    assert f.read_text() == PY.replace("0.9", "0.8")
    assert "ignoring line-number prefixes" in text and "lines 3-4" in text


async def test_claude_code_arrow_prefixes_are_taken_off(call: Caller, root: Path) -> None:
    f = write(root, PY)
    await edit(
        call,
        f,
        "     7\u2192    def name(self):\n     8\u2192        return 'shop'",
        "    def name(self):\n        return 'store'",
    )
    assert f.read_text() == PY.replace("'shop'", "'store'")


async def test_a_uniform_indentation_shift_is_undone_and_new_string_reindented(call: Caller, root: Path) -> None:
    f = write(root, PY)
    old = "if item.sale:\n    return item.cost * 0.9\nreturn item.cost"
    new = "if item.sale:\n    return item.cost * 0.9\nif item.free:\n    return 0\nreturn item.cost"
    text = await edit(call, f, old, new)
    assert f.read_text() == PY.replace(
        "        return item.cost\n", "        if item.free:\n            return 0\n        return item.cost\n"
    )
    assert "indentation" in text and "re-indented" in text


async def test_tabs_in_the_file_and_spaces_in_old_string(call: Caller, root: Path) -> None:
    go = "func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n"
    f = write(root, go, "main.go")
    await edit(call, f, "    if ok {\n        run()\n    }", "    if ok {\n        run()\n        stop()\n    }")
    assert f.read_text() == "func main() {\n\tif ok {\n\t\trun()\n\t\tstop()\n\t}\n}\n"


async def test_curly_quotes_in_the_file_are_kept_in_new_string(call: Caller, root: Path) -> None:
    md = "# Notes\n\nShe said \u201chello\u201d to them.\n"
    f = write(root, md, "notes.md")
    text = await edit(call, f, 'She said "hello" to them.', 'She said "goodbye" to them.')
    assert f.read_text() == "# Notes\n\nShe said \u201cgoodbye\u201d to them.\n"
    assert "quote style" in text


async def test_curly_quotes_in_old_string_match_straight_ones(call: Caller, root: Path) -> None:
    f = write(root, PY)
    await edit(call, f, "return \u2018shop\u2019", "return \u2018store\u2019")
    assert "return 'store'" in f.read_text()


async def test_trailing_whitespace_is_ignored(call: Caller, root: Path) -> None:
    f = write(root, PY.replace("return item.cost\n", "return item.cost   \n"))
    await edit(call, f, "        return item.cost\n\n", "        return item.price\n\n")
    assert "        return item.price\n\n    def name" in f.read_text()


async def test_crlf_old_string_on_an_lf_file_and_crlf_file_kept(call: Caller, root: Path) -> None:
    f = write(root, PY)
    await edit(call, f, "    def name(self):\r\n        return 'shop'", "    def name(self):\r\n        return 'x'")
    assert f.read_bytes() == PY.replace("'shop'", "'x'").encode()
    g = write(root, PY, "win.py", "\r\n")
    await edit(call, g, "  def name(self):\n      return 'shop'", "  def name(self):\n      return 'y'")
    assert g.read_bytes() == PY.replace("'shop'", "'y'").replace("\n", "\r\n").encode()


async def test_mixed_damage_prefixes_and_indentation(call: Caller, root: Path) -> None:
    f = write(root, PY)
    old = "7\t  def name(self):\n8\t      return 'shop'"
    text = await edit(call, f, old, "7\t  def name(self):\n8\t      return 'mall'")
    assert f.read_text() == PY.replace("'shop'", "'mall'")
    assert "line-number prefixes and indentation" in text


async def test_an_ambiguous_match_changes_nothing_and_names_the_regions(call: Caller, root: Path) -> None:
    twice = "def a():\n    x = 1\n    return x\n\ndef b():\n    x = 1\n    return x\n"
    f = write(root, twice, "twice.py")
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "x = 1   \nreturn x  ", "new_string": "y"})
    assert out.meta["errorCode"] == "old_string_not_found"
    assert "2 places: lines 2-3, lines 6-7" in out.text and "Nothing was changed" in out.text
    assert f.read_text() == twice


async def test_an_exact_indentation_match_wins_over_a_shifted_one(call: Caller, root: Path) -> None:
    nested = "def a():\n    x = 1\n\nclass B:\n    def c(self):\n        x = 1\n"
    f = write(root, nested, "nested.py")
    await edit(call, f, "2\t    x = 1", "2\t    x = 2")
    assert f.read_text() == nested.replace("    x = 1\n\nclass", "    x = 2\n\nclass")


async def test_prefixes_naming_the_shifted_match_make_the_exact_one_a_guess(call: Caller, root: Path) -> None:
    # Read's prefixes say line 6, whose indentation differs; line 2 matches exactly. Either may be meant.
    nested = "def a():\n    x = 1\n\nclass B:\n    def c(self):\n        x = 1\n"
    f = write(root, nested, "nested.py")
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("Edit", {"file_path": str(f), "old_string": "6\t    x = 1", "new_string": "6\t    x = 2"})
    assert out.meta["errorCode"] == "old_string_not_found", out.text
    assert "it matches 2 places: line 2, line 6" in out.text and "Nothing was changed" in out.text
    assert f.read_text() == nested


async def test_a_changed_word_is_never_forgiven(call: Caller, root: Path) -> None:
    f = write(root, PY)
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails(
        "Edit", {"file_path": str(f), "old_string": "    if item.sales:\n        return item.cost", "new_string": "z"}
    )
    assert out.meta["errorCode"] == "old_string_not_found"
    assert f.read_text() == PY


async def test_inconsistent_indentation_is_not_a_match(call: Caller, root: Path) -> None:
    """Python's meaning lives in indentation: lines that match only with different shifts are a miss."""
    f = write(root, PY)
    await call.ok("Read", {"file_path": str(f)})
    old = "    if item.sale:\n        return item.cost * 0.9\n        return item.cost"
    out = await call.fails("Edit", {"file_path": str(f), "old_string": old, "new_string": "pass"})
    assert out.meta["errorCode"] == "old_string_not_found"
    assert f.read_text() == PY


async def test_suggest_mode_names_the_region_and_writes_nothing(pipeline: Pipeline, root: Path) -> None:
    session = CodeSession(Settings(roots=(root,), edit_recovery="suggest"))
    try:
        call = Caller(pipeline, session)
        f = write(root, PY)
        await call.ok("Read", {"file_path": str(f)})
        out = await call.fails(
            "Edit", {"file_path": str(f), "old_string": "8\t        return 'shop'", "new_string": "x"}
        )
        assert "Ignoring line-number prefixes, it matches line 8:" in out.text
        assert "8\t        return 'shop'" in out.text
        assert f.read_text() == PY
    finally:
        await session.aclose()


async def test_off_mode_gives_the_plain_answer(pipeline: Pipeline, root: Path) -> None:
    session = CodeSession(Settings(roots=(root,), edit_recovery="off"))
    try:
        call = Caller(pipeline, session)
        f = write(root, PY)
        await call.ok("Read", {"file_path": str(f)})
        out = await call.fails(
            "Edit", {"file_path": str(f), "old_string": "8\t        return 'shop'", "new_string": "x"}
        )
        assert "line-number prefixes copied from Read output" in out.text
        assert f.read_text() == PY
    finally:
        await session.aclose()


async def test_utf8_offsets_map_to_bytes(call: Caller, root: Path) -> None:
    text = "# héllo wörld — ünïcode\nvalue = «1»\n    other = «2»\n"
    f = write(root, text, "u.py")
    await edit(call, f, "2\tvalue = «1»", "2\tvalue = «3»")
    assert f.read_text() == text.replace("«1»", "«3»")


async def test_multiedit_recovers_per_edit_and_stays_all_or_nothing(call: Caller, root: Path) -> None:
    f = write(root, PY)
    await call.ok("Read", {"file_path": str(f)})
    edits = [
        {"old_string": "4\t            return item.cost * 0.9", "new_string": "4\t            return item.cost * 0.5"},
        {"old_string": "return 'shop'", "new_string": "return 'mall'"},
    ]
    text = await call.ok("MultiEdit", {"file_path": str(f), "edits": edits})
    assert f.read_text() == PY.replace("0.9", "0.5").replace("'shop'", "'mall'")
    assert "edits[0]: Note:" in text
    bad = [
        {"old_string": "8\t        return 'mall'", "new_string": "8\t        return 'x'"},
        {"old_string": "nope", "new_string": "y"},
    ]
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails("MultiEdit", {"file_path": str(f), "edits": bad})
    assert "edits[1]" in out.text
    assert f.read_text() == PY.replace("0.9", "0.5").replace("'shop'", "'mall'")


def test_recover_returns_none_for_absent_text_and_a_blank_old_string() -> None:
    assert recovery.recover(PY, "nothing here", "x") is None
    assert recovery.recover(PY, "   \n  ", "x") is None


def test_a_match_starting_mid_line_keeps_the_first_line_of_new_string_as_sent() -> None:
    found = recovery.recover(PY, "item.sale:\n        return item.cost * 0.9", "item.sale:\n        return 1")
    assert isinstance(found, recovery.Recovered)
    assert PY[found.start : found.end] == "item.sale:\n            return item.cost * 0.9"
    assert found.new == "item.sale:\n            return 1"  # shifted by the same 4 columns as the file


async def test_trailing_blanks_on_an_old_string_ending_mid_line_are_named(call: Caller, root: Path) -> None:
    twice = write(root, "x = 1\nx = 1\n", "twice.py")
    await call.ok("Read", {"file_path": str(twice)})
    out = await call.fails("Edit", {"file_path": str(twice), "old_string": "x = 1 ", "new_string": "x = 2"})
    assert out.meta["errorCode"] == "old_string_not_found", out.text
    assert "Ignoring trailing whitespace, it matches 2 places: line 1, line 2" in out.text
    once = write(root, "x = 1\ny = 2\n", "once.py")
    text = await edit(call, once, "x = 1  ", "x = 3")
    assert once.read_text() == "x = 3\ny = 2\n"
    assert "ignoring trailing whitespace" in text


def test_every_recovery_names_what_it_ignored() -> None:
    for old in ("return item.cost  ", "  return item.cost * 0.9 ", "return 'shop'\t"):
        found = recovery.recover(PY, old, "x")
        assert found is not None and found.kinds, old
