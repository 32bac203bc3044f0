"""Grep: search file contents with ripgrep, in Claude Code's three output modes, paged and capped.

rg runs once per call in the working directory, so it prints paths relative to it on match and
context lines alike, and always searches in parallel. Files and count modes collect the (short)
per-file records and sort them. Content mode over a folder regroups rg's output by file and pages
it in path order (path_order.py); over one file it keeps one page and merely counts the rest.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio.to_thread
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError
from typing_extensions import override

from mcp_codetools.errors import InvalidInputError
from mcp_codetools.search.grep_args import MAX_COLUMNS, OutputMode, build_args, context_lines, split_globs
from mcp_codetools.search.hidden_names import HiddenNames, hidden_names
from mcp_codetools.search.paging import Page
from mcp_codetools.search.path_order import FileBlocks, path_key
from mcp_codetools.search.process import RgResult, run_rg_on
from mcp_codetools.search.rg_args import is_option_like, unpassable
from mcp_codetools.search.rg_errors import GREP_WORDING, problem_note, rg_failure
from mcp_codetools.search.sinks import LineCollector, LinePager, NewestFirstCollector, Unhidden
from mcp_codetools.search.targets import PinnedTarget, check_search_path, dropped_note, names_below, pin_search_target
from mcp_codetools.tools.base import CallContext, SearchTool, ToolInput, ToolOutput

MAX_COUNT_BYTES = 64 * 1024 * 1024
"""Content mode stops counting (and kills rg) after this much output; the total is then "at least"."""
MAX_LIST_BYTES = 16 * 1024 * 1024
"""Files and count modes stop reading after this much output (some 200,000 paths)."""
LONG_LINE_MARKER = b"[... omitted end of long line]"


def _refuse_option(value: str, hint: str) -> PydanticCustomError:
    return PydanticCustomError(
        "option_like",
        "'{value}' starts with '-', so rg would read it as an option. {hint}",
        {"value": value, "hint": hint},
    )


class GrepInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    pattern: str = Field(min_length=1, description="Regular expression (Rust regex syntax) to search for.")
    path: str | None = Field(default=None, description="File or folder to search (default: the working directory).")
    glob: str | None = Field(
        default=None, description='Only files matching this glob, e.g. "*.js", "*.{ts,tsx}" (paths from the cwd).'
    )
    type: str | None = Field(default=None, description="Only files of this rg type, e.g. py, js, rust.")
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description="files_with_matches (default): paths; content: matching lines; count: matches per file.",
    )
    case_insensitive: bool = Field(default=False, alias="-i", description="Ignore case.")
    line_numbers: bool = Field(default=True, alias="-n", description="Show line numbers (content mode).")
    after: int | None = Field(default=None, ge=0, alias="-A", description="Lines after each match (content mode).")
    before: int | None = Field(default=None, ge=0, alias="-B", description="Lines before each match (content mode).")
    around: int | None = Field(
        default=None, ge=0, alias="-C", description="Lines before and after each match (content mode)."
    )
    context: int | None = Field(default=None, ge=0, description="Same as -C.")
    multiline: bool = Field(default=False, description="Let patterns span lines; `.` matches newlines.")
    head_limit: int | None = Field(
        default=None, ge=0, description="Entries to return (default {grep_head_limit}; 0 = no limit)."
    )
    offset: int = Field(default=0, ge=0, description="Entries to skip first, to page.")

    @field_validator("pattern", "path", "glob", "type")
    @classmethod
    def _passable(cls, value: str | None) -> str | None:
        problem = None if value is None else unpassable(value)
        if problem is not None:
            raise PydanticCustomError("unpassable", "it {problem}", {"problem": problem})
        return value

    @field_validator("path")
    @classmethod
    def _path_is_not_an_option(cls, value: str | None) -> str | None:
        if value is not None and is_option_like(value):
            raise _refuse_option(value, f"For a file of that name, write ./{value}")
        return value

    @field_validator("glob")
    @classmethod
    def _globs_are_not_options(cls, value: str | None) -> str | None:
        for glob in split_globs(value):
            if is_option_like(glob):
                raise _refuse_option(glob, f"To match names starting with '-', write **/{glob}")
        return value

    @field_validator("type")
    @classmethod
    def _type_is_not_an_option(cls, value: str | None) -> str | None:
        if value is not None and is_option_like(value):
            raise _refuse_option(value, "Give a type name such as py or js")
        return value


class GrepTool(SearchTool[GrepInput, os.stat_result]):
    """Grep: file contents matching a regex, in Claude Code's three output modes, paged."""

    name = "Grep"
    title = "Search file contents"
    description = (
        "Search file contents with ripgrep (Rust regex; escape literal braces: `interface\\{\\}`). "
        "output_mode: files_with_matches (default; paths, newest first), content (`path:line:text`; "
        '-A/-B/-C context, -n), or count (matches per file). Filter with glob (e.g. "*.{ts,tsx}") or type '
        "(e.g. py). Respects .gitignore, searches hidden files, skips .git. Paths are relative to the working "
        "directory. head_limit (default {grep_head_limit}, 0 = all) and offset page the results; a result "
        "stays under {grep_max_result_chars:,} characters and lines over " + str(MAX_COLUMNS) + " are cut. "
        "multiline: true matches across lines."
    )
    input_model = GrepInput

    @override
    async def validate_input(self, args: GrepInput, ctx: CallContext) -> os.stat_result:
        """Check the search path and the pattern; the path's stat goes to call, which needs its kind and size."""
        target_st = check_search_path(ctx.paths["path"], ctx.session.cwd)
        if "\n" in args.pattern and not args.multiline:
            raise InvalidInputError("The pattern contains a line break; set multiline: true to match across lines.")
        return target_st

    @override
    async def call(self, args: GrepInput, ctx: CallContext, target_st: os.stat_result) -> ToolOutput:
        # rg gets the checked path as an open descriptor, never as a string a swapped symlink could redirect.
        pinned = pin_search_target(ctx.paths["path"], ctx.session.cwd, ctx.session.workspace)
        try:
            return await _search(args, ctx, pinned)
        finally:
            pinned.close()


async def _search(args: GrepInput, ctx: CallContext, pinned: PinnedTarget) -> ToolOutput:
    cwd = ctx.session.cwd
    target = ctx.paths["path"]
    if _large_named_binary_file(pinned):
        # rg skips binary files it meets while walking, but reads a named one to the end (a sparse
        # 20 GiB file: a minute, unbounded); a large one is refused rather than searched.
        return ToolOutput(
            f"Not searched: {target} is a binary file over {BIG_BINARY_BYTES // 2**20} MiB (it holds NUL "
            "bytes). Grep searches text; use Bash (e.g. `rg -a -c PATTERN FILE`) if you need this one.",
            meta={"mode": args.output_mode, "binary": True, "numFiles": 0},
        )
    # Over a folder rg prints a path on every line; content mode then regroups by file (path_order.py).
    by_file = args.output_mode == "content" and pinned.is_dir
    # rg need not read what deny rules hide (the filter below is the judge; these only spare work).
    hidden_globs = ctx.hidden.rg_globs(str(pinned.real)) if ctx.hidden is not None and pinned.is_dir else []
    argv = build_args(args, by_file=by_file, glob_base=pinned.shown if pinned.is_dir else "", excludes=hidden_globs)
    settings = ctx.session.settings
    limit = settings.grep_head_limit if args.head_limit is None else (args.head_limit or None)
    page = Page(args.offset, limit, min(settings.grep_max_result_chars, settings.max_result_chars))
    # Files a deny rule covers are left out before counting and paging, without a word about them.
    hidden = hidden_names(pinned, ctx.hidden)
    if args.output_mode == "content":
        context = context_lines(args) != (0, 0)
        return await _content(argv, pinned, page, by_file=by_file, context=context, hidden=hidden)
    if args.output_mode == "count":
        return await _count(argv, pinned, page, hidden)
    return await _files(argv, cwd, pinned, page, hidden)


BIG_BINARY_BYTES = 64 * 2**20


def _large_named_binary_file(pinned: PinnedTarget) -> bool:
    """Whether the target is a regular file over BIG_BINARY_BYTES whose first bytes hold a NUL (rg's binary test)."""
    if pinned.is_dir or pinned.st.st_size <= BIG_BINARY_BYTES:
        return False
    try:
        return b"\0" in os.pread(pinned.fd, 64 * 1024, 0)
    except OSError:
        return False


async def _files(
    argv: list[str], cwd: Path, pinned: PinnedTarget, page: Page, hidden: HiddenNames | None
) -> ToolOutput:
    # Names are relative to the working directory; each is statted as rg reports it (sinks.py).
    cwd_fd = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        collect = NewestFirstCollector(MAX_LIST_BYTES, cwd_fd)
        result = await _run_unhidden(argv, pinned, collect, b"\0", hidden)
        if result.failed and not collect.records():
            raise rg_failure(result, GREP_WORDING)
        names = await collect.newest_first()
    finally:
        os.close(cwd_fd)
    window, dropped = names_below(pinned, page.window(names))
    total = len(names) - dropped
    meta: dict[str, object] = {"mode": "files_with_matches"}
    if total == 0:
        text = "No files found" + problem_note(result)
        return ToolOutput(text, meta={**meta, "numFiles": 0, **page.meta(0, 0, True, False)})
    shown, cut = page.fit(name.decode("utf-8", "replace") for name in window)
    plural = "file" if total == 1 else "files"
    header = f"Found {total} {plural}" if collect.complete else f"Found at least {total} {plural}"
    parts = [header, *shown]
    note = page.note("files", len(shown), total, collect.complete, cut)
    text = "\n".join(parts) + (f"\n\n{note}" if note else "") + problem_note(result) + dropped_note(dropped)
    meta.update(numFiles=len(shown), **page.meta(len(shown), total, collect.complete, cut))
    return ToolOutput(text, meta=meta)


async def _count(argv: list[str], pinned: PinnedTarget, page: Page, hidden: HiddenNames | None) -> ToolOutput:
    collect = LineCollector(MAX_LIST_BYTES, sep=b"\n")
    result = await _run_unhidden(argv, pinned, collect, b"\n", hidden, name_end=b"\0")
    records = collect.records()
    if result.failed and not records:
        raise rg_failure(result, GREP_WORDING)
    counts: list[tuple[bytes, int]] = []
    for record in records:
        name, _, number = record.rpartition(b"\0")
        counts.append((name, int(number) if number.isdigit() else 0))
    # rg's parallel order changes from run to run; path order (content mode's) keeps pages stable.
    counts.sort(key=lambda item: path_key(item[0]))
    files, matches = len(counts), sum(n for _, n in counts)
    meta: dict[str, object] = {"mode": "count", "numFiles": files, "numMatches": matches}
    if files == 0:
        return ToolOutput("No matches found" + problem_note(result), meta={**meta, **page.meta(0, 0, True, False)})
    window = page.window(counts)
    kept, dropped = names_below(pinned, [name for name, _ in window])
    shown, cut = page.fit(f"{name.decode('utf-8', 'replace')}:{n}" for name, n in window if name in kept)
    at_least = "" if collect.complete else "at least "
    summary = (
        f"Found {at_least}{matches} total {'occurrence' if matches == 1 else 'occurrences'} "
        f"across {at_least}{files} {'file' if files == 1 else 'files'}."
    )
    note = page.note("files", len(shown), files, collect.complete, cut)
    text = "\n".join(shown) + f"\n\n{summary}" + (f"\n{note}" if note else "") + problem_note(result)
    text += dropped_note(dropped)
    meta.update(page.meta(len(shown), files, collect.complete, cut))
    return ToolOutput(text, meta=meta)


async def _run_unhidden(
    argv: list[str],
    pinned: PinnedTarget,
    sink: LineCollector,
    sep: bytes,
    hidden: HiddenNames | None,
    *,
    name_end: bytes | None = None,
) -> RgResult:
    """Run rg into `sink`, leaving out the records of files deny rules hide (before the sink counts them)."""
    if hidden is None:
        return await run_rg_on(argv, pinned, sink, sep=sep)
    unhidden = Unhidden(sink, hidden.is_hidden, sep, literals=hidden.literals, name_end=name_end)
    result = await run_rg_on(argv, pinned, unhidden, sep=sep)
    unhidden.flush()
    return result


async def _content(
    argv: list[str], pinned: PinnedTarget, page: Page, *, by_file: bool, context: bool, hidden: HiddenNames | None
) -> ToolOutput:
    if by_file:
        blocks = FileBlocks(MAX_COUNT_BYTES, context=context)
        try:
            result = await run_rg_on(argv, pinned, blocks)
            blocks.finish()
            if hidden is not None:
                blocks.drop(hidden.is_hidden)
            kept, cut = await anyio.to_thread.run_sync(blocks.page, page.offset, page.limit, page.budget)
        finally:
            blocks.close()
        total, complete = blocks.total, blocks.complete
    else:  # one file: rg prints it in order, and one page is kept while the rest is counted
        pager = LinePager(page.offset, page.limit, page.budget, MAX_COUNT_BYTES)
        result = await run_rg_on(argv, pinned, pager)
        pager.finish()
        kept, cut, total, complete = pager.kept, pager.cut_by_budget, pager.total, pager.complete
    if result.failed and total == 0:
        raise rg_failure(result, GREP_WORDING)
    shown = len(kept)
    meta: dict[str, object] = {"mode": "content", "numLines": shown}
    meta.update(page.meta(shown, total, complete, cut))
    if total == 0:
        return ToolOutput("No matches found" + problem_note(result), meta=meta)
    body = b"\n".join(kept)
    notes = [page.note("lines", shown, total, complete, cut)]
    if LONG_LINE_MARKER in body:
        notes.append(
            f"[Lines over {MAX_COLUMNS} characters were shortened, marked "
            f"{LONG_LINE_MARKER.decode()}; Read the file to see them whole.]"
        )
    text = body.decode("utf-8", "replace")
    extra = "\n".join(note for note in notes if note)
    if extra:
        text = f"{text}\n\n{extra}" if shown else extra
    return ToolOutput(text + problem_note(result), meta=meta)
