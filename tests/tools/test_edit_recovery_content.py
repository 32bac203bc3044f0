"""Recovered edits write the right text (issue 37): new_string's own reading, the file's style, lookalikes."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_codetools.files import recovery, recovery_notes
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


def test_new_string_already_at_the_files_indentation_is_written_as_sent() -> None:
    """Only old_string lost its indentation: shifting new_string too would move it a level deeper."""
    old = "if item.sale:\n    return item.cost * 0.9"
    new = "        if item.sale:\n            return item.cost * 0.5"
    found = recovery.recover(PY, old, new)
    assert isinstance(found, recovery.Recovered)
    assert PY[: found.start] + found.new + PY[found.end :] == PY.replace("0.9", "0.5") and not found.reindented
    assert "written as sent" in recovery_notes.applied_note(found)


def test_new_string_at_old_strings_indentation_is_shifted() -> None:
    old = "if item.sale:\n    return item.cost * 0.9"
    new = "if item.sale:\n    return item.cost * 0.5"
    found = recovery.recover(PY, old, new)
    assert isinstance(found, recovery.Recovered) and found.reindented
    assert PY[: found.start] + found.new + PY[found.end :] == PY.replace("0.9", "0.5")


def test_a_new_string_fitting_both_readings_is_refused_with_both_shown() -> None:
    """Its unchanged lines say one thing and its first line another: nothing is written."""
    old = "if item.sale:\n    return item.cost * 0.9"
    new = "        if item.sale:\n    return item.cost * 0.9\n    log()"
    found = recovery.recover(PY, old, new)
    assert isinstance(found, recovery.Unsure), found
    detail = recovery_notes.miss_detail(PY, found)
    assert "Written as sent" in detail and "Re-indented like old_string" in detail and "Nothing was changed" in detail


def test_a_tab_indented_file_gets_tabs_even_when_most_matched_lines_sit_at_column_0() -> None:
    go = "package main\n\nfunc main() {\n\trun()\n}\n\nfunc other() {\n}\n"
    found = recovery.recover(go, "func main() {\n    run()\n}", "func main() {\n    run()\n    stop()\n}")
    assert isinstance(found, recovery.Recovered)
    assert found.new == "func main() {\n\trun()\n\tstop()\n}"


async def test_a_one_line_match_inside_a_longer_line_says_so(call: Caller, root: Path) -> None:
    f = root / "calc.py"
    f.write_text("def f():\n    total = price * 2  # doubled\n")
    await call.ok("Read", {"file_path": str(f)})
    text = await call.ok("Edit", {"file_path": str(f), "old_string": "price\u00a0* 2", "new_string": "price * 3"})
    assert "total = price * 3  # doubled" in f.read_text()
    assert "part of line 2, which holds more text" in text


def test_a_recovered_one_line_match_never_starts_inside_a_word() -> None:
    assert recovery.recover("def f():\n    max = 1\n", "x = 1  ", "x = 2") is None


def test_a_one_line_old_string_without_indentation_and_a_longer_new_string_is_re_indented() -> None:
    text = "def f():\n    x = compute()\n    return x\n"
    found = recovery.recover(text, "x = compute()  ", "x = compute()\nlog(x)")
    assert isinstance(found, recovery.Recovered)
    assert (
        text[: found.start] + found.new + text[found.end :] == "def f():\n    x = compute()\n    log(x)\n    return x\n"
    )


MD = "# Title\n\nIt works \u2014 mostly\u2026 see <b>here</b>.\n\nNext\u00a0step: run it.\n"


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("It works - mostly... see", "It works - always... see", "dashes and ellipses"),
        ("Next step: run it.", "Next step: run them.", "invisible or no-break spaces"),
        ("see &lt;b&gt;here&lt;/b&gt;.", "see &lt;b&gt;there&lt;/b&gt;.", "HTML entities"),
    ],
)
def test_lookalikes_damaged_in_both_strings_keep_the_files_characters(old: str, new: str, kind: str) -> None:
    found = recovery.recover(MD, old, new)
    assert isinstance(found, recovery.Recovered), found
    assert kind in found.kinds
    result = MD[: found.start] + found.new + MD[found.end :]
    changed = {"always": ("mostly", "always"), "them": ("it.", "them."), "there": (">here<", ">there<")}
    word = next(w for w in changed if w in new)
    assert result == MD.replace(*changed[word])


def test_a_lookalike_damaged_only_in_old_string_takes_new_string_as_sent() -> None:
    found = recovery.recover(MD, "It works - mostly\u2026", "It works \u2013 sometimes\u2026")
    assert isinstance(found, recovery.Recovered)
    assert MD[: found.start] + found.new + MD[found.end :] == MD.replace("\u2014 mostly", "\u2013 sometimes")


def test_zero_width_spaces_in_old_string_are_ignored() -> None:
    found = recovery.recover(PY, "return\u200b 'shop'", "return 'mall'")
    assert isinstance(found, recovery.Recovered) and found.new == "return 'mall'"


def test_unicode_escapes_match_their_characters_both_ways() -> None:
    text = 'GREETING = "caf\\u00e9"\nOTHER = "na\u00efve"\n'
    found = recovery.recover(text, 'GREETING = "caf\u00e9"', 'GREETING = "caf\u00e9!"')
    assert isinstance(found, recovery.Recovered) and "\\u escapes" in found.kinds
    assert text[: found.start] + found.new + text[found.end :] == text.replace('\\u00e9"', '\\u00e9!"')
    found = recovery.recover(text, 'OTHER = "na\\u00efve"', 'OTHER = "na\\u00efve2"')
    assert isinstance(found, recovery.Recovered)
    assert found.new == 'OTHER = "na\u00efve2"'


def test_a_missing_blank_line_is_recovered_and_kept() -> None:
    old = "        return item.cost\n    def name(self):"
    new = "        return item.price\n    def name(self):"
    found = recovery.recover(PY, old, new)
    assert isinstance(found, recovery.Recovered) and "blank lines" in found.kinds
    assert PY[: found.start] + found.new + PY[found.end :] == PY.replace("return item.cost\n", "return item.price\n")


def test_an_extra_blank_line_is_recovered_and_new_strings_own_blank_lines_win_when_changed() -> None:
    old = "            return item.cost * 0.9\n\n        return item.cost"
    new = "            return item.cost * 0.9\n        return item.cost + 1"
    found = recovery.recover(PY, old, new)
    assert isinstance(found, recovery.Recovered)
    assert PY[: found.start] + found.new + PY[found.end :] == PY.replace("item.cost\n\n", "item.cost + 1\n\n")


def test_lookalikes_never_make_two_places_one() -> None:
    twice = "a \u2014 b\nx = 1\na - b\n"
    found = recovery.recover(twice, "a \u2013 b", "c")
    assert isinstance(found, recovery.Ambiguous)


async def test_a_refusal_names_the_invisible_characters_it_found(call: Caller, root: Path) -> None:
    f = root / "notes.md"
    f.write_text("Next step: run it.\nThen stop.\n")
    await call.ok("Read", {"file_path": str(f)})
    out = await call.fails(
        "Edit", {"file_path": str(f), "old_string": "Next\u00a0step: walk it.", "new_string": "Next step: run."}
    )
    assert "U+00A0 NO-BREAK SPACE at line 1, column 5" in out.text


async def test_a_literal_match_inside_a_longer_word_says_so(call: Caller, root: Path) -> None:
    """A literal Edit replaces `x = 1` inside `max = 1` as Claude Code's does, and the result says where it was."""
    f = root / "limits.py"
    f.write_text("max = 1\n")
    await call.ok("Read", {"file_path": str(f)})
    text = await call.ok("Edit", {"file_path": str(f), "old_string": "x = 1", "new_string": "x = 2"})
    assert f.read_text() == "max = 2\n"
    assert "inside a longer word on line 1" in text
    g = root / "plain.py"
    g.write_text("value = 1\n")
    await call.ok("Read", {"file_path": str(g)})
    assert "longer word" not in await call.ok("Edit", {"file_path": str(g), "old_string": "1", "new_string": "2"})


def test_a_lost_blank_line_where_new_string_adds_lines_is_refused_with_both_placements() -> None:
    text = "a = 1\n\nb = 2\n"
    found = recovery.recover(text, "a = 1\nb = 2", "a = 1\nadded = 3\nb = 2")
    assert isinstance(found, recovery.Unsure)
    assert [t for _, t in found.readings] == ["a = 1\nadded = 3\n\nb = 2", "a = 1\n\nadded = 3\nb = 2"]


def test_an_extra_blank_line_copied_into_new_string_with_added_lines_is_dropped() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    found = recovery.recover(text, "a = 1\n\nb = 2", "a = 1\n\nadded = 3\nb = 2")
    assert isinstance(found, recovery.Recovered)
    assert text[: found.start] + found.new + text[found.end :] == "a = 1\nadded = 3\nb = 2\nc = 3\n"
