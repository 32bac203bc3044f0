"""rg's parallel content output regrouped by file: the same lines as `rg --sort=path`, however it is chunked."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from mcp_codetools.search.locate import find_rg
from mcp_codetools.search.path_order import CONTEXT_SEPARATOR, MATCH_SEPARATOR, FileBlocks, path_key

NAMES = ["a", "a.txt", "a-b", "B", "b", "_x", "é.py", "with space", "z1", "z10", "z2", ".hidden"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Folders and files whose names sort differently by whole path and by part, many matches in some."""
    rng = random.Random(7)
    root = tmp_path / "tree"
    for top in NAMES:
        for inner in ["", "a", "a.b", "sub/deeper"]:
            folder = root / top / inner if inner else root
            name = f"{top}.md" if not inner else top
            lines = [f"line {i} " + ("needle" if rng.random() < 0.2 else "hay") for i in range(rng.randint(0, 60))]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def rg(*args: str, cwd: Path) -> bytes:
    binary = find_rg()
    assert binary is not None
    return subprocess.run([binary, "--no-config", "--hidden", *args], cwd=cwd, capture_output=True, check=False).stdout


def regrouped(data: bytes, context: bool, cuts: list[int], spool_bytes: int = 1 << 20) -> FileBlocks:
    blocks = FileBlocks(1 << 30, context=context, spool_bytes=spool_bytes)
    last = 0
    for cut in [*cuts, len(data)]:
        assert blocks(data[last:cut])
        last = cut
    blocks.finish()
    return blocks


CASES = [
    ("-n",),
    ("--no-line-number",),
    ("-n", "--context=1"),
    ("-n", "--before-context=2"),
    ("--no-line-number", "--after-context=3"),
]


@pytest.mark.parametrize("flags", CASES, ids=" ".join)
def test_regrouped_parallel_output_equals_rg_sorted_by_path(tree: Path, flags: tuple[str, ...]) -> None:
    expected = rg("--no-heading", "--sort=path", *flags, "-e", "needle", cwd=tree).splitlines()
    assert len(expected) > 100
    parallel = rg("--no-heading", "--threads=4", MATCH_SEPARATOR, CONTEXT_SEPARATOR, *flags, "-e", "needle", cwd=tree)
    context = any("context" in flag for flag in flags)
    rng = random.Random(len(parallel))
    for cuts in ([], sorted(rng.sample(range(len(parallel)), 40)), list(range(1, len(parallel), 7))):
        blocks = regrouped(parallel, context, cuts)
        lines, cut = blocks.page(0, None, 1 << 30)
        assert (lines, cut, blocks.total) == (expected, False, len(expected))
        blocks.close()


def test_pages_are_slices_of_the_whole_and_spooling_to_disk_changes_nothing(tree: Path) -> None:
    flags = ("-n", "--context=1")
    expected = rg("--no-heading", "--sort=path", *flags, "-e", "needle", cwd=tree).splitlines()
    parallel = rg("--no-heading", MATCH_SEPARATOR, CONTEXT_SEPARATOR, *flags, "-e", "needle", cwd=tree)
    blocks = regrouped(parallel, True, [], spool_bytes=64)
    for offset in (0, 1, 5, 57, len(expected) - 3, len(expected), len(expected) + 10):
        for limit in (1, 3, 50, None):
            end = None if limit is None else offset + limit
            assert blocks.page(offset, limit, 1 << 30) == (expected[offset:end], False)
    blocks.close()


def test_the_budget_cuts_a_page_at_a_whole_line() -> None:
    data = b"".join(b"f%d\x00:1\x00:" % i + b"x" * 10 + b"\n" for i in range(10))
    blocks = regrouped(data, False, [])
    lines, cut = blocks.page(2, None, 3 * 16 + 5)
    assert lines == [b"f2:1:" + b"x" * 10, b"f3:1:" + b"x" * 10, b"f4:1:" + b"x" * 10]
    assert cut
    blocks.close()


def test_separators_at_file_boundaries_are_replaced_and_inner_ones_kept() -> None:
    data = b"b\x00:1\x00:x\n--\nb\x00:9\x00:x\n--\na\x00:3\x00:y\n"
    blocks = regrouped(data, True, [])
    assert blocks.page(0, None, 1000) == ([b"a:3:y", b"--", b"b:1:x", b"--", b"b:9:x"], False)
    assert blocks.total == 5
    blocks.close()


def test_rg_notes_about_a_file_stay_with_it() -> None:
    note = b'b.bin: WARNING: stopped searching binary file after match (found "\\0" byte around offset 9)'
    data = b"b.bin\x00:1\x00:needle\n" + note + b"\na\x00:1\x00:needle\n"
    blocks = regrouped(data, False, [5])
    assert blocks.page(0, None, 1000)[0] == [b"a:1:needle", b"b.bin:1:needle", note]
    blocks.close()


def test_reading_stops_after_the_count_limit() -> None:
    blocks = FileBlocks(100, context=False)
    assert blocks(b"a\x00:1\x00:x\n" * 5)
    assert not blocks(b"b\x00:1\x00:x\n" * 20)
    assert not blocks.complete
    blocks.finish()
    assert blocks.total == 25
    blocks.close()


def test_path_key_sorts_part_by_part() -> None:
    paths = [b"a.txt", b"a/b.txt", b"a-b/c", b"a/a/z"]
    assert sorted(paths, key=path_key) == [b"a/a/z", b"a/b.txt", b"a-b/c", b"a.txt"]


def test_path_key_orders_as_comparing_the_parts_would() -> None:
    """Names with bytes below `/` (space, `!`, `-`, `.`) and above it, nested to several depths."""
    rng = random.Random(3)
    alphabet = [b"a", b"b", b" ", b"!", b"-", b".", b"\x01", b"\xc3\xa9", b"0"]
    paths = [
        b"/".join(b"".join(rng.choices(alphabet, k=rng.randint(1, 3))) for _ in range(rng.randint(1, 4)))
        for _ in range(2000)
    ]
    assert sorted(paths, key=path_key) == sorted(paths, key=lambda path: path.split(b"/"))


def _blocks_on_a_full_disk(monkeypatch: pytest.MonkeyPatch) -> FileBlocks:
    """Blocks that took file a whole and the start of b, then whose spool can grow no more."""
    blocks = FileBlocks(1 << 30, context=False, spool_bytes=64)
    assert blocks(b"a\x00:1\x00:x\n" * 3 + b"b\x00:1\x00:y\n")

    def full(data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(blocks._spool, "write", full)
    return blocks


def test_a_spool_that_cannot_grow_keeps_the_whole_files_seen_and_says_incomplete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blocks = _blocks_on_a_full_disk(monkeypatch)
    assert not blocks(b"b\x00:2\x00:y\nc\x00:1\x00:z\n")
    blocks.finish()
    assert not blocks.complete
    assert blocks.page(0, None, 1000) == ([b"a:1:x"] * 3, False)
    assert blocks.total == 3
    blocks.close()


def test_a_spool_that_cannot_grow_keeps_the_file_that_ended_before_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = _blocks_on_a_full_disk(monkeypatch)
    assert not blocks(b"c\x00:1\x00:z\n")
    blocks.finish()
    assert not blocks.complete
    assert blocks.page(0, None, 1000) == ([b"a:1:x"] * 3 + [b"b:1:y"], False)
    blocks.close()
