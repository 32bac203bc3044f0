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

from mcp_codetools.files import lookalikes, recovered_text
from mcp_codetools.files.lookalikes import normalise, units
from mcp_codetools.files.recovered_text import columns

_PREFIX = re.compile(r"^ *\d+(?:\t|\u2192)")
"""Read's `12<TAB>` and Claude Code's `    12→` line-number prefixes."""
_CURLY_CHARS = "\u2018\u2019\u201c\u201d"
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
    reindented: bool = False
    """new_string's indentation was changed to fit the file (else it was written as sent)."""
    inside_line: bool = False
    """The match is part of one line that holds more text."""


@dataclass(frozen=True, slots=True)
class Ambiguous:
    """Several regions match after normalising: nothing may be changed; the model is shown where."""

    regions: tuple[tuple[int, int], ...]
    kinds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unsure:
    """One region matches, but new_string can be read two ways that write different text: nothing is changed."""

    first_line: int
    last_line: int
    kinds: tuple[str, ...]
    question: str
    """What could not be told, as the refusal says it."""
    readings: tuple[tuple[str, str], tuple[str, str]]
    """The two plausible texts, each with how it was read."""


@dataclass(frozen=True, slots=True)
class _Lines:
    raw: list[str]
    starts: list[int]
    indent: list[str]
    """Leading whitespace of each line in its plain form."""
    content: list[str]
    """Each line in its plain form (straight quotes; lookalikes undone when loose), stripped of whitespace."""
    index: list[int] | None = None
    """For a view of the non-blank lines only: each one's index among all lines."""

    def at(self, i: int) -> int:
        return i if self.index is None else self.index[i]


def _split(text: str, loose: bool) -> _Lines:
    raw = text.split("\n")
    starts: list[int] = []
    indent: list[str] = []
    content: list[str] = []
    offset = 0
    for line in raw:
        starts.append(offset)
        offset += len(line) + 1
        plain = normalise(line, loose) if loose or not line.isascii() else line
        body = plain.lstrip(" \t\f")
        indent.append(plain[: len(plain) - len(body)])
        content.append(body.rstrip(_WS))
    return _Lines(raw, starts, indent, content)


def _non_blank(lines: _Lines) -> _Lines:
    keep = [i for i, c in enumerate(lines.content) if c]
    return _Lines(
        [lines.raw[i] for i in keep],
        [lines.starts[i] for i in keep],
        [lines.indent[i] for i in keep],
        [lines.content[i] for i in keep],
        keep,
    )


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


@dataclass(frozen=True, slots=True)
class _Search:
    """old_string and new_string as prepared for one pass, and what the pass may ignore."""

    old_lines: list[str]
    new_lines: list[str]
    kinds: list[str]
    stated: int | None
    ends_line: bool
    new_ends_line: bool


def _prepare(old: str, new: str, text: str) -> _Search | None:
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
    new_ends_line = False
    if ends_line:
        old_lines.pop()
        if len(new_lines) > 1 and new_lines[-1] == "":
            new_lines.pop()
            new_ends_line = True
    if len(old_lines) > MAX_OLD_LINES or (old_lines[0] == "" and len(old_lines) < 2):
        return None
    return _Search(old_lines, new_lines, kinds, stated, ends_line, new_ends_line)


def recover(text: str, old: str, new: str) -> Recovered | Ambiguous | Unsure | None:
    """Where `old` (which is not in `text` literally) matches after safe normalisations, or None.

    The passes go from the most literal reading to the loosest, and the first that finds anything decides:
    quotes and whitespace; then lookalike characters (no-break and zero-width spaces, dashes, entities,
    escapes); then blank lines added or missing. Each pass tries exact indentation, then one uniform shift.
    """
    if len(text) > MAX_TEXT_CHARS or not old.strip():
        return None
    search = _prepare(old, new, text)
    if search is None:
        return None
    old_text = "\n".join(search.old_lines)
    loose = lookalikes.present(old_text) or lookalikes.present(text)
    passes = [(False, False)] + ([(True, False)] if loose else [])
    if sum(1 for line in search.old_lines if line.strip()) >= 2:
        passes.append((loose, True))
    for loose_pass, blanks in passes:
        found = _pass(text, search, old_text, loose_pass, blanks)
        if found is not None:
            return found
    return None


def _pass(
    text: str, search: _Search, old_text: str, loose: bool, blanks: bool
) -> Recovered | Ambiguous | Unsure | None:
    file = _split(text, loose)
    want = _split(old_text, loose)
    ends_line = search.ends_line
    if blanks:
        if want.content[-1] == "" and len(want.content) > 1:
            ends_line = True  # blank lines ending old_string: it ends at a line end, whatever follows
        file, want = _non_blank(file), _non_blank(want)
        if len(want.raw) < 2:
            return None
    # A first line with leading whitespace starts at a line start; one without may start mid-line (an
    # empty one: at the end of the line before).
    at_line_start = want.indent[0] != ""
    kinds = list(search.kinds)
    for flexible in (False, True):
        found = _candidates(file, want, at_line_start=at_line_start, ends_line=ends_line, flexible=flexible)
        if not found:
            continue
        how = list(kinds)
        if flexible:
            how += _indent_kinds(file, want, found[0], at_line_start=at_line_start)
        elif search.stated is not None and len(found) == 1 and file.at(found[0].line) + 1 != search.stated:
            # The prefixes name another line: if old_string matches there with its indentation shifted, the
            # exact-indentation match elsewhere is only a guess, so neither is taken.
            there = _candidates(file, want, at_line_start=at_line_start, ends_line=ends_line, flexible=True)
            found += [c for c in there if file.at(c.line) + 1 == search.stated]
            if len(found) > 1:
                how += _indent_kinds(file, want, found[1], at_line_start=at_line_start)
        if len(found) > 1:
            k = len(want.raw)
            regions = tuple((file.at(c.line) + 1, file.at(c.line + k - 1) + 1) for c in found)
            span = _span(text, file, want, found[0], at_line_start, ends_line, loose)
            if span is not None:
                how += _differences(span[2], search.old_lines, span[3], ends_line)
            return Ambiguous(regions, tuple(dict.fromkeys(how + (["blank lines"] if blanks else []))))
        return _build(text, file, want, found[0], search, how, at_line_start, ends_line, loose, blanks)
    return None


@dataclass(frozen=True, slots=True)
class _Candidate:
    line: int
    pos: int
    """For a one-line old_string: where in the line's content it starts."""
    delta: int
    tab: int


def _cuts_word(content: str, pos: int, target: str) -> bool:
    """Whether a one-line match at `pos` starts or ends inside a word (`x = 1` inside `max = 1`)."""
    end = pos + len(target)
    before = pos > 0 and _word(content[pos - 1]) and _word(target[0])
    after = end < len(content) and _word(content[end]) and _word(target[-1])
    return before or after


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


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
                if (
                    (not at_line_start or pos == 0)
                    and (not ends_line or pos + len(target) == len(content))
                    and not _cuts_word(content, pos, target)
                ):
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
        deltas = {columns(file.indent[i + j], tab) - columns(want.indent[j], tab) for j in lines}
        if len(deltas) == 1:
            return deltas.pop(), tab
    return None


def _differences(region: list[str], old: list[str], pairs: list[tuple[int, int]], ends_line: bool) -> list[str]:
    """Which damage the match undid, besides prefixes and indentation: quote style, trailing whitespace."""
    kinds: list[str] = []
    region_text, old_text = "\n".join(region), "\n".join(old)
    if sum(region_text.count(q) for q in _CURLY_CHARS) != sum(old_text.count(q) for q in _CURLY_CHARS):
        kinds.append("quote style")
    trailing = False
    for n, (o, r) in enumerate(pairs):
        mine, theirs = old[o], region[r]
        whole = n < len(pairs) - 1 or ends_line
        if whole:
            trailing |= theirs[len(theirs.rstrip(_WS)) :] != mine[len(mine.rstrip(_WS)) :]
        else:
            trailing |= mine != mine.rstrip(_WS) and theirs == theirs.rstrip(_WS)
    if trailing:
        kinds.append("trailing whitespace")
    return kinds + lookalikes.kinds_between(region_text, old_text)


def _indent_kinds(file: _Lines, want: _Lines, c: _Candidate, *, at_line_start: bool) -> list[str]:
    lines = _compared(want, at_line_start=at_line_start)
    kinds = []
    if any(("\t" in file.indent[c.line + j]) != ("\t" in want.indent[j]) for j in lines):
        kinds.append("tabs vs spaces")
    if c.delta:
        kinds.append("indentation")
    return kinds or ["indentation"]


def _raw_offset(line: str, plain_index: int, loose: bool) -> int | None:
    """Where the plain form's `plain_index` falls in the raw line (None: inside one unit, such as `&lt;`)."""
    if not loose and (line.isascii() or len(normalise(line, False)) == len(line)):
        return plain_index
    at = units(line, loose)[1]
    return at[plain_index] if 0 <= plain_index < len(at) and at[plain_index] >= 0 else None


def _uses_tabs(text: str, region: list[str]) -> bool:
    """The file's indentation style: the region's indented lines decide, else the whole file's."""
    # One leading space is alignment (a JSDoc comment's ` * `), not indentation.
    tabs = sum(line.startswith("\t") for line in region)
    spaces = sum(line.startswith("  ") and line.strip() != "" for line in region)
    if tabs != spaces:
        return tabs > spaces
    return text.count("\n\t") > text.count("\n  ")


def _span(
    text: str, file: _Lines, want: _Lines, c: _Candidate, at_line_start: bool, ends_line: bool, loose: bool
) -> tuple[int, int, list[str], list[tuple[int, int]]] | None:
    """[start, end) of a candidate in the text, its lines, and each non-blank old_string line's line in it."""
    k = len(want.raw)
    first = file.at(c.line)
    first_raw = file.raw[c.line]
    first_start = file.starts[c.line]
    if at_line_start:
        start: int | None = first_start
    elif not want.raw[0]:
        start = first_start + len(first_raw.rstrip("\r"))
    else:
        offset = _raw_offset(first_raw, len(file.indent[c.line]) + c.pos, loose)
        start = None if offset is None else first_start + offset
    if ends_line:
        end: int | None = min(len(text), file.starts[c.line + k - 1] + len(file.raw[c.line + k - 1]) + 1)
    else:
        stop = len(file.indent[c.line + k - 1]) + (c.pos if k == 1 else 0) + len(want.content[-1])
        offset = _raw_offset(file.raw[c.line + k - 1], stop, loose)
        end = None if offset is None else file.starts[c.line + k - 1] + offset
    if start is None or end is None:
        return None
    piece = text[start:end]
    if ends_line and piece.endswith("\n"):
        piece = piece[:-1]
    region = [line.rstrip("\r") for line in piece.split("\n")]
    if want.index is not None:  # blank lines ignored: pair the non-blank ones
        pairs = [(o, file.at(c.line + t) - first) for t, o in enumerate(want.index)]
    else:
        pairs = [(o, o) for o, line in enumerate(want.content) if line]
    return start, end, region, pairs


def _build(
    text: str,
    file: _Lines,
    want: _Lines,
    c: _Candidate,
    search: _Search,
    how: list[str],
    at_line_start: bool,
    ends_line: bool,
    loose: bool,
    blanks: bool,
) -> Recovered | Unsure | None:
    span = _span(text, file, want, c, at_line_start, ends_line, loose)
    if span is None:
        return None
    start, end, region, pairs = span
    k = len(want.raw)
    first, last = file.at(c.line), file.at(c.line + k - 1)
    first_raw, first_start = file.raw[c.line], file.starts[c.line]
    lead: tuple[int, int] | None = None
    if (
        not at_line_start
        and want.raw[0]
        and start > first_start
        and not text[first_start:start].strip()
        and search.new_lines[0][:1] in (" ", "\t")
    ):
        # old_string's first line lost its indentation but new_string's has one: the region takes the whole
        # line, so new_string's first line can be read at the file's indentation (or shifted like the rest).
        lead = (0, columns(file.indent[c.line], c.tab))
        region[0] = text[first_start:start] + region[0]
        start, at_line_start = first_start, True
    piece = text[start:end]
    old = search.old_lines
    kinds = list(dict.fromkeys(how + _differences(region, old, pairs, ends_line) + (["blank lines"] if blanks else [])))
    frame = _frame(text, file, want, c, region, search, kinds, at_line_start, loose, lead)
    reading = recovered_text.reading(region, old, search.new_lines, pairs, frame)
    tail = "\n" if search.new_ends_line else ""
    shown = tuple(kinds)
    if reading is None:
        sent = recovered_text.compose(region, old, search.new_lines, pairs, frame, "file")
        shifted = recovered_text.compose(region, old, search.new_lines, pairs, frame, "old")
        if sent is None or shifted is None:
            return None
        if sent != shifted:
            question = "new_string's indentation fits both the file and old_string, so it is unclear which was meant"
            pair = (("Written as sent", sent + tail), ("Re-indented like old_string", shifted + tail))
            return Unsure(first + 1, last + 1, shown, question, pair)
        reading = "file"
    new = recovered_text.compose(region, old, search.new_lines, pairs, frame, reading)
    early = recovered_text.compose(region, old, search.new_lines, pairs, frame, reading, blank_late=False)
    if new is None or early is None:
        return None
    if new != early:
        question = "old_string lacks a blank line where new_string adds lines, so it is unclear on which side it goes"
        pair = (("With the blank line after the added lines", new + tail), ("Before them", early + tail))
        return Unsure(first + 1, last + 1, shown, question, pair)
    if "quote style" in kinds:
        new = recovered_text.match_quotes(new, piece)
    sent_as_is = "\n".join(search.new_lines)
    line_end = first_start + len(first_raw.rstrip("\r"))
    inside = k == 1 and bool(text[first_start:start].strip() or text[end:line_end].strip())
    reindented = frame.delta != 0 and reading == "old" or (frame.use_tabs and "\t" not in sent_as_is and "\t" in new)
    return Recovered(start, end, new + tail, shown, first + 1, last + 1, reindented, inside)


def _frame(
    text: str,
    file: _Lines,
    want: _Lines,
    c: _Candidate,
    region: list[str],
    search: _Search,
    kinds: list[str],
    at_line_start: bool,
    loose: bool,
    lead: tuple[int, int] | None,
) -> recovered_text.Frame:
    compared = _compared(want, at_line_start=at_line_start)
    delta, tab = c.delta, c.tab
    base: tuple[int, int] | None = lead
    if lead is not None:
        if len(want.raw) == 1 or not compared:
            delta = lead[1]
    elif compared:
        j = compared[0]
        base = (columns(want.indent[j], tab), columns(file.indent[c.line + j], tab))
    elif len(want.raw) == 1 and c.pos == 0 and file.indent[c.line] and len(search.new_lines) > 1:
        # A one-line old_string without indentation matched after the line's own: new_string's further
        # lines are at column 0 of old_string's reading, or already at the file's.
        base = (0, columns(file.indent[c.line], tab))
        delta = base[1]
    return recovered_text.Frame(
        delta=delta,
        tab=tab,
        use_tabs=_uses_tabs(text, region),
        at_line_start=at_line_start,
        loose=loose,
        strip_trailing="trailing whitespace" in kinds,
        base=base,
        undo=lookalikes.copy_only("\n".join(region), "\n".join(search.old_lines)) if loose else (),
    )


def body_span(text: str, rec: Recovered, convert: Callable[[str], Any]) -> tuple[int, int] | None:
    """The recovered region as offsets into the body matching works on (bytes for most files, else text)."""
    head, part = convert(text[: rec.start]), convert(text[rec.start : rec.end])
    if head is None or part is None:
        return None
    return len(head), len(head) + len(part)
