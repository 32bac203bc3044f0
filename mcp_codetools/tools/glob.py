"""Glob: files whose paths match a glob, newest first, listed by `rg --files` (never a Python walk).

rg matches a glob containing `/` from the folder it runs in, so it runs in the search folder and the
pattern reads relative to `path`. A leading run of plain folder names (`src/app/**/*.ts`) becomes
part of that folder, so rg walks only what can match. A glob about names only (`*.ts`, `**/*.ts`)
is given to rg as a file type rather than `--glob`, so .gitignore still applies (see `filter_args`).
The model's input reaches rg only inside `--glob=`/`--type-add=` values and as the process's working
directory, so nothing it writes is read as an option.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError
from typing_extensions import override

from mcp_codetools.errors import NotAFileError
from mcp_codetools.search.hidden_names import HiddenNames, hidden_names
from mcp_codetools.search.process import RgResult, Sink, run_rg
from mcp_codetools.search.rg_args import base_args, filter_args, name_glob, unpassable, vcs_excludes
from mcp_codetools.search.rg_errors import GLOB_WORDING, rg_failure
from mcp_codetools.search.sinks import LinePager, Unhidden, fit_lines, newest_first
from mcp_codetools.search.targets import (
    PinnedTarget,
    check_search_path,
    display_prefix,
    dropped_note,
    pin_search_target,
    redact_stderr,
    still_below,
)
from mcp_codetools.session import CodeSession
from mcp_codetools.tools.base import CallContext, SearchTool, ToolInput, ToolOutput

MAX_LIST_BYTES = 16 * 1024 * 1024
"""Stop reading rg's list after this much (some 200,000 paths); the total is then "at least"."""
NOTICE_RESERVE = 400
GLOB_SPECIAL = frozenset("*?[{\\")


class GlobInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    pattern: str = Field(min_length=1, description='Glob for file paths, e.g. "**/*.ts" or "src/**/*.py".')
    path: str | None = Field(default=None, description="Folder to search (default: the working directory).")

    @field_validator("pattern", "path")
    @classmethod
    def _passable(cls, value: str | None) -> str | None:
        problem = None if value is None else unpassable(value)
        if problem is not None:
            raise PydanticCustomError("unpassable", "it {problem}", {"problem": problem})
        return value


def _doubled_folder_note(pattern: str, folder: Path) -> str:
    """A hint when the pattern names `path`'s own folder again (`src/*.py` with path `src`)."""
    first, _, rest = pattern.partition("/")
    if first != folder.name or not rest:
        return ""
    return (
        f"\n(The pattern is read inside path {folder}, which has no folder {first}/. "
        f"For the files of {folder} itself, use the pattern `{rest}`.)"
    )


def split_pattern(pattern: str, folder: Path, session: CodeSession) -> tuple[Path | None, str]:
    """Where rg should run and the glob to give it; (None, _) when that folder does not exist.

    An absolute pattern, or one through `.` or `..`, names its folder like a `path` does, so that
    folder goes through the workspace rule for reads (the roots, and the session's scratch folder).
    Plain leading names are joined to `folder` only when no symlink is on the way: rg would not
    follow one, and neither does Glob.

    Raises:
        PermissionDeniedError: the pattern's folder lies outside the roots.
    """
    if pattern.startswith("!"):
        return folder, pattern
    parts = pattern.split("/")
    static: list[str] = []
    for part in parts[:-1]:
        if GLOB_SPECIAL.intersection(part):
            break
        static.append(part)
    absolute = pattern.startswith("/")
    if not absolute and not static:
        return folder, pattern
    rest = "/".join(parts[len(static) :])
    # Anchor to the new folder: a slash-free glob would otherwise match at any depth.
    glob = rest if "/" in rest else "/" + rest
    joined = os.path.join(folder, "/".join(static) or "/")
    if absolute or any(part in (".", "..") for part in static):
        base = session.resolve(joined, field="pattern", for_read=True)
    else:
        base = Path(os.path.normpath(joined))
        try:
            real = os.path.realpath(base)
        except OSError:  # a link on the way changed while it was read: treat it as a link, not followed
            return folder, pattern
        if real != str(base):
            return folder, pattern
    if not os.path.isdir(base):  # False for a name over 255 bytes, where Path.is_dir raises
        return None, glob
    return base, glob


def rg_filter(glob: str) -> list[str]:
    """rg options for a glob from `split_pattern`: `/name` is anchored (direct children), `**` is any depth."""
    if glob == "/**":
        return filter_args(["**"])
    if glob.startswith("/") and name_glob(glob[1:]) is not None:
        return ["--max-depth=1", *filter_args([glob[1:]])]
    return filter_args([glob])


class GlobTool(SearchTool[GlobInput]):
    """Glob: files whose paths match a glob, newest first."""

    name = "Glob"
    title = "Find files by name"
    description = (
        'Find files by glob, e.g. "**/*.ts" or "src/**/*.py"; a pattern without / matches names at any '
        "depth. Lists paths relative to the working directory, newest first, at most {glob_max_files} with the "
        "total. Respects .gitignore, includes hidden files, skips .git."
    )
    input_model = GlobInput

    @override
    async def validate_input(self, args: GlobInput, ctx: CallContext) -> None:
        folder = ctx.paths["path"]
        if not stat.S_ISDIR(check_search_path(folder, ctx.session.cwd, kind="Directory").st_mode):
            raise NotAFileError(
                f"Path is not a directory: {folder}. Give a folder as path; the pattern matches files in it."
            )

    @override
    async def call(self, args: GlobInput, ctx: CallContext, prepared: None) -> ToolOutput:
        session = ctx.session
        base, glob = split_pattern(args.pattern, ctx.paths["path"], session)
        if base is None:
            return ToolOutput(
                "No files found" + _doubled_folder_note(args.pattern, ctx.paths["path"]), meta=_meta(0, 0, True)
            )
        # rg sorts by mtime itself (see `_list`): for a listing that is cheaper than a stat per file in
        # Python, and then only the first 100 names are kept; the rest are merely counted.
        argv = [*base_args(), "--files", "--null", *rg_filter(glob), *vcs_excludes()]
        if session.settings.glob_no_ignore:
            argv.append("--no-ignore")
        budget = session.settings.max_result_chars - NOTICE_RESERVE
        # rg runs in the folder's open descriptor: a swap of any folder on the way after the check cannot move it.
        pinned = pin_search_target(base, session.cwd, session.workspace, kind="Directory")
        try:
            # Files a deny rule covers are left out before the pager counts, without a word about them.
            if ctx.hidden is not None:
                argv += ctx.hidden.rg_globs(str(pinned.real))
            hidden = hidden_names(pinned, ctx.hidden, prefixed=False)
            pager, result = await _list(argv, base, pinned, hidden, session.settings.glob_max_files, budget)
            kept = [name for name in pager.kept if still_below(pinned.fd, os.fsdecode(name))]
        finally:
            pinned.close()
        dropped = len(pager.kept) - len(kept)
        total = pager.total - dropped
        if result.failed and not total:
            raise rg_failure(result, GLOB_WORDING)
        if not total:
            return ToolOutput("No files found", meta=_meta(0, 0, pager.complete))
        prefix = display_prefix(base, session.cwd)
        shown, _cut = fit_lines((prefix + name.decode("utf-8", "replace") for name in kept), budget)
        text = "\n".join(shown) + dropped_note(dropped)
        if len(shown) < total or not pager.complete:
            of = f"{total}" if pager.complete else f"at least {total}"
            text += f"\n(Showing {len(shown)} of {of} matching files; narrow the pattern or path to see the rest.)"
        return ToolOutput(text, meta=_meta(len(shown), total, pager.complete))


RG_CANNOT_SORT = "sorting by last modified isn't supported"
rg_sorts: bool = True
"""Whether rg sorts by mtime here. rg tests that by reading its own binary's mtime, which on Linux it finds
through /proc/self/exe: where /proc is absent rg refuses `--sortr=modified`, and the list is sorted here."""


async def _list(
    argv: list[str], base: Path, pinned: PinnedTarget, hidden: HiddenNames | None, limit: int, budget: int
) -> tuple[LinePager, RgResult]:
    """rg's list, newest first: the first `limit` names kept (within `budget` bytes), all counted."""
    global rg_sorts
    if rg_sorts:
        pager = LinePager(0, limit, budget, MAX_LIST_BYTES, sep=b"\0")
        result = await _run(argv + ["--sortr=modified"], base, pinned, hidden, pager)
        if not (result.failed and RG_CANNOT_SORT in result.stderr):
            return pager, result
        rg_sorts = False
    # Every name is kept and stat'd through the pinned folder, then the page is cut from the sorted list.
    whole = LinePager(0, None, MAX_LIST_BYTES, MAX_LIST_BYTES, sep=b"\0")
    result = await _run(argv, base, pinned, hidden, whole)
    pager = LinePager(0, limit, budget, MAX_LIST_BYTES, sep=b"\0")
    ordered = await newest_first(whole.kept, pinned.fd)
    pager(b"".join(name + b"\0" for name in ordered))
    pager.complete = whole.complete
    return pager, result


async def _run(argv: list[str], base: Path, pinned: PinnedTarget, hidden: HiddenNames | None, pager: Sink) -> RgResult:
    unhidden = None if hidden is None else Unhidden(pager, hidden.is_hidden, b"\0", literals=hidden.literals)
    result = await run_rg(argv, base, unhidden or pager, cwd_fd=pinned.fd, confine=pinned)
    if unhidden is not None:
        unhidden.flush()
    return dataclasses.replace(result, stderr=redact_stderr(pinned, result.stderr))


def _meta(shown: int, total: int, complete: bool) -> dict[str, object]:
    return {"numFiles": shown, "totalMatches": total, "truncated": shown < total, "countIsComplete": complete}
