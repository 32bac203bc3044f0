"""The names a diff's headers give, as patch and git apply would take them (generously: more names only ask more)."""

from __future__ import annotations

import pytest

from mcp_codetools.commands.diffnames import MAX_DIFF_CHARS, diff_names, stripped


def test_unified_headers_give_both_names_without_the_timestamp() -> None:
    names = diff_names("--- a/x.py\t2026-01-01 10:00\n+++ b/y.py\t2026-01-02\n@@ -1 +1 @@\n-a\n+b\n")
    assert names is not None and {"a/x.py", "b/y.py"} <= set(names[0])


def test_a_name_with_a_space_counts_whole_and_cut() -> None:
    names = diff_names("--- a/my file.txt\t2026-01-01\n+++ b/my file.txt\n")
    assert names is not None and {"a/my file.txt", "a/my"} <= set(names[0])


def test_git_lines_give_every_split_and_the_renames_from_the_top() -> None:
    names = diff_names("diff --git a/x y b/x y\nsimilarity index 90%\nrename from x y\nrename to z\n")
    assert names is not None
    prefixed, top = names
    assert {"a/x y", "b/x y", "a/x", "y b/x y"} <= set(prefixed) and top == ["x y", "z"]


def test_git_quoted_names_are_decoded() -> None:
    names = diff_names('diff --git "a/t\\303\\251st\\tx" "b/q\\"r"\n')
    assert names is not None and names[0] == ["a/tést\tx", 'b/q"r']


@pytest.mark.parametrize(
    "text",
    [
        "1c1\n< a\n---\n> b\n",  # a normal diff
        "5d\n3a\nx\n.\n",  # an ed script
        "@@ -1 +1 @@\n-a\n+b\n",  # hunks with no header
        'diff --git "a/x b/x\n',  # a quote not closed
        "diff --git a/l b/l\nnew file mode 120000\n",  # a link it makes
        "",
    ],
)
def test_a_diff_whose_files_are_not_all_named_gives_none(text: str) -> None:
    assert diff_names(text) is None


def test_a_huge_diff_is_not_read() -> None:
    assert diff_names("--- a/x\n+++ b/x\n" + "+" * MAX_DIFF_CHARS) is None


@pytest.mark.parametrize(
    ("name", "strip", "expected"),
    [
        ("a/src/x.py", 0, ["a/src/x.py"]),
        ("a/src/x.py", 1, ["src/x.py"]),
        ("a/src/x.py", 5, ["x.py"]),
        ("a/src/x.py", None, ["a/src/x.py", "src/x.py", "x.py"]),
        ("/abs/x", 1, ["abs/x"]),
        ("/abs/x", None, ["/abs/x", "abs/x", "x"]),
    ],
)
def test_stripping_leading_folders(name: str, strip: int | None, expected: list[str]) -> None:
    assert stripped(name, strip) == expected
