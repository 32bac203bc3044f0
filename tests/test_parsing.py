"""The parse of a line of plain words, built without bashlex, is the tree bashlex builds for it.

`commands.parsing` builds the tree of `echo hi`-like lines itself (bashlex's parser costs ~0.3 ms even for
two words); generated lines compare the two trees, and lines outside the plain form still go to bashlex.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_codetools.commands import classify, parsing
from mcp_codetools.commands.bashlex_load import load
from mcp_codetools.commands.parsing import parse

bashlex = load()

_CHARS = "aZ09_./,:@%+=-"
_SPECIAL = (
    "if then fi for in do done case esac while time function coproc select until elif else echo git - -- = a=b 1 2> "
    "! { } ~ [[ ]]"
).split()
_WORDS = st.one_of(st.text(_CHARS, min_size=1, max_size=6), st.sampled_from(_SPECIAL))
_LINES = st.lists(_WORDS, min_size=1, max_size=5).map(" ".join)


def _bashlex_dump(line: str) -> list[str] | None:
    try:
        return [tree.dump() for tree in bashlex.parse(line)]
    except Exception:
        return None


def _plain(line: str) -> bool:
    return bool(parsing._PLAIN_WORDS.fullmatch(line)) and line.split(" ")[0] not in parsing._RESERVED


@settings(max_examples=100, deadline=None)  # 2,000 lines a run: 400 examples cost 8.7 CPU-s (issue 38)
@given(st.lists(_LINES, min_size=20, max_size=20))
def test_a_plain_line_has_the_tree_bashlex_builds(lines: list[str]) -> None:
    for line in lines:
        found = parse(line)
        if _plain(line):
            assert found.error is None and found.source == line and not found.timed
            assert [tree.dump() for tree in found.trees] == _bashlex_dump(line), line


@pytest.mark.parametrize(
    "line",
    ["echo hi", "git status --short", "git log --format=%H -n 3 a.txt", "ls -la /tmp/x", "x 1 2 3", "npm run t:e-st"],
)
def test_common_plain_lines_skip_bashlex(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _bashlex_dump(line)
    monkeypatch.setattr(bashlex, "parse", lambda _: pytest.fail("bashlex parsed a plain line"))
    assert [tree.dump() for tree in parse(line).trees] == expected


@pytest.mark.parametrize(
    "line",
    ["a=b echo", "if true", "time ls", "echo  hi", " echo", "echo hi ", "echo 'hi'", "echo ~", "echo a*", "ls>x",
     "echo $x", "in x", "echo\thi", "echo hi\n"],
)  # fmt: skip
def test_other_lines_go_to_bashlex(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = bashlex.parse

    def counting(source: str) -> object:
        asked.append(source)
        return real(source)

    monkeypatch.setattr(bashlex, "parse", counting)
    parse(line)
    assert len(asked) == 1


@settings(max_examples=300, deadline=None)
@given(st.text("ab-_./=\\'\"$`()<>*?[]{},~ \n", max_size=12))
def test_a_word_without_special_characters_is_read_as_the_full_scan_reads_it(source: str) -> None:
    assert classify.scan_word(source) == classify._scan(source)
