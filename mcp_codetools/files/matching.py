"""Finding `old_string` in a file, and explaining well when it is not there.

Matching is literal. A file with CRLF endings also matches LF text: positions found in the LF view are
mapped back, so only the matched bytes change and every other line stays byte-identical.
"""

from __future__ import annotations

import bisect
import difflib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, AnyStr

from mcp_codetools.files.text import CUT_MARK, MAX_LINE_CHARS, clip_line, number_lines

_LINE_PREFIX = re.compile(r"^\s*\d+(\t|\u2192|:\s?)")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00b4": "'", "`": "`"})
_SPACE = re.compile(r"[ \t\f\v]+")
_MAX_REGION_LINES = 30
_FUZZY_MAX_FILE_LINES = 20_000
_FUZZY_MAX_WINDOW_LINES = 200
_LOOSE_MAX_FILE_LINES = 500_000
"""Beyond this many lines not even the whitespace-blind comparison is tried: the plain message is given."""
_FUZZY_MAX_OLD_CHARS = 4000
"""A longer old_string is compared only at windows its first or last line anchors."""
_FUZZY_MAX_COMPARE_CHARS = 2000
"""difflib's cost grows with the product of the lengths: each side is cut to this before scoring."""
_FULL_SCAN_MAX_CHARS = 2_000_000
"""Score every window (not only anchored ones) only while windows x window size stays under this."""
SEARCH_BUDGET_S = 0.5
"""Wall-clock time the closest-region search may take; when it runs out, the plain message is given."""


@dataclass(frozen=True, slots=True)
class Match:
    """A match as [start, end) character offsets into the decoded file."""

    start: int
    end: int


def _lit(like: AnyStr, literal: str) -> AnyStr:
    """`literal` as the same type as `like` (matching works on decoded text or on raw bytes alike)."""
    if isinstance(like, str):
        return literal
    return literal.encode("ascii")


def find_matches(text: AnyStr, old: AnyStr) -> list[Match]:
    """Every non-overlapping occurrence of `old`, literal first, then through CRLF→LF mapping."""
    crlf, lf, cr = _lit(text, "\r\n"), _lit(text, "\n"), _lit(text, "\r")
    found = _find_all(text, old)
    if found or crlf not in text or lf not in old or cr in old:
        return [Match(a, b) for a, b in found]
    spans = _find_all(text.replace(crlf, lf), old)
    if not spans:
        return []
    # LF-view positions of each newline that was a CRLF; a position maps forward by the count before it.
    crlf_at: list[int] = []
    removed = 0
    index = text.find(crlf)
    while index != -1:
        crlf_at.append(index - removed)
        removed += 1
        index = text.find(crlf, index + 2)
    return [Match(a + bisect.bisect_left(crlf_at, a), b + bisect.bisect_left(crlf_at, b)) for a, b in spans]


def _find_all(text: AnyStr, needle: AnyStr) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = text.find(needle)
    while start != -1:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + len(needle))
    return spans


def line_of(text: AnyStr, offset: int) -> int:
    """The 1-based line number holding `offset`."""
    return text.count(_lit(text, "\n"), 0, offset) + 1


def _word_at(text: AnyStr, index: int) -> bool:
    if index < 0 or index >= len(text):
        return False
    unit = text[index : index + 1]
    char = unit if isinstance(unit, str) else unit.decode("latin-1")
    return char.isalnum() or char == "_"


def inside_word_note(text: AnyStr, match: Match) -> str:
    """A note when a one-line match starts or ends inside a word (`x = 1` in `max = 1`), else ""."""
    if match.end <= match.start or _lit(text, "\n") in text[match.start : match.end]:
        return ""
    cut = (_word_at(text, match.start - 1) and _word_at(text, match.start)) or (
        _word_at(text, match.end - 1) and _word_at(text, match.end)
    )
    if not cut:
        return ""
    return (
        f"\nNote: old_string matched inside a longer word on line {line_of(text, match.start)}; check that this "
        "is the place you meant."
    )


def lines_of(text: AnyStr, offsets: list[int]) -> list[int]:
    """Line numbers of ascending offsets, counting each stretch of text once."""
    nl = _lit(text, "\n")
    numbers: list[int] = []
    line, cursor = 1, 0
    for offset in offsets:
        line += text.count(nl, cursor, offset)
        cursor = offset
        numbers.append(line)
    return numbers


def apply(text: AnyStr, matches: list[Match], new: AnyStr) -> AnyStr:
    """`text` with every match replaced by `new` (matches ascending, not overlapping)."""
    if isinstance(text, bytes):
        # Slices of a memoryview are not copies: the file's bytes are copied once, into the result.
        view = memoryview(text)
        parts: list[Any] = []
        cursor = 0
        for match in matches:
            parts += [view[cursor : match.start], new]
            cursor = match.end
        parts.append(view[cursor:])
        return b"".join(parts)
    pieces: list[str] = []
    cursor = 0
    for match in matches:
        pieces += [text[cursor : match.start], new]
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


def not_found_head(old: str, path: str) -> str:
    """The first lines of every "not found" answer: which file, and old_string (cut when long)."""
    shown = old if len(old) <= 500 else old[:500] + f"… ({len(old)} characters)"
    return f"String to replace not found in file {path}.\nString: {shown}"


def not_found_message(text: str, old: str, path: str) -> str:
    """Why `old` is not in the file, with the nearest region when one is close."""
    parts = [not_found_head(old, path)]
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
        parts.append(hint)
        old = stripped
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


def closest_region(text: str, old: str, budget_s: float | None = None) -> tuple[int, int, bool] | None:
    """(first, last, spacing_only) of the window of file lines nearest to `old`, or None.

    The work is bounded: by file size, by old_string size, by the length compared per window, and by
    wall-clock time (`budget_s`, default SEARCH_BUDGET_S). Past any bound the answer is None, and the
    caller gives the plain "not found" message. A long old_string is scored only at windows whose
    first or last line matches its own (ignoring whitespace and quote style), the cheap first pass.
    """
    deadline = time.monotonic() + (SEARCH_BUDGET_S if budget_s is None else budget_s)
    old_lines = old.replace("\r\n", "\n").strip("\n").split("\n")
    lines = text.replace("\r\n", "\n").split("\n")
    width = len(old_lines)
    if not old.strip() or width > len(lines) or width > _MAX_REGION_LINES * 4 or len(lines) > _LOOSE_MAX_FILE_LINES:
        return None
    target = [_loose(line) for line in old_lines]
    loose_lines: list[str] = []
    for index, line in enumerate(lines):
        if index % 4096 == 0 and time.monotonic() > deadline:
            return None
        loose_lines.append(_loose(line))
    for i in range(len(lines) - width + 1):
        if loose_lines[i] == target[0] and loose_lines[i : i + width] == target:
            return i + 1, min(i + width, i + _MAX_REGION_LINES), True
    if len(lines) > _FUZZY_MAX_FILE_LINES or width > _FUZZY_MAX_WINDOW_LINES:
        return None
    joined_target = "\n".join(target)
    starts = range(len(lines) - width + 1)
    anchored = [i for i in starts if loose_lines[i] == target[0] or loose_lines[i + width - 1] == target[-1]]
    if anchored or len(joined_target) > _FUZZY_MAX_OLD_CHARS or len(starts) * len(joined_target) > _FULL_SCAN_MAX_CHARS:
        candidates: range | list[int] = anchored
    else:
        candidates = starts
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(joined_target[:_FUZZY_MAX_COMPARE_CHARS])
    best: tuple[float, int] = (0.0, -1)
    for i in candidates:
        if time.monotonic() > deadline:
            return None
        matcher.set_seq1("\n".join(loose_lines[i : i + width])[:_FUZZY_MAX_COMPARE_CHARS])
        if matcher.real_quick_ratio() <= best[0] or matcher.quick_ratio() <= best[0]:
            continue
        score = matcher.ratio()
        if score > best[0]:
            best = (score, i)
    if best[0] < 0.6 or best[1] < 0:
        return None
    i = best[1]
    return i + 1, min(i + width, i + _MAX_REGION_LINES), False


@dataclass(frozen=True, slots=True)
class Window:
    """The lines a span touches, with context either side, found without splitting the whole text."""

    first_line: int
    before: list[str]
    region: list[str]
    after: list[str]


def window(
    text: AnyStr, start: int, end: int, first_region_line: int, decode: Callable[[AnyStr], str], context: int = 3
) -> Window:
    """Lines of `text` touched by [start, end); `first_region_line` is the number of the line holding `start`."""
    if not text:
        return Window(1, [], [], [])  # an empty file has no line, not one empty line
    nl = _lit(text, "\n")
    region_start = text.rfind(nl, 0, start) + 1
    last = max(start, end - 1) if end > start else start
    region_end = text.find(nl, last)
    region_end = len(text) if region_end == -1 else region_end
    before_start = region_start
    for _ in range(context):
        if before_start == 0:
            break
        before_start = text.rfind(nl, 0, before_start - 1) + 1
    after_end = region_end
    for _ in range(context):
        if after_end >= len(text):
            break
        found = text.find(nl, after_end + 1)
        after_end = len(text) if found == -1 else found
    before = _lines(text, before_start, region_start, decode)[:-1] if region_start > before_start else []
    after = _lines(text, region_end + 1, after_end, decode) if after_end > region_end + 1 else []
    if after and after[-1] == "" and after_end == len(text) and text.endswith(nl):
        after.pop()  # the final newline ends the last line; it does not start another
    region = _lines(text, region_start, region_end, decode)
    return Window(first_region_line - len(before), before, region, after)


_LONG_LINE_UNITS = MAX_LINE_CHARS * 4 + 16
"""Enough of a line, in bytes or characters, to show its first MAX_LINE_CHARS characters."""


def _lines(text: AnyStr, start: int, end: int, decode: Callable[[AnyStr], str]) -> list[str]:
    """`text[start:end]` split at newlines and decoded, a long line cut before it is decoded or copied whole."""
    nl = _lit(text, "\n")
    lines: list[str] = []
    pos = start
    while True:
        stop = text.find(nl, pos, end)
        stop = end if stop == -1 else stop
        if stop - pos > _LONG_LINE_UNITS:
            # Bytes are counted, not characters, for an encoded file: "about" says so (Read's own wording).
            about = "about " if isinstance(text, bytes) else ""
            head = decode(text[pos : pos + _LONG_LINE_UNITS])[:MAX_LINE_CHARS]
            total = stop - pos
            lines.append(f"{head}{CUT_MARK}{about}{total - MAX_LINE_CHARS} of its {about}{total} characters hidden]")
        else:
            lines.append(decode(text[pos:stop]))
        if stop >= end:
            return lines
        pos = stop + 1


def snippet(win: Window) -> str:
    """Numbered lines around an edit, for the model to see what it did."""
    return number_lines([*win.before, *win.region, *win.after], win.first_line)


def structured_patch(old: Window, new: Window) -> dict[str, object]:
    """One hunk in the shape clients know (`oldStart`, `oldLines`, `newStart`, `newLines`, `lines`)."""
    # Lines are cut like Read's before they are prefixed: a 50 MB line would otherwise be copied at each step
    # and ride in the result's metadata.
    body = (
        [" " + clip_line(line) for line in old.before]
        + ["-" + clip_line(line) for line in old.region]
        + ["+" + clip_line(line) for line in new.region]
        + [" " + clip_line(line) for line in old.after]
    )
    return {
        "oldStart": old.first_line,
        "oldLines": len(old.before) + len(old.region) + len(old.after),
        "newStart": new.first_line,
        "newLines": len(new.before) + len(new.region) + len(new.after),
        "lines": [line.rstrip("\r") for line in body],
    }
