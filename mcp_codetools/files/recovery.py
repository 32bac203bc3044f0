"""Finding old_string when it is not in the file as written: undo the damage copying does, or say where.

Models copy old_string from Read's output, from memory or from another file, and the copy picks up
damage: Read's `N<TAB>` prefixes, lost trailing spaces, curly quotes, CRLF, tabs turned into spaces, the
whole block indented one level off. Each of these is undone on both sides, line by line, and the edit is
made only where exactly one region of the file matches. Two passes keep the reading literal where it can
be: the first keeps indentation exact, the second lets it differ by one uniform shift (in columns, for
some tab width) and re-indents new_string to match. Nothing else is forgiven: a changed word is a miss.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_codetools.files import matching
from mcp_codetools.files.text import number_lines

_PREFIX = re.compile(r"^ *\d+(?:\t|\u2192)")
"""Read's `12<TAB>` and Claude Code's `    12→` line-number prefixes."""
_CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_WS = " \t\r\f\v"
_TAB_WIDTHS = (4, 8, 2)
MAX_TEXT_CHARS = 32 * 1024 * 1024
"""Larger files are not searched again: the plain "not found" answer is given."""
MAX_OLD_LINES = 2000


@dataclass(frozen=True, slots=True)
class Recovered:
    """One region matched after normalising: [start, end) offsets into the text, and new_string to write."""

    start: int
    end: int
    new: str
    """new_string as it should be written, with LF line endings (the caller gives it the file's own)."""
    kinds: tuple[str, ...]
    first_line: int
    last_line: int


@dataclass(frozen=True, slots=True)
class Ambiguous:
    """Several regions match after normalising: nothing may be changed; the model is shown where."""

    regions: tuple[tuple[int, int], ...]
    kinds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Lines:
    raw: list[str]
    starts: list[int]
    indent: list[str]
    content: list[str]
    """Each line stripped of leading and trailing whitespace, quotes made straight (length kept)."""


def _split(text: str) -> _Lines:
    raw = text.split("\n")
    starts: list[int] = []
    indent: list[str] = []
    content: list[str] = []
    offset = 0
    for line in raw:
        starts.append(offset)
        offset += len(line) + 1
        body = line.lstrip(" \t\f")
        indent.append(line[: len(line) - len(body)])
        content.append(body.rstrip(_WS).translate(_CURLY))
    return _Lines(raw, starts, indent, content)


def _columns(indent: str, tab: int) -> int:
    col = 0
    for char in indent:
        col = (col // tab + 1) * tab if char == "\t" else col + 1
    return col


def _strip_prefixes(lines: list[str], *, numbered: bool) -> tuple[list[str], int | None] | None:
    """`lines` without line-number prefixes, and the line number they give the first line.

    None unless every non-empty line has a prefix (in sequence, if `numbered`); the number is None unless
    `numbered`.
    """
    found = [_PREFIX.match(line) for line in lines]
    if not any(found) or any(m is None and line.strip() for m, line in zip(found, lines, strict=True)):
        return None
    stated = None
    if numbered:
        numbers = [int(m.group(0).strip(" \t\u2192")) for m in found if m is not None]
        if any(b != a + 1 for a, b in zip(numbers, numbers[1:], strict=False)):
            return None
        stated = numbers[0] - next(j for j, m in enumerate(found) if m is not None)
    return [line[m.end() :] if m else line for m, line in zip(found, lines, strict=True)], stated


def recover(text: str, old: str, new: str) -> Recovered | Ambiguous | None:
    """Where `old` (which is not in `text` literally) matches after safe normalisations, or None."""
    if len(text) > MAX_TEXT_CHARS or not old.strip():
        return None
    old_lines = old.replace("\r\n", "\n").split("\n")
    new_lines = new.replace("\r\n", "\n").split("\n")
    kinds: list[str] = []
    stated: int | None = None
    stripped = _strip_prefixes(old_lines, numbered=True)
    if stripped is not None:
        old_lines, stated = stripped
        kinds.append("line-number prefixes")
        new_stripped = _strip_prefixes(new_lines, numbered=False)
        if new_stripped is not None:
            new_lines = new_stripped[0]
    if "\r" in old and "\r\n" not in text:
        kinds.append("line endings")
    ends_line = len(old_lines) > 1 and old_lines[-1] == ""
    if ends_line:
        old_lines.pop()
    if len(old_lines) > MAX_OLD_LINES or (old_lines[0] == "" and len(old_lines) < 2):
        return None
    file = _split(text)
    want = _split("\n".join(old_lines))
    # A first line with leading whitespace starts at a line start; one without may start mid-line (an
    # empty one: at the end of the line before).
    at_line_start = want.indent[0] != ""
    for flexible in (False, True):
        found = _candidates(file, want, at_line_start=at_line_start, ends_line=ends_line, flexible=flexible)
        if not found:
            continue
        how = kinds + _differences(file, want, found[0], at_line_start=at_line_start, ends_line=ends_line)
        if flexible:
            how += _indent_kinds(file, want, found[0], at_line_start=at_line_start)
        elif stated is not None and len(found) == 1 and found[0].line + 1 != stated:
            # The prefixes name another line: if old_string matches there with its indentation shifted, the
            # exact-indentation match elsewhere is only a guess, so neither is taken.
            there = _candidates(file, want, at_line_start=at_line_start, ends_line=ends_line, flexible=True)
            found += [c for c in there if c.line + 1 == stated]
            if len(found) > 1:
                how += _indent_kinds(file, want, found[1], at_line_start=at_line_start)
        if len(found) > 1:
            k = len(want.raw)
            return Ambiguous(tuple((c.line + 1, c.line + k) for c in found), tuple(dict.fromkeys(how)))
        return _build(text, file, want, found[0], new_lines, tuple(dict.fromkeys(how)), at_line_start, ends_line)
    return None


@dataclass(frozen=True, slots=True)
class _Candidate:
    line: int
    pos: int
    """For a one-line old_string: where in the line's content it starts."""
    delta: int
    tab: int


def _candidates(
    file: _Lines, want: _Lines, *, at_line_start: bool, ends_line: bool, flexible: bool
) -> list[_Candidate]:
    k = len(want.raw)
    n = len(file.raw)
    found: list[_Candidate] = []
    if k == 1:
        target = want.content[0]
        for i, content in enumerate(file.content):
            pos = content.find(target)
            while pos != -1:
                if (not at_line_start or pos == 0) and (not ends_line or pos + len(target) == len(content)):
                    fit = _indent_fit(file, want, i, at_line_start=at_line_start, flexible=flexible)
                    if fit is not None:
                        found.append(_Candidate(i, pos, *fit))
                pos = content.find(target, pos + max(1, len(target)))
        return found
    middle = range(1, k - 1)
    anchor = max(middle, key=lambda j: len(want.content[j]), default=None)
    if anchor is not None and want.content[anchor]:
        key = want.content[anchor]
        starts = [i - anchor for i, c in enumerate(file.content) if c == key]
    else:
        starts = list(range(n))
    first, last = want.content[0], want.content[-1]
    for i in starts:
        if i < 0 or i + k > n:
            continue
        head = file.content[i]
        if not (head == first if at_line_start else head.endswith(first)):
            continue
        tail = file.content[i + k - 1]
        if not (tail == last if ends_line else tail.startswith(last)):
            continue
        if any(file.content[i + j] != want.content[j] for j in middle):
            continue
        fit = _indent_fit(file, want, i, at_line_start=at_line_start, flexible=flexible)
        if fit is not None:
            found.append(_Candidate(i, len(head) - len(first), *fit))
    return found


def _compared(want: _Lines, *, at_line_start: bool) -> list[int]:
    """The lines of old_string whose indentation means something: non-blank, and starting at a line start."""
    return [j for j, c in enumerate(want.content) if c and (j > 0 or at_line_start)]


def _indent_fit(file: _Lines, want: _Lines, i: int, *, at_line_start: bool, flexible: bool) -> tuple[int, int] | None:
    """(delta, tab width) that maps old_string's indentation onto the file's at line `i`, or None."""
    lines = _compared(want, at_line_start=at_line_start)
    if not flexible:
        return (0, 4) if all(file.indent[i + j] == want.indent[j] for j in lines) else None
    if not lines:
        return None  # nothing to shift: the first pass already decided
    for tab in _TAB_WIDTHS:
        deltas = {_columns(file.indent[i + j], tab) - _columns(want.indent[j], tab) for j in lines}
        if len(deltas) == 1:
            return deltas.pop(), tab
    return None


def _differences(file: _Lines, want: _Lines, c: _Candidate, *, at_line_start: bool, ends_line: bool) -> list[str]:
    """Which damage the match undid, besides prefixes and indentation: quote style, trailing whitespace."""
    kinds: list[str] = []
    k = len(want.raw)
    quotes = trailing = False
    for j in range(k):
        line = file.raw[c.line + j].rstrip("\r")
        mine = want.raw[j].rstrip("\r")
        body = line.strip(_WS)
        if j == 0 and k == 1:
            body = body[c.pos : c.pos + len(want.content[0])]
        elif j == 0 and not at_line_start:
            body = body[len(body) - len(want.content[0]) :]
        elif j == k - 1 and not ends_line:
            body = body[: len(want.content[-1])]
        quotes |= body != mine.strip(_WS)
        whole = j < k - 1 or ends_line
        if whole and line[len(line.rstrip(_WS)) :] != mine[len(mine.rstrip(_WS)) :]:
            trailing = True
        elif not whole and mine != mine.rstrip(_WS):
            # A last line ending mid-line matched without its trailing blanks: did the file have them there?
            start = c.pos if k == 1 else 0
            rest = line.lstrip(_WS)[start + len(want.content[j]) :]
            trailing |= not rest.startswith(mine[len(mine.rstrip(_WS)) :])
    if quotes:
        kinds.append("quote style")
    if trailing:
        kinds.append("trailing whitespace")
    return kinds


def _indent_kinds(file: _Lines, want: _Lines, c: _Candidate, *, at_line_start: bool) -> list[str]:
    lines = _compared(want, at_line_start=at_line_start)
    kinds = []
    if any(("\t" in file.indent[c.line + j]) != ("\t" in want.indent[j]) for j in lines):
        kinds.append("tabs vs spaces")
    if c.delta:
        kinds.append("indentation")
    return kinds or ["indentation"]


def _build(
    text: str,
    file: _Lines,
    want: _Lines,
    c: _Candidate,
    new_lines: list[str],
    kinds: tuple[str, ...],
    at_line_start: bool,
    ends_line: bool,
) -> Recovered | None:
    k = len(want.raw)
    first_start = file.starts[c.line]
    first_indent = len(file.indent[c.line])
    start = first_start if at_line_start else first_start + first_indent + c.pos
    if not want.raw[0]:
        start = first_start + len(file.raw[c.line].rstrip("\r"))
    last = c.line + k - 1
    if ends_line:
        end = min(len(text), file.starts[last] + len(file.raw[last]) + 1)
    elif k == 1:
        end = first_start + first_indent + c.pos + len(want.content[0])
    else:
        end = file.starts[last] + len(file.indent[last]) + len(want.content[-1])
    new = "\n".join(new_lines)
    if "indentation" in kinds or "tabs vs spaces" in kinds:
        reindented = _reindent(new_lines, file, want, c, at_line_start=at_line_start)
        if reindented is None:
            return None
        new = reindented
    if "quote style" in kinds:
        new = _match_quotes(new, text[start:end])
    if "trailing whitespace" in kinds:
        # The copy added or lost it: new_string's own trailing spaces are as unreliable as old_string's.
        new = "\n".join(line.rstrip(" \t") for line in new.split("\n"))
    return Recovered(start, end, new, kinds, c.line + 1, last + 1)


def _reindent(new_lines: list[str], file: _Lines, want: _Lines, c: _Candidate, *, at_line_start: bool) -> str | None:
    """new_string shifted by the match's delta, written in the file's indentation style (None if it cannot be)."""
    compared = _compared(want, at_line_start=at_line_start)
    use_tabs = sum(file.indent[c.line + j].startswith("\t") for j in compared) * 2 > len(compared)
    out: list[str] = []
    for index, line in enumerate(new_lines):
        if index == 0 and not at_line_start:
            out.append(line)
            continue
        body = line.lstrip(" \t\f")
        if not body.strip(_WS):
            out.append("")
            continue
        col = _columns(line[: len(line) - len(body)], c.tab) + c.delta
        if col < 0:
            return None
        indent = "\t" * (col // c.tab) + " " * (col % c.tab) if use_tabs else " " * col
        out.append(indent + body)
    return "\n".join(out)


def _match_quotes(new: str, region: str) -> str:
    """new_string in the region's quote style, for each quote kind the region writes one way only."""
    for straight, left, right in (('"', "\u201c", "\u201d"), ("'", "\u2018", "\u2019")):
        curly = left in region or right in region
        if curly and straight not in region:
            new = _curl(new, straight, left, right)
        elif not curly and straight in region:
            new = new.replace(left, straight).replace(right, straight)
    return new


def _curl(text: str, straight: str, left: str, right: str) -> str:
    out = []
    for index, char in enumerate(text):
        if char != straight:
            out.append(char)
            continue
        before = text[index - 1] if index else " "
        opening = before.isspace() or before in "([{\u2014-"
        out.append(left if opening else right)
    return "".join(out)


def body_span(text: str, rec: Recovered, convert: Callable[[str], Any]) -> tuple[int, int] | None:
    """The recovered region as offsets into the body matching works on (bytes for most files, else text)."""
    head, part = convert(text[: rec.start]), convert(text[rec.start : rec.end])
    if head is None or part is None:
        return None
    return len(head), len(head) + len(part)


def _join(kinds: tuple[str, ...]) -> str:
    if not kinds:  # every normalisation names itself; this only keeps a missed one from failing the call
        return "whitespace"
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]


def _lines(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def applied_note(rec: Recovered) -> str:
    """What the result says when an edit was placed by normalising."""
    note = (
        f"Note: old_string was not in the file as written; it matched {_lines(rec.first_line, rec.last_line)} "
        f"once, ignoring {_join(rec.kinds)}, and the edit was made there."
    )
    if "indentation" in rec.kinds or "tabs vs spaces" in rec.kinds:
        note += " new_string was re-indented to match."
    return note


def miss_detail(text: str, found: Recovered | Ambiguous) -> str:
    """The part of a "not found" answer that says where old_string nearly is."""
    if isinstance(found, Ambiguous):
        shown = [_lines(a, b) for a, b in found.regions[:10]]
        more = f" and {len(found.regions) - 10} more" if len(found.regions) > 10 else ""
        return (
            f"Ignoring {_join(found.kinds)}, it matches {len(found.regions)} places: "
            f"{', '.join(shown)}{more}. Nothing was changed. Add surrounding lines to old_string so it is unique, "
            "copying them exactly from Read."
        )
    lines = text.split("\n")[found.first_line - 1 : min(found.last_line, found.first_line + 29)]
    return (
        f"Ignoring {_join(found.kinds)}, it matches {_lines(found.first_line, found.last_line)}:\n"
        f"{number_lines(lines, found.first_line)}\nCopy the exact text from these lines into old_string."
    )


def not_found(text: str, old: str, path: str, found: Recovered | Ambiguous | None) -> str:
    """The whole "not found" answer: where old_string nearly is, or the closest region of the file."""
    if found is None:
        return matching.not_found_message(text, old, path)
    return f"{matching.not_found_head(old, path)}\n{miss_detail(text, found)}"
