"""rg's argument list for one Grep call: its output mode, filters and context, model input passed safely.

The model's values reach rg only after `-e` or inside `--flag=value` (see rg_args.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from mcp_codetools.search.path_order import CONTEXT_SEPARATOR, MATCH_SEPARATOR
from mcp_codetools.search.rg_args import base_args, filter_args, rebase_globs, vcs_excludes

MAX_COLUMNS = 500
"""Lines longer than this are cut by rg (`--max-columns-preview` keeps their start)."""

OutputMode = Literal["content", "files_with_matches", "count"]


class GrepArgs(Protocol):
    """What `build_args` reads of Grep's input (the tool's input model)."""

    pattern: str
    glob: str | None
    type: str | None
    output_mode: OutputMode
    case_insensitive: bool
    line_numbers: bool
    after: int | None
    before: int | None
    around: int | None
    context: int | None
    multiline: bool


def split_globs(raw: str | None) -> list[str]:
    """The globs in Grep's `glob` argument: separated by spaces, or by commas outside braces."""
    if not raw:
        return []
    globs: list[str] = []
    for piece in raw.split():
        if "{" in piece and "}" in piece:
            globs.append(piece)
        else:
            globs.extend(part for part in piece.split(",") if part)
    return globs


def build_args(args: GrepArgs, *, by_file: bool, glob_base: str = "", excludes: Sequence[str] = ()) -> list[str]:
    """rg's argument list: model input only as `--flag=value` or after `-e`; the pinned target's path follows.

    rg runs in the searched folder, `glob_base` as the model names it: globs are rebased onto it.
    `excludes` (`--glob=!…`) come last, so they win over the model's globs.
    """
    argv = base_args()
    if args.case_insensitive:
        argv.append("--ignore-case")
    if args.multiline:
        argv += ["--multiline", "--multiline-dotall"]
    if args.type:
        argv.append(f"--type={args.type}")
    globs = rebase_globs(split_globs(args.glob), glob_base)
    argv += filter_args(globs) if globs is not None else ["--glob=!*"]  # no glob can match below the folder
    argv += vcs_excludes()
    argv += excludes
    if args.output_mode == "files_with_matches":
        argv += ["--files-with-matches", "--null"]
    elif args.output_mode == "count":
        argv += ["--count", "--with-filename", "--null"]
    else:
        argv += ["--no-heading", f"--max-columns={MAX_COLUMNS}", "--max-columns-preview"]
        if by_file:
            # rg searches in parallel; the lines are put back in path order, so the same search gives
            # the same lines and pages line up.
            argv += [MATCH_SEPARATOR, CONTEXT_SEPARATOR]
        argv.append("--line-number" if args.line_numbers else "--no-line-number")
        before, after = context_lines(args)
        if before or after:
            argv += [f"--before-context={before}", f"--after-context={after}"]
    return [*argv, "-e", args.pattern, "--"]


def context_lines(args: GrepArgs) -> tuple[int, int]:
    """Lines (before, after) each match: -A and -B override their half of -C/context."""
    around = args.around if args.around is not None else (args.context or 0)
    before = args.before if args.before is not None else around
    after = args.after if args.after is not None else around
    return before, after
