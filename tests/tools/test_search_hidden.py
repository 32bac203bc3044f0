"""A Read deny hides files from Grep and Glob listings: left out of every mode, of totals and pages, silently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.loading import load_gate
from mcp_codetools.search.sinks import Unhidden
from mcp_codetools.session import CodeSession
from mcp_codetools.tools import default_tools
from mcp_codetools.tools import glob as glob_module
from mcp_codetools.tools import grep as grep_module
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

DENY = '["Read(.env)", "Read(./secrets/**)"]'
VISIBLE = [f"src/m{i:02}.py" for i in range(12)] + ["a.py", "src/deep/z.py"]
HIDDEN = [".env", "src/.env", "secrets/key.txt", "secrets/deep/k2.txt"]
HIDDEN_WORDS = (".env", "secrets", "SECRET")


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-user-config"
    empty.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(empty))


@pytest.fixture
def tree(root: Path) -> Path:
    """Visible files and denied ones side by side; every file holds `needle` between two context lines."""
    for rel in VISIBLE + HIDDEN:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        word = "SECRET" if rel in HIDDEN else "plain"
        path.write_text(f"{word} before\nneedle {word}\n{word} after\n", encoding="utf-8")
    return root


def gated(root: Path, deny: str = DENY) -> Pipeline:
    (root / "mcp-codetools.toml").write_text(f"[permissions]\ndeny = {deny}\n", encoding="utf-8")
    return Pipeline(default_tools(), gate=load_gate((root,), environ={}))


@pytest.fixture
def hiding(tree: Path, session: CodeSession) -> Caller:
    return Caller(gated(tree), session)


def assert_nothing_hidden_shows(text: str) -> None:
    for word in HIDDEN_WORDS:
        assert word not in text, text


def listed(text: str) -> list[str]:
    """Result lines that name a file (notices and summaries left out)."""
    body = text.split("\n\n")[0].splitlines()
    return [line for line in body if not line.startswith(("Found ", "(", "["))]


async def test_files_mode_leaves_denied_files_out_and_counts_only_the_rest(hiding: Caller) -> None:
    text = await hiding.ok("Grep", {"pattern": "needle", "head_limit": 0})
    assert_nothing_hidden_shows(text)
    assert text.startswith(f"Found {len(VISIBLE)} files")
    assert sorted(listed(text)) == sorted(VISIBLE)


async def test_count_mode_totals_exclude_denied_files(hiding: Caller) -> None:
    output = await hiding("Grep", {"pattern": "needle", "output_mode": "count", "head_limit": 0})
    assert_nothing_hidden_shows(output.text)
    assert f"Found {len(VISIBLE)} total occurrences across {len(VISIBLE)} files." in output.text
    assert output.meta["numFiles"] == len(VISIBLE) and output.meta["numMatches"] == len(VISIBLE)


async def test_content_mode_with_context_drops_whole_files(hiding: Caller) -> None:
    output = await hiding("Grep", {"pattern": "needle", "output_mode": "content", "-C": 1, "head_limit": 0})
    assert_nothing_hidden_shows(output.text)
    lines = output.text.splitlines()
    assert sum("needle plain" in line for line in lines) == len(VISIBLE)
    # Three lines per file and a `--` between files: nothing left over from a dropped file.
    assert output.meta["total"] == 3 * len(VISIBLE) + len(VISIBLE) - 1 == len(lines)
    assert lines.count("--") == len(VISIBLE) - 1


@pytest.mark.parametrize("mode", ["files_with_matches", "count", "content"])
async def test_pages_hold_full_pages_of_visible_entries_and_line_up(hiding: Caller, mode: str) -> None:
    whole = await hiding("Grep", {"pattern": "needle", "output_mode": mode, "-C": 1, "head_limit": 0})
    total = whole.meta["total"] if mode == "content" else len(VISIBLE)
    size = 5
    pages: list[str] = []
    for offset in range(0, total, size):
        args = {"pattern": "needle", "output_mode": mode, "-C": 1, "head_limit": size, "offset": offset}
        output = await hiding("Grep", args)
        assert_nothing_hidden_shows(output.text)
        assert output.meta["total"] == total
        entries = output.text.split("\n\n")[0].splitlines()
        if mode == "files_with_matches":
            entries = entries[1:]  # the "Found N files" header
        assert len(entries) == min(size, total - offset), output.text
        pages += entries
    expected = whole.text.split("\n\n")[0].splitlines()
    if mode == "files_with_matches":
        expected = expected[1:]
    if mode == "files_with_matches":  # newest first: equal mtimes may tie, so compare as sets
        assert sorted(pages) == sorted(expected)
    else:
        assert pages == expected


async def test_a_searched_subfolder_hides_its_denied_files(hiding: Caller) -> None:
    text = await hiding.ok("Grep", {"pattern": "needle", "path": "src", "head_limit": 0})
    assert_nothing_hidden_shows(text)
    assert sorted(listed(text)) == sorted(rel for rel in VISIBLE if rel.startswith("src/"))


async def test_searching_inside_a_folder_whose_files_are_denied_finds_nothing(hiding: Caller) -> None:
    # `secrets/**` covers the files below, not the folder itself: the search runs and shows none of them.
    for mode in ("files_with_matches", "count", "content"):
        output = await hiding("Grep", {"pattern": "needle", "path": "secrets/", "output_mode": mode})
        assert not output.is_error and output.text in ("No files found", "No matches found"), output.text


async def test_glob_leaves_denied_files_out_of_names_and_total(hiding: Caller) -> None:
    output = await hiding("Glob", {"pattern": "**/*"})
    assert_nothing_hidden_shows(output.text)
    assert sorted(listed(output.text)) == sorted([*VISIBLE, "mcp-codetools.toml"])
    assert output.meta["totalMatches"] == len(VISIBLE) + 1
    for pattern in ("**/.env", ".env", "secrets/**", "secrets/deep/*.txt", "**/secrets/**/*", "./secrets/*"):
        nothing = await hiding("Glob", {"pattern": pattern})
        assert nothing.text == "No files found" and nothing.meta["totalMatches"] == 0, (pattern, nothing.text)


async def test_glob_total_beyond_its_first_hundred_counts_only_visible_files(tree: Path, session: CodeSession) -> None:
    for i in range(120):
        (tree / "many").mkdir(exist_ok=True)
        (tree / "many" / f"f{i:03}.txt").write_text("x")
        (tree / "many" / f"s{i:03}" / ".env").parent.mkdir()
        (tree / "many" / f"s{i:03}" / ".env").write_text("x")
    output = await Caller(gated(tree), session)("Glob", {"pattern": "many/**"})
    assert_nothing_hidden_shows(output.text)
    assert output.meta["numFiles"] == 100 and output.meta["totalMatches"] == 120
    assert "Showing 100 of 120 matching files" in output.text


async def test_a_grep_only_rule_hides_from_grep_but_not_from_glob(tree: Path, session: CodeSession) -> None:
    call = Caller(gated(tree, '["Grep(a.py)"]'), session)
    grep = await call.ok("Grep", {"pattern": "needle", "head_limit": 0})
    assert "a.py" not in listed(grep) and f"Found {len(VISIBLE) + len(HIDDEN) - 1} files" in grep
    glob = await call.ok("Glob", {"pattern": "*.py"})
    assert "a.py" in listed(glob)


async def test_without_a_gate_everything_shows(call: Caller, tree: Path) -> None:
    grep = await call.ok("Grep", {"pattern": "needle", "head_limit": 0})
    assert sorted(listed(grep)) == sorted(VISIBLE + HIDDEN)
    glob = await call.ok("Glob", {"pattern": "**/.env"})
    assert sorted(glob.splitlines()) == [".env", "src/.env"]


async def test_rules_without_paths_hide_nothing(tree: Path, session: CodeSession) -> None:
    call = Caller(gated(tree, '["Bash(rm *)", "WebFetch"]'), session)
    grep = await call.ok("Grep", {"pattern": "needle", "head_limit": 0})
    assert sorted(listed(grep)) == sorted(VISIBLE + HIDDEN)


async def test_rg_is_told_to_skip_what_the_rules_hide(hiding: Caller, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    real_on, real_run = grep_module.run_rg_on, glob_module.run_rg

    async def grep_spy(args: Any, *rest: Any, **kw: Any) -> Any:
        seen.append(list(args))
        return await real_on(args, *rest, **kw)

    async def glob_spy(args: Any, *rest: Any, **kw: Any) -> Any:
        seen.append(list(args))
        return await real_run(args, *rest, **kw)

    monkeypatch.setattr(grep_module, "run_rg_on", grep_spy)
    monkeypatch.setattr(glob_module, "run_rg", glob_spy)
    await hiding.ok("Grep", {"pattern": "needle", "glob": "src/**"})
    await hiding.ok("Glob", {"pattern": "**/*"})
    await hiding.ok("Grep", {"pattern": "needle", "path": "src"})
    at_root = {"--glob=!**/.env", "--glob=!/secrets/**"}
    assert at_root <= set(seen[0]) and at_root <= set(seen[1])
    assert "--glob=!**/.env" in seen[2] and "--glob=!/secrets/**" not in seen[2]
    # After the model's own globs, so an include glob cannot pull a hidden file back in.
    assert seen[0].index("--glob=!**/.env") > seen[0].index("--glob=src/**")


@pytest.mark.parametrize("literals", [None, (b".env", b"secrets")])
@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 10_000])
def test_unhidden_passes_exactly_the_visible_records_whatever_the_chunks(
    literals: tuple[bytes, ...] | None, chunk: int
) -> None:
    names = [b"a.py", b".env", b"src/.env", b"src/b.py", b"secrets/k", b"x.envy", b"my-secrets.txt", b"c.py"]
    records = [name + b"\0" + str(i).encode() + b"\n" for i, name in enumerate(names * 3)]
    data = b"".join(records)
    got: list[bytes] = []

    def sink(block: bytes) -> bool:
        got.append(block)
        return True

    def hidden(name: bytes) -> bool:
        return name.endswith(b".env") or name.startswith(b"secrets/")

    unhidden = Unhidden(sink, hidden, b"\n", literals=literals, name_end=b"\0")
    for at in range(0, len(data), chunk):
        unhidden(data[at : at + chunk])
    unhidden.flush()
    assert b"".join(got) == b"".join(r for r in records if not hidden(r.rpartition(b"\0")[0]))
