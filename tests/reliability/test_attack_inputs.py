"""
The attack and robustness inputs of peers.md 4.7, each against every tool that takes a path.

Every hostile path goes to each tool with a path field (Read, Edit, Write, Grep, Glob, and any tool
added later): nothing outside the root may change, no outside content may appear in a result, and
reads of outside targets must be refused. The inputs the fuzz found to break a tool are kept here as
plain cases: each was pinned by a strict xfail test (cause and fix in its reason) until it was fixed.
Pin a new one the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools, jobs
from mcp_codetools.tools.base import ToolOutput
from tests.reliability import procfs
from tests.reliability.harness import Arena, no_live_children, tool_named
from tests.reliability.report import Figures, suite_of
from tests.reliability.workspace import SECRET_MARKERS, Layout, build

pytestmark = pytest.mark.anyio

PATH_TOOLS = [tool.name for tool in default_tools() if tool.path_fields]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-wide, so the shared arena's session lives on one event loop


@pytest.fixture(scope="module")
async def shared_arena(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, figures: Figures
) -> AsyncIterator[Arena]:
    """One arena for the ~290 tests that only send a path to be refused: the hostile workspace is built and the
    session opened once, not per test (~25 ms each: 7 of the module's 16 CPU-s). Each still checks the world
    against the snapshot taken at the start, so an escape fails the test that made it."""
    tmp = tmp_path_factory.mktemp("attack")
    (tmp / "ws").mkdir()
    (tmp / "outside").mkdir()
    (tmp / "outside" / "secret.txt").write_text("top secret\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        layout = build(tmp, (tmp / "ws").resolve(), (tmp / "outside").resolve())
        patch.setenv("HOME", str(layout.home))  # as the `layout` fixture does: `~` leads outside too
        opened = Arena.open(layout, figures, suite_of(str(request.path)))
        try:
            yield opened
        finally:
            await opened.aclose()
    await no_live_children()


def args_with_path(tool_name: str, path: str) -> dict[str, Any]:
    """Arguments that would do real work on `path`: the path field set, every other required field filled."""
    tool = tool_named(tool_name)
    schema = tool.input_schema()
    fill: dict[str, Any] = {
        "old_string": "",
        "new_string": "PWNED",
        "content": "PWNED\n",
        "pattern": "secret|PRIVATE|root:x|sibling|bashrc|outside" if tool_name != "Glob" else "**/*",
    }
    args: dict[str, Any] = {tool.path_fields[0]: path}
    for field in schema.get("required", []):
        args.setdefault(field, fill.get(field, "x"))
    if tool_name == "Grep":
        args["output_mode"] = "content"
    return args


OUTSIDE_PATHS = {
    # 1. siblings whose names start like the root's (CVE-2025-53110)
    "sibling ws2": "{TMP}/ws2/f.txt",
    "sibling ws-old": "{TMP}/ws-old/f.txt",
    "sibling ws_sibling": "{TMP}/ws_sibling/f.txt",
    "sibling dir itself": "{TMP}/ws2",
    # 2. lexical traversal
    "root/../x": "{ROOT}/../outside/secret.txt",
    "root/a/../../x": "{ROOT}/sub/../../outside/secret.txt",
    "relative ../../etc/passwd": "../../../../../../etc/passwd",
    "./../x": "./../outside/secret.txt",
    "root//../x": "{ROOT}//../outside/secret.txt",
    # 3. leaf symlinks out (CVE-2025-53109)
    "link to /etc/passwd": "link_etc",
    "link to an outside file": "link_out",
    "link to HOME/.bashrc": "link_home",
    # 4. folder symlink out
    "through a folder link out": "link_dir_out/secret.txt",
    "folder link out itself": "link_dir_out",
    # 6. chains
    "chain of links out": "chain",
    # 8. trailing quote and space siblings (GHSA-7rgq-gccq-qphx)
    'sibling ws"': '{TMP}/ws"/f.txt',
    "sibling ws'": "{TMP}/ws'/f.txt",
    "sibling 'ws '": "{TMP}/ws /f.txt",
    # 9. case
    "case sibling WS": "{TMP}/WS/f.txt",
    # 10. home, other users, URLs
    "~/.ssh/id_rsa": "~/.ssh/id_rsa",
    "~root/x": "~root/.bashrc",
    "absolute /etc/passwd": "/etc/passwd",
    "/proc/self/root": "/proc/self/root{OUT}/secret.txt",
    "/proc/self/cwd": "/proc/self/cwd/../outside/secret.txt",
    # 15. special files through links
    "link to /proc/self/environ": "link_proc",
    "link to /dev/zero": "link_zero",
    "link to a sibling": "link_sibling",
}

CREATE_OUTSIDE = {
    # 4. creating a file through a folder link out
    "new file through a folder link out": "link_dir_out/new.txt",
    # 5. dangling leaf links (DC#420)
    "dangling link to an outside file": "dangling_out",
    "dangling link to an outside folder": "dangling_dir_out",
    "outside folder by absolute path": "{OUT}/new.txt",
    "new file in a sibling": "{TMP}/ws2/new.txt",
    "new file under HOME": "~/new.txt",
}


def assert_no_leak(output: ToolOutput, shown: str) -> None:
    leaked = [marker for marker in SECRET_MARKERS if marker in output.text]
    assert not leaked, f"{shown} leaked {leaked}: {output.text[:300]}"


@pytest.mark.parametrize("tool_name", PATH_TOOLS)
@pytest.mark.parametrize("case", sorted(OUTSIDE_PATHS))
async def test_paths_that_lead_outside_are_refused(shared_arena: Arena, tool_name: str, case: str) -> None:
    arena = shared_arena
    path = OUTSIDE_PATHS[case]
    if tool_name in ("Edit", "Write"):
        await arena.call("Read", {"file_path": path})  # a refused read must not open the way for the write
    output = await arena.call(tool_name, args_with_path(tool_name, path))
    assert_no_leak(output, f"{tool_name} {case}")
    if tool_name in ("Read", "Edit", "Write"):
        assert output.is_error, f"{tool_name} {case} was not refused: {output.text[:200]}"
    await arena.check_world(f"after {tool_name} {case}")


@pytest.mark.parametrize("tool_name", [t for t in PATH_TOOLS if t in ("Edit", "Write")])
@pytest.mark.parametrize("case", sorted(CREATE_OUTSIDE))
async def test_writes_cannot_create_files_outside(shared_arena: Arena, tool_name: str, case: str) -> None:
    arena = shared_arena
    output = await arena.call(tool_name, args_with_path(tool_name, CREATE_OUTSIDE[case]))
    assert output.is_error, f"{tool_name} {case} was not refused: {output.text[:200]}"
    await arena.check_world(f"after {tool_name} {case}")


@pytest.mark.parametrize("tool_name", [t for t in PATH_TOOLS if t in ("Grep", "Glob")])
async def test_searches_over_the_root_do_not_descend_into_links_out(arena: Arena, tool_name: str) -> None:
    output = await arena.call(tool_name, args_with_path(tool_name, "{ROOT}"))
    assert not output.is_error, output.text
    assert_no_leak(output, f"{tool_name} over the root")
    assert "link_dir_out/secret.txt" not in output.text


@pytest.mark.parametrize("case", ["%2e%2e/outside/secret.txt", "file://{OUT}/secret.txt", "..%2foutside"])
async def test_encoded_paths_are_literal_names(arena: Arena, case: str) -> None:
    read = await arena.call("Read", {"file_path": case})
    assert read.is_error and read.meta["errorCode"] in ("file_not_found", "permission_denied"), read.text
    assert_no_leak(read, case)


@pytest.mark.parametrize("case", ["", "   ", "{ROOT}/a\x00b", "text.txt\x00.png"])
@pytest.mark.parametrize("tool_name", PATH_TOOLS)
async def test_empty_and_nul_paths_are_invalid_input(shared_arena: Arena, tool_name: str, case: str) -> None:
    arena = shared_arena
    output = await arena.call(tool_name, args_with_path(tool_name, case))
    assert output.is_error and output.meta["errorCode"] == "invalid_input", output.text


async def test_loops_error_and_inside_links_are_allowed(arena: Arena) -> None:
    with anyio.fail_after(10):
        loop = await arena.call("Read", {"file_path": "loop_a"})
    assert loop.is_error
    for allowed, lines in (("link_in", 5), ("link_dir_in/inner.py", 6)):
        read = await arena.call("Read", {"file_path": allowed, "limit": lines})
        assert not read.is_error and "return 1" in read.text, read.text


async def test_a_root_given_through_a_symlink_allows_both_spellings(layout: Layout, figures: Figures) -> None:
    alias = layout.tmp / "root-alias"
    alias.symlink_to(layout.root)
    session = CodeSession(Settings(roots=(alias,)))
    try:
        pipeline = Pipeline(default_tools())
        for limit, spelling in enumerate((alias / "text.txt", layout.root / "text.txt"), start=1):
            out = await pipeline.run(session, "Read", {"file_path": str(spelling), "limit": limit})
            assert not out.is_error and "hello world" in out.text, out.text
    finally:
        await session.aclose()


@pytest.mark.parametrize("name", ["fifo", "sock", "link_zero", "sub"])
@pytest.mark.parametrize("tool_name", ["Read", "Edit", "Write"])
async def test_special_files_are_refused_without_blocking(arena: Arena, name: str, tool_name: str) -> None:
    with anyio.fail_after(10):
        output = await arena.call(tool_name, args_with_path(tool_name, name))
    assert output.is_error, output.text


async def test_a_hard_link_to_an_outside_file_is_refused_and_said(arena: Arena) -> None:
    """Policy (issue 12): Edit and Write refuse a file with several links; Read says it has them."""
    shared = arena.layout.outside / "shared.txt"
    shared.write_text("shared words\n", encoding="utf-8")
    os.link(shared, arena.layout.root / "hard")
    arena.before = Arena.outside(arena.layout)
    read = await arena.call("Read", {"file_path": "hard"})
    assert "2 hard links" in read.text, read.text
    edit = await arena.call("Edit", {"file_path": "hard", "old_string": "shared", "new_string": "changed"})
    assert edit.is_error and "hard links" in edit.text, edit.text
    write = await arena.call("Write", {"file_path": "hard", "content": "changed\n"})
    assert write.is_error and "hard links" in write.text, write.text
    empty = await arena.call("Edit", {"file_path": "hard", "old_string": "", "new_string": "x"})
    assert empty.is_error
    assert shared.read_text(encoding="utf-8") == "shared words\n"
    await arena.check_world("after Edit and Write on a hard link to an outside file")


async def test_a_hard_link_is_written_in_place_and_said_when_allowed(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With hard_links = "write-through" the write reaches the shared inode, and the result says so."""
    monkeypatch.setattr(
        arena.session, "settings", dataclasses.replace(arena.session.settings, hard_links="write-through")
    )
    shared = arena.layout.outside / "shared.txt"
    shared.write_text("shared words\n", encoding="utf-8")
    os.link(shared, arena.layout.root / "hard")
    await arena.call("Read", {"file_path": "hard"})
    edit = await arena.call("Edit", {"file_path": "hard", "old_string": "shared", "new_string": "changed"})
    assert not edit.is_error and "hard links" in edit.text, edit.text
    assert shared.read_text(encoding="utf-8") == "changed words\n"


async def test_huge_and_sparse_files_stay_bounded(arena: Arena, figures: Figures, suite: str) -> None:
    root = arena.layout.root
    with open(root / "sparse", "wb") as handle:
        handle.truncate(20 * 2**30)
    (root / "one-line.txt").write_text("y" * 5_000_000, encoding="utf-8")
    (root / "lines.txt").write_text("".join(f"row {i}\n" for i in range(200_000)), encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    budget = arena.session.settings.max_result_chars
    with anyio.fail_after(30):
        for args in (
            {"file_path": "sparse", "limit": 5},
            {"file_path": "one-line.txt"},
            {"file_path": "lines.txt"},
            {"file_path": "lines.txt", "offset": 150_000, "limit": 3},
        ):
            out = await arena.call("Read", args)
            assert len(out.text) <= budget, f"Read {args} returned {len(out.text)} characters"
        edit = await arena.call("Edit", {"file_path": "sparse", "old_string": "a", "new_string": "b"})
        assert edit.is_error
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    figures.measure("Read/Edit of a 20 GiB sparse file and a 5 MB line: peak RSS growth", round(grown_mib, 1), "MiB")
    assert grown_mib < 256


async def test_grep_option_injection_runs_nothing(arena: Arena) -> None:
    cases = [
        {"pattern": "--pre=./pre.sh"},
        {"pattern": "--pre=pre.sh", "path": "text.txt"},
        {"pattern": "-f/etc/passwd"},
        {"pattern": "--files"},
        {"pattern": "x", "glob": "--pre=./pre.sh"},
        {"pattern": "x", "path": "-x"},
        {"pattern": "x", "type": "--pre=sh"},
    ]
    for args in cases:
        output = await arena.call("Grep", args)
        assert_no_leak(output, f"Grep {args}")
    assert not (arena.layout.outside / "PWNED-by-pre").exists()
    await arena.check_world("after Grep option injection")


async def test_byte_exact_round_trips_of_every_encoding(arena: Arena) -> None:
    """An edit and its reverse leave every file byte-identical (CRLF, mixed endings, BOM, latin-1, UTF-16)."""
    pairs = {
        "crlf.txt": "beta",
        "mixed.txt": "two",
        "bom.txt": "with bom",
        "latin1.txt": "cr\u00e8me",
        "utf16.txt": "sixteen",
        "dollar.txt": "$1",
    }
    for name, text in pairs.items():
        path = arena.layout.root / name
        original = path.read_bytes()
        await arena.call("Read", {"file_path": name})
        there = await arena.call("Edit", {"file_path": name, "old_string": text, "new_string": "\u00a7\u00a7"})
        assert not there.is_error, f"{name}: {there.text}"
        back = await arena.call("Edit", {"file_path": name, "old_string": "\u00a7\u00a7", "new_string": text})
        assert not back.is_error, f"{name}: {back.text}"
        assert path.read_bytes() == original, name


async def test_parallel_edits_to_one_file_lose_no_update(arena: Arena) -> None:
    path = arena.layout.root / "many.txt"
    await arena.call("Read", {"file_path": "many.txt"})
    lines = [f"line {i}\n" for i in range(10, 30)]

    async def edit(line: str) -> None:
        out = await arena.call("Edit", {"file_path": "many.txt", "old_string": line, "new_string": line.upper()})
        # Each edit changes the file the next one checks; the dispatcher orders them and each re-reads.
        if out.is_error:
            await arena.call("Read", {"file_path": "many.txt"})
            retry = await arena.call("Edit", {"file_path": "many.txt", "old_string": line, "new_string": line.upper()})
            assert not retry.is_error, retry.text

    async with anyio.create_task_group() as tg:
        for line in lines:
            tg.start_soon(edit, line)
    text = path.read_text(encoding="utf-8")
    assert all(line.upper() in text for line in lines)
    assert text.count("\n") == 3000


@pytest.mark.parametrize(
    ("tool_name", "args"),
    [
        ("Grep", {"pattern": "a\x00b"}),
        ("Grep", {"pattern": "x", "glob": "*.txt\x00"}),
        ("Grep", {"pattern": "x", "type": "p\x00y"}),
        ("Glob", {"pattern": "*\x00.txt"}),
    ],
)
async def test_nul_in_search_patterns_is_invalid_input(arena: Arena, tool_name: str, args: dict[str, Any]) -> None:
    output = await arena.call(tool_name, args)
    assert output.is_error and output.meta["errorCode"] == "invalid_input", output.text


# Inputs the fuzz found to break a tool (internal errors, oversized results, a blocked event loop).
# All were fixed while this suite was written (commits 96cffb5, 8710342); these keep them fixed.


@pytest.mark.parametrize("tool_name", ["Read", "Edit", "Write"])
async def test_lone_surrogates_in_a_path_are_invalid_input(arena: Arena, tool_name: str) -> None:
    output = await arena.call(tool_name, args_with_path(tool_name, "new\ud800.txt"))
    assert output.meta["errorCode"] == "invalid_input", output.text


@pytest.mark.parametrize(
    ("name", "content"), [("brand-new.txt", "x\ud800"), ("latin1.txt", "\U0001f600"), ("utf16.txt", "\udcff")]
)
async def test_write_of_text_the_encoding_cannot_hold_is_refused_plainly(arena: Arena, name: str, content: str) -> None:
    await arena.call("Read", {"file_path": name})
    before = (arena.layout.root / name).read_bytes() if (arena.layout.root / name).exists() else None
    output = await arena.call("Write", {"file_path": name, "content": content})
    after = (arena.layout.root / name).read_bytes() if (arena.layout.root / name).exists() else None
    assert before == after
    assert output.is_error and output.meta["errorCode"] != "internal_error", output.text


async def test_overlong_folder_name_is_refused_plainly(arena: Arena) -> None:
    output = await arena.call("Write", {"file_path": "{ROOT}/" + "a" * 300 + "/f.txt", "content": "x"})
    assert output.is_error and output.meta["errorCode"] != "internal_error", output.text
    assert "too long" in output.text.lower()


async def test_write_to_a_symlink_loop_is_refused_plainly(arena: Arena) -> None:
    output = await arena.call("Write", {"file_path": "loop_a", "content": "x"})
    assert output.is_error and output.meta["errorCode"] != "internal_error", output.text


@pytest.mark.parametrize("path", ["x" * 1_000_000, "/" + "y" * 1_000_000])
async def test_errors_about_huge_paths_stay_within_the_budget(arena: Arena, path: str) -> None:
    output = await arena.call("Read", {"file_path": path})
    assert output.is_error and len(output.text) <= arena.session.settings.max_result_chars


async def test_a_path_of_many_components_is_refused_before_it_is_resolved(arena: Arena) -> None:
    # Resolving 300,000 components took O(N^2) on the event loop: the length check must come first.
    output = await arena.call("Read", {"file_path": "x/" * 300_000})
    assert output.meta["errorCode"] == "invalid_input", output.text
    assert "a path can be at most 4096 bytes" in output.text


async def test_a_non_unique_old_string_in_a_big_file_numbers_only_the_matches_it_lists(arena: Arena) -> None:
    # Numbering all 23,999 matches cost O(matches x size) (13 s for 64k lines): only the 20 listed are numbered.
    (arena.layout.root / "repeats.txt").write_text("0123456789abcdef\n" * 24_000, encoding="utf-8")
    await arena.call("Read", {"file_path": "repeats.txt", "limit": 1})
    out = await arena.call("Edit", {"file_path": "repeats.txt", "old_string": "abcdef\n0123", "new_string": "x"})
    assert out.is_error and out.meta["errorCode"] == "old_string_not_unique", out.text
    listed = ", ".join(str(n) for n in range(1, 21))
    assert out.text.startswith(
        f"Found 23999 matches of the string to replace, but replace_all is false (at lines {listed} …)"
    )


# Pinned by strict xfail tests until fixed (commits 9960200, 0f3ef6a).


async def test_a_backtracking_output_filter_ends_by_its_budget_and_does_not_block_other_calls(
    arena: Arena, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "FILTER_BUDGET_S", 0.2)
    start = await arena.call("Bash", {"command": "printf 'a%.0s' $(seq 40); echo '!'", "run_in_background": True})
    log = Path(start.meta["logPath"])
    with anyio.fail_after(10):
        while log.stat().st_size < 42:  # noqa: ASYNC110 - bounded wait for the job's output on disk
            await anyio.sleep(0.01)
    other = CodeSession(Settings(roots=(arena.layout.root,)))  # another client's session on the same event loop
    answered: list[ToolOutput] = []
    search = jobs.BudgetedFilter.search

    def search_after_a_call_of_the_other_session(self: jobs.BudgetedFilter, line: str) -> object:
        # Runs where the filter runs. From a worker thread, the event loop answers the Read while the filter
        # waits; on the event loop itself, anyio refuses the call (and the BashOutput call fails).
        if not answered:
            args = {"file_path": str(arena.layout.root / "text.txt"), "limit": 1}
            answered.append(anyio.from_thread.run(arena.pipeline.run, other, "Read", args))
        return search(self, line)

    monkeypatch.setattr(jobs.BudgetedFilter, "search", search_after_a_call_of_the_other_session)
    try:
        with anyio.fail_after(30):
            out = await arena.call("BashOutput", {"bash_id": start.meta["backgroundTaskId"], "filter": "(a|aa)+$"})
    finally:
        await other.aclose()
    assert out.meta["errorCode"] == "invalid_input", out.text
    assert out.text.startswith("The filter took over 0.2 s on this output")
    assert answered and not answered[0].is_error, answered


async def test_grep_of_a_huge_sparse_file_is_declined_without_reading_it(arena: Arena) -> None:
    with open(arena.layout.root / "sparse4g", "wb") as handle:
        handle.truncate(4 * 2**30)
    with anyio.fail_after(30):
        output = await arena.call("Grep", {"pattern": "needle", "path": "sparse4g"})
    assert output.meta["binary"] is True and output.meta["numFiles"] == 0, output.meta
    assert output.text.startswith("Not searched:") and "is a binary file over 64 MiB" in output.text


# Bash (peers 4.7 items 29-31, 35): every command ends within its bound and leaves no process behind.

DAEMON_SLEEP = "1000.4242"  # a duration only this test uses, so its leftover can be found and stopped
BASH_CASES = {
    "sleep past the timeout": ("sleep 1000", 300),
    "background sleep returns": ("sleep 1000 &", None),
    "grandchild keeps the pipe": ("echo A && sleep 300 & echo B", None),
    "nested group": ("bash -c 'sleep 1000 & sleep 1000'", 300),
    "setsid escapes the group": ("setsid sleep 1000", 300),
    "double fork": (f"( setsid sh -c 'sleep {DAEMON_SLEEP} &' & ) ; sleep 0.2", None),
    "yes flood": ("yes", 300),  # a flood spins its cores until its timeout, twice a test: 300 ms is tens of MB
    "random bytes flood": ("cat /dev/urandom | base64", 300),
    "read from stdin": ("read x; echo got:$x", None),
    "python REPL": ("python3 -i", 5_000),
    "ANSI and invalid UTF-8": ("printf '\\033[1mbold\\033[0m\\r\\nx\\377\\376y\\n'", None),
    "exit by signal": ("kill -9 $$", None),
}
ENDS_BY_ITS_TIMEOUT = {
    "sleep past the timeout",
    "nested group",
    "setsid escapes the group",
    "yes flood",
    "random bytes flood",
}
LEAVES_A_PROCESS_STOPPED = {"background sleep returns", "grandchild keeps the pipe"}


@pytest.mark.parametrize("case", sorted(BASH_CASES))
async def test_bash_commands_end_within_their_bound_and_leave_nothing(arena: Arena, case: str) -> None:
    command, timeout_ms = BASH_CASES[case]
    args: dict[str, Any] = {"command": command}
    if timeout_ms is not None:
        args["timeout"] = timeout_ms
    with anyio.fail_after(30):  # shorter than any of the sleeps: a call that waited for one fails here
        output = await arena.call("Bash", args)
    assert len(output.text) <= arena.session.settings.max_result_chars, f"{len(output.text)} characters"
    assert output.meta["interrupted"] is (case in ENDS_BY_ITS_TIMEOUT), output.text[:300]
    if case in LEAVES_A_PROCESS_STOPPED:
        assert "Processes the command left running in the background were stopped" in output.text
    assert "\x1b" not in output.text or case == "ANSI and invalid UTF-8"
    again = await arena.call("Bash", args)
    assert output.is_error == again.is_error, "the same command ended differently twice"
    if case == "double fork":
        # A double-forked daemon leaves the group and is orphaned before bash exits: reaping's documented
        # limit. Stop it here, so the fixture's no-leftover check stays about what the server must handle.
        for info in procfs.process_table().values():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{info.pid}/cmdline").read_bytes() == f"sleep\0{DAEMON_SLEEP}\0".encode():
                    arena.figures.measure("double-forked daemon outlived its Bash call (documented limit)", "yes")
                    os.kill(info.pid, 9)


@pytest.mark.parametrize("pattern", ["a" * 300 + "/*.txt", "a" * 256 + "/b/*", "x/" * 3000 + "*"])
async def test_glob_of_an_overlong_folder_name_is_answered_plainly(arena: Arena, pattern: str) -> None:
    arena.log.records.clear()
    output = await arena.pipeline.run(arena.session, "Glob", {"pattern": pattern})
    assert output.meta.get("errorCode") != "internal_error", output.text
