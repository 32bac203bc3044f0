"""Grep's pages: which entries a call asked for (offset, head_limit), within a character cap, and the notices.

Nothing here knows what an entry is: the three output modes hand in their lines, files or counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from mcp_codetools.search.sinks import fit_lines

NOTICE_RESERVE = 600
"""Room kept free under the cap for the header and the notices."""
NARROW = "To narrow the search, use path, glob, type or a more specific pattern."

T = TypeVar("T")


class Page:
    """Which entries a call asked for, and the words for what it got."""

    def __init__(self, offset: int, limit: int | None, cap: int) -> None:
        self.offset = offset
        self.limit = limit
        self.cap = cap
        self.budget = cap - NOTICE_RESERVE

    def window(self, entries: Sequence[T]) -> Sequence[T]:
        """The entries this page asks for, before the character budget."""
        end = len(entries) if self.limit is None else self.offset + self.limit
        return entries[self.offset : end]

    def fit(self, lines: Iterable[str]) -> tuple[list[str], bool]:
        """The lines that fit the character budget, and whether any were cut."""
        return fit_lines(lines, self.budget)

    def note(self, unit: str, shown: int, total: int, complete: bool, cut: bool) -> str:
        """The pagination notice, or "" when everything there is was shown."""
        first, last = self.offset + 1, self.offset + shown
        more = last < total or not complete
        if not more and self.offset == 0:
            return ""
        of = f"{total}" if complete else f"at least {total}"
        if shown == 0:
            return f"[Offset {self.offset} is past the end: there are {of} {unit}. Use a smaller offset.]"
        why = f" (cut to stay under {self.cap:,} characters)" if cut else ""
        text = f"[Showing {unit} {first}-{last} of {of}{why}."
        if more:
            text += f" Next page: offset={last}. {NARROW}"
        return text + "]"

    def meta(self, shown: int, total: int, complete: bool, cut: bool) -> dict[str, object]:
        """The result's paging metadata: totals, what was applied, and the offset to continue from."""
        more = self.offset + shown < total or not complete
        meta: dict[str, object] = {"total": total, "totalComplete": complete, "truncated": more or cut}
        if self.limit is not None and total - self.offset > self.limit:
            meta["appliedLimit"] = self.limit
        if self.offset:
            meta["appliedOffset"] = self.offset
        if more:
            meta["nextOffset"] = self.offset + shown
        return meta
