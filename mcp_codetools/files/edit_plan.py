"""The one path of Edit and MultiEdit: find old_string, recover a damaged one, refuse a non-unique one, apply.

Edit is a plan of one step, MultiEdit of several, applied in order to an in-memory copy: all of them, or none.
Each edit sees the text the edits before it produced. The first edit that cannot apply stops the whole call
before anything is written; in a MultiEdit the error names it by its index in `edits`. The wording is
Claude Code's Edit's, so a model reads the same answer from either tool.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_codetools.errors import (
    InvalidInputError,
    NoChangeError,
    NotAFileError,
    OldStringNotFoundError,
    OldStringNotUniqueError,
    ToolError,
)
from mcp_codetools.files import matching, recovery, recovery_notes
from mcp_codetools.files.editing import Loaded

_IN_PLACE_MAX = 8
"""Up to this many matches of one edit are replaced in place; more are joined into a new buffer at once."""
NO_CHANGE = "No changes to make: old_string and new_string are exactly the same."


def refuse_notebook(path: Path) -> None:
    """Edit and MultiEdit leave notebooks to NotebookEdit: their JSON is not the text a model means to change.

    Raises:
        NotAFileError: `path` is an existing .ipynb file.
    """
    if path.suffix == ".ipynb" and os.path.lexists(path):
        raise NotAFileError("File is a Jupyter Notebook. Use NotebookEdit to change its cells.")


@dataclass(frozen=True, slots=True)
class EditStep:
    """One replacement of a MultiEdit, applied to the result of the ones before."""

    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass
class Planned:
    """The new body (bytes or text, as `Loaded.body`) and how many replacements each edit made."""

    body: Any
    """A bytearray for files matched as bytes, else str."""
    counts: list[int]
    first_change: int
    """Where in the new body the first (topmost) change starts."""
    recovered: dict[int, recovery.Recovered]
    """Edits (by index) whose old_string matched only once normalised, and how."""
    unchanged_tail: int = 0
    """How many units at the end of the new body no edit touched (what follows the bottom-most change)."""
    first_matches: list[matching.Match] = field(default_factory=list)
    """Where the first edit matched in the body as loaded (what Edit's result shows)."""
    first_new_len: int = 0
    """The length of the first edit's replacement in the body's units."""


def _ordinal(index: int) -> str:
    n = index + 1
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _fail(error: ToolError, index: int, total: int) -> ToolError:
    """The same error class, its message led by which edit failed and that nothing was written."""
    head = (
        f"edits[{index}] (the {_ordinal(index)} of {total}) failed, so no edit was applied and the file is unchanged. "
    )
    return type(error)(head + error.message)


def plan_edits(
    loaded: Loaded, steps: list[EditStep], shown: str, recovery_mode: str = "apply", *, single: bool = False
) -> Planned:
    """Apply `steps` in order to the file's body in memory, a missed old_string recovered where it safely can.

    `single` is Edit: one step, errors without the `edits[i]` lead, and an empty old_string on a blank file
    fills it.

    Raises:
        ToolError: an edit does not apply; in a MultiEdit the message names it as `edits[i]`.
    """
    # Bytes are edited in place in one buffer: a replacement moves the tail instead of building a new
    # copy of the whole file for every edit (ten 10 MB copies cost more than the scanning).
    # A single step needs no buffer: one replacement builds the new bytes once (a bytearray would add a copy).
    body = bytearray(loaded.body) if loaded.as_bytes and not single else loaded.body
    planned = Planned(body, [], 0, {})
    first: int | None = None
    tail = len(body)
    for index, step in enumerate(steps):
        try:
            before = len(body)
            body, matches, new_len, how = _apply_one(loaded, body, step, shown, recovery_mode, single)
        except ToolError as exc:
            if single:
                raise
            raise _fail(exc, index, len(steps)) from None
        planned.counts.append(len(matches))
        if index == 0:
            planned.first_matches, planned.first_new_len = matches, new_len
        if how is not None:
            planned.recovered[index] = how
        # Text before the topmost change so far is untouched, so an edit further down cannot move it.
        first = matches[0].start if first is None else min(first, matches[0].start)
        # Likewise the text after the bottom-most change: an edit above it leaves it whole.
        tail = min(tail, before - matches[-1].end)
    planned.body, planned.first_change, planned.unchanged_tail = body, first or 0, tail
    return planned


def _apply_one(
    loaded: Loaded, body: Any, step: EditStep, shown: str, mode: str, single: bool
) -> tuple[Any, list[matching.Match], int, recovery.Recovered | None]:
    if step.old_string == step.new_string:
        raise NoChangeError(NO_CHANGE)
    if step.old_string == "" and not single:
        raise InvalidInputError("old_string is empty; give the exact text to replace.")
    old = loaded.convert(step.old_string)
    if step.old_string == "":
        matches = [matching.Match(0, len(body))]  # Edit's create branch on a blank existing file: fill it
    else:
        matches = matching.find_matches(body, old) if old is not None else []
    new_string, how = step.new_string, None
    if not matches:
        if isinstance(body, bytearray):
            text = bytes(body).decode(loaded.fmt.encoding, loaded.fmt.errors)
        else:
            text = loaded.text if isinstance(body, bytes) else body  # bytes: the body as loaded (Edit's one step)
        found = recovery.recover(text, step.old_string, step.new_string) if mode != "off" else None
        span = recovery.body_span(text, found, loaded.convert) if isinstance(found, recovery.Recovered) else None
        if mode != "apply" or span is None:
            later = "" if single else "\n(Each edit applies to the text as the edits before it left it.)"
            raise OldStringNotFoundError(recovery_notes.not_found(text, step.old_string, shown, found) + later)
        assert isinstance(found, recovery.Recovered)
        matches, new_string, how = [matching.Match(*span)], found.new, found
    if len(matches) > 1 and not step.replace_all:
        lines = matching.lines_of(body, [m.start for m in matches[:20]])
        listed = ", ".join(str(n) for n in lines) + (" …" if len(matches) > 20 else "")
        raise OldStringNotUniqueError(
            f"Found {len(matches)} matches of the string to replace, but replace_all is false "
            f"(at lines {listed}). To replace all occurrences, set replace_all to true. To replace only "
            "one occurrence, please provide more context to uniquely identify the instance."
        )
    new = loaded.convert(matching.adapt_newlines(new_string, loaded.fmt.newline))
    if new is None:
        raise InvalidInputError(f"new_string has characters the file's encoding ({loaded.fmt.encoding}) cannot hold.")
    if isinstance(body, bytearray):
        if len(matches) <= _IN_PLACE_MAX:
            for match in reversed(matches):
                body[match.start : match.end] = new
            return body, matches, len(new), how
        return bytearray(matching.apply(bytes(body), matches, new)), matches, len(new), how
    return matching.apply(body, matches, new), matches, len(new), how
