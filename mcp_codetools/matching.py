"""
Finding `old_string` in a file, and explaining well when it is not there.

Matching is literal. A file with CRLF endings also matches LF text: positions found in the LF view are
mapped back, so only the matched bytes change and every other line stays byte-identical.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass

from mcp_codetools.text import number_lines

_LINE_PREFIX = re.compile(r"^\s*\d+(\t|\u2192|:\s?)")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00b4": "'", "`": "`"})
_SPACE = re.compile(r"[ \t\f\v]+")
_MAX_REGION_LINES = 30
_FUZZY_MAX_FILE_LINES = 20_000
_FUZZY_MAX_WINDOW_LINES = 200


@dataclass(frozen=True, slots=True)
class Match:
    """A match as [start, end) character offsets into the decoded file."""

    start: int
    end: int


def find_matches(text: str, old: str) -> list[Match]:
    """Every non-overlapping occurrence of `old`, literal first, then through CRLF→LF mapping."""
    found = _find_all(text, old)
    if found or "\r\n" not in text or "\n" not in old or "\r" in old:
        return [Match(a, b) for a, b in found]
    lf_text = text.replace("\r\n", "\n")
    spans = _find_all(lf_text, old)
    if not spans:
        return []
    # LF-view positions of each newline that was a CRLF; a position maps forward by the count before it.
    crlf_at: list[int] = []
    removed = 0
    index = text.find("\r\n")
    while index != -1:
        crlf_at.append(index - removed)
        removed += 1
        index = text.find("\r\n", index + 2)
    return [Match(a + bisect.bisect_left(crlf_at, a), b + bisect.bisect_left(crlf_at, b)) for a, b in spans]


def _find_all(text: str, needle: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = text.find(needle)
    while start != -1:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + len(needle))
    return spans


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def apply(text: str, matches: list[Match], new: str) -> str:
    pieces: list[str] = []
    cursor = 0
    for match in matches:
        pieces.append(text[cursor : match.start])
        pieces.append(new)
        cursor = match.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def adapt_newlines(new: str, newline: str) -> str:
    """Write new text with the file's own line ending."""
    if newline == "\r\n":
        return new.replace("\r\n", "\n").replace("\n", "\r\n")
    return new


def strip_line_prefixes(old: str) -> str | None:
    """`old` without Read's `N<TAB>` prefixes, when most of its lines carry one."""
    lines = old.split("\n")
    meaningful = [line for line in lines if line.strip()]
    if not meaningful:
        return None
    prefixed = [line for line in meaningful if _LINE_PREFIX.match(line)]
    if len(prefixed) * 2 < len(meaningful) or not prefixed:
        return None
    return "\n".join(_LINE_PREFIX.sub("", line, count=1) for line in lines)


def _loose(line: str) -> str:
    return _SPACE.sub(" ", line.translate(_QUOTES)).strip()


def not_found_message(text: str, old: str, path: str) -> str:
    """Why `old` is not in the file, with the nearest region when one is close."""
    shown = old if len(old) <= 500 else old[:500] + f"… ({len(old)} characters)"
    parts = [f"String to replace not found in file {path}.\nString: {shown}"]
    stripped = strip_line_prefixes(old)
    if stripped is not None:
        hint = (
            "old_string seems to include line-number prefixes copied from Read output (like `12<TAB>`). "
            "The prefix (line number and tab) is not part of the file: send only the text after the tab."
        )
        if find_matches(text, stripped):
            hint += " Without the prefixes, the text is found."
        parts.append(hint)
        return "\n".join(parts)
    region = closest_region(text, old)
    if region is not None:
        first, last, exact_but_spacing = region
        lines = text.split("\n")[first - 1 : last]
        why = (
            "differs only in whitespace, indentation or quote style"
            if exact_but_spacing
            else "is the closest text in the file"
        )
        parts.append(f"The text at lines {first}-{last} {why}:\n{number_lines(lines, first)}")
        parts.append("Copy the exact text from these lines into old_string.")
    else:
        parts.append("Read the file again and copy the exact text, including whitespace, into old_string.")
    return "\n".join(parts)


def closest_region(text: str, old: str) -> tuple[int, int, bool] | None:
    """(first, last, spacing_only) of the window of file lines nearest to `old`, or None."""
    old_lines = old.replace("\r\n", "\n").strip("\n").split("\n")
    lines = text.replace("\r\n", "\n").split("\n")
    width = len(old_lines)
    if not old.strip() or width > len(lines) or width > _MAX_REGION_LINES * 4:
        return None
    target = [_loose(line) for line in old_lines]
    loose_lines = [_loose(line) for line in lines]
    for i in range(len(lines) - width + 1):
        if loose_lines[i] == target[0] and loose_lines[i : i + width] == target:
            return i + 1, min(i + width, i + _MAX_REGION_LINES), True
    if len(lines) > _FUZZY_MAX_FILE_LINES or width > _FUZZY_MAX_WINDOW_LINES:
        return None
    joined_target = "\n".join(target)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(joined_target)
    best: tuple[float, int] = (0.0, -1)
    for i in range(len(lines) - width + 1):
        matcher.set_seq1("\n".join(loose_lines[i : i + width]))
        if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
            continue
        score = matcher.ratio()
        if score > best[0]:
            best = (score, i)
    if best[0] < 0.6 or best[1] < 0:
        return None
    i = best[1]
    return i + 1, min(i + width, i + _MAX_REGION_LINES), False


def snippet(text: str, first_line: int, last_line: int, context: int = 3) -> str:
    """Numbered lines around an edit, for the model to see what it did."""
    lines = text.split("\n")
    a = max(1, first_line - context)
    b = min(len(lines), last_line + context)
    return number_lines(lines[a - 1 : b], a)


def structured_patch(
    old_text: str, new_text: str, old_first: int, old_last: int, new_first: int, new_last: int, context: int = 3
) -> dict[str, object]:
    """One hunk in the shape clients know (`oldStart`, `oldLines`, `newStart`, `newLines`, `lines`)."""
    old_lines = old_text.split("\n")
    new_lines = new_text.split("\n")
    a = max(1, old_first - context)
    before = old_lines[a - 1 : old_first - 1]
    after_end = min(len(old_lines), old_last + context)
    after = old_lines[old_last:after_end]
    removed = old_lines[old_first - 1 : old_last]
    added = new_lines[new_first - 1 : new_last]
    body = [" " + s for s in before] + ["-" + s for s in removed] + ["+" + s for s in added] + [" " + s for s in after]
    return {
        "oldStart": a,
        "oldLines": len(before) + len(removed) + len(after),
        "newStart": new_first - len(before),
        "newLines": len(before) + len(added) + len(after),
        "lines": [line.rstrip("\r") for line in body],
    }
