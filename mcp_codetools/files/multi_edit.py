"""Several edits to one file, applied in order to an in-memory copy: all of them, or none.

Each edit sees the text the edits before it produced. The first edit that cannot apply stops the
whole call before anything is written, and the error names it by its index in `edits`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_codetools.errors import (
    InvalidInputError,
    NoChangeError,
    OldStringNotFoundError,
    OldStringNotUniqueError,
    ToolError,
)
from mcp_codetools.files import matching, recovery, recovery_notes
from mcp_codetools.files.editing import Loaded

_IN_PLACE_MAX = 8
"""Up to this many matches of one edit are replaced in place; more are joined into a new buffer at once."""


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


def plan_edits(loaded: Loaded, steps: list[EditStep], shown: str, recovery_mode: str = "apply") -> Planned:
    """Apply `steps` in order to the file's body in memory (a missed old_string is recovered as Edit does).

    Raises:
        ToolError: an edit does not apply; the message names it as `edits[i]`.
    """
    # Bytes are edited in place in one buffer: a replacement moves the tail instead of building a new
    # copy of the whole file for every edit (ten 10 MB copies cost more than the scanning).
    body = bytearray(loaded.body) if loaded.as_bytes else loaded.body
    counts: list[int] = []
    first: int | None = None
    recovered: dict[int, recovery.Recovered] = {}
    for index, step in enumerate(steps):
        try:
            body, count, start, how = _apply_one(loaded, body, step, shown, recovery_mode)
        except ToolError as exc:
            raise _fail(exc, index, len(steps)) from None
        counts.append(count)
        if how is not None:
            recovered[index] = how
        # Text before the topmost change so far is untouched, so an edit further down cannot move it.
        first = start if first is None else min(first, start)
    return Planned(body, counts, first or 0, recovered)


def _apply_one(
    loaded: Loaded, body: Any, step: EditStep, shown: str, mode: str
) -> tuple[Any, int, int, recovery.Recovered | None]:
    if step.old_string == step.new_string:
        raise NoChangeError("old_string and new_string are exactly the same.")
    if step.old_string == "":
        raise InvalidInputError("old_string is empty; give the exact text to replace.")
    old = loaded.convert(step.old_string)
    matches = matching.find_matches(body, old) if old is not None else []
    new_string, how = step.new_string, None
    if not matches:
        text = bytes(body).decode(loaded.fmt.encoding, loaded.fmt.errors) if isinstance(body, bytearray) else body
        found = recovery.recover(text, step.old_string, step.new_string) if mode != "off" else None
        span = recovery.body_span(text, found, loaded.convert) if isinstance(found, recovery.Recovered) else None
        if mode != "apply" or span is None:
            raise OldStringNotFoundError(
                recovery_notes.not_found(text, step.old_string, shown, found)
                + "\n(Each edit applies to the text as the edits before it left it.)"
            )
        assert isinstance(found, recovery.Recovered)
        matches, new_string, how = [matching.Match(*span)], found.new, found
    if len(matches) > 1 and not step.replace_all:
        lines = matching.lines_of(body, [m.start for m in matches[:20]])
        listed = ", ".join(str(n) for n in lines) + (" …" if len(matches) > 20 else "")
        raise OldStringNotUniqueError(
            f"Found {len(matches)} matches of old_string (at lines {listed}), but replace_all is false. "
            "Add surrounding context to make it unique, or set replace_all to true for this edit."
        )
    new = loaded.convert(matching.adapt_newlines(new_string, loaded.fmt.newline))
    if new is None:
        raise InvalidInputError(f"new_string has characters the file's encoding ({loaded.fmt.encoding}) cannot hold.")
    if isinstance(body, bytearray):
        if len(matches) <= _IN_PLACE_MAX:
            for match in reversed(matches):
                body[match.start : match.end] = new
            return body, len(matches), matches[0].start, how
        return bytearray(matching.apply(bytes(body), matches, new)), len(matches), matches[0].start, how
    return matching.apply(body, matches, new), len(matches), matches[0].start, how
