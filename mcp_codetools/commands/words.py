"""A shell word as the read-only checks see it: its text after quote removal and what bash would still do to it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word after quote removal, with what bash would still expand in it."""

    text: str
    expands: bool = False
    """An unquoted or double-quoted `$`, a backtick or a parenthesis: the text is not what runs."""
    glob: bool = False
    """An unquoted `*`, `?` or `[`: bash may replace the word with file names."""
    glob_first: bool = False
    """The word starts with an unquoted glob character, so a file name such as `-delete` could match."""
    brace: bool = False
    """An unquoted `{a,b}` or `{1..3}`: bash turns the word into several."""
