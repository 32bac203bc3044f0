"""What a recovered edit writes: new_string mapped onto the file's own text, never guessed.

Once a damaged old_string has been placed, new_string may carry the same damage (both were copied the same
way) or none (only old_string was). The two are told apart line by line. A line of new_string equal to its line
of old_string is unchanged, so the file's own line is written back, byte for byte. A changed line keeps the
file's text wherever it agrees with old_string, character by character. Indentation is the one thing to
decide: new_string was written either at old_string's indentation (shift it by the match's offset) or already
at the file's (write it as sent). Lines whose text is unchanged say which; when they disagree or say nothing,
both readings are plausible and the edit is refused with both shown.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from mcp_codetools.files.lookalikes import normalise, undo, units

WS = " \t\r\f\v"
_INDENT_CHARS = frozenset(" \t\f\u00a0\u2007\u202f\u200b\u200c\u200d\u2060\ufeff")
_MAX_LINE_ALIGN = 4000
"""Longer changed lines are not aligned character by character (the cost is quadratic): such an edit is refused."""

Reading = Literal["old", "file"]
"""new_string's indentation is old_string's (shift it), or already the file's (write it as sent)."""


@dataclass(frozen=True, slots=True)
class Frame:
    """How the match relates old_string to the file: the shift, the tab width it was measured in, the style."""

    delta: int
    tab: int
    use_tabs: bool
    at_line_start: bool
    loose: bool
    strip_trailing: bool
    base: tuple[int, int] | None
    """(old_string's, the file's) columns of the first line whose indentation was compared, if any."""
    undo: tuple[str, ...] = ()
    """Lookalike kinds only the copy has: new_string's own text gets them undone too (`lookalikes.undo`)."""


def columns(indent: str, tab: int) -> int:
    """The display column `indent` reaches, tabs stopping at multiples of `tab` (zero-width characters: none)."""
    col = 0
    for char in indent:
        if char == "\t":
            col = (col // tab + 1) * tab
        elif char not in "\u200b\u200c\u200d\u2060\ufeff":
            col += 1
    return col


def split_indent(line: str) -> tuple[str, str]:
    """(leading whitespace, the rest); no-break and zero-width spaces copied into indentation count as blanks."""
    end = 0
    while end < len(line) and line[end] in _INDENT_CHARS:
        end += 1
    return line[:end], line[end:]


def _key(line: str, loose: bool) -> str:
    return normalise(line, loose).strip(WS)


def _gaps(indices: list[int], size: int) -> list[int]:
    """Blank lines before each listed line, and after the last (indices ascending into `size` lines)."""
    gaps = [indices[0] if indices else size]
    gaps += [b - a - 1 for a, b in zip(indices, indices[1:], strict=False)]
    if indices:
        gaps.append(size - 1 - indices[-1])
    return gaps


@dataclass(frozen=True, slots=True)
class _Align:
    """new_string's non-blank lines against old_string's: which old line each pairs with, and if unchanged."""

    pair: dict[int, int]
    same: set[int]


def _align(old_keys: list[str], new_keys: list[str]) -> _Align:
    pair: dict[int, int] = {}
    same: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for d in range(j2 - j1):
                pair[j1 + d] = i1 + d
                if tag == "equal":
                    same.add(j1 + d)
    return _Align(pair, same)


def reading(
    region: list[str], old: list[str], new: list[str], pairs: list[tuple[int, int]], frame: Frame
) -> Reading | None:
    """Which indentation new_string was written at; None when both are plausible (or neither)."""
    if frame.delta == 0:
        return "old"  # the two readings are the same columns; only the style may differ
    old_nb = [o for o, _ in pairs]
    new_nb = [m for m, line in enumerate(new) if _key(line, frame.loose)]
    aligned = _align([_key(old[o], frame.loose) for o in old_nb], [_key(new[m], frame.loose) for m in new_nb])
    votes: set[Reading] = set()
    for s, t in aligned.pair.items():
        o, r = pairs[t]
        if s not in aligned.same or (o == 0 and not frame.at_line_start) or new_nb[s] == 0 and not frame.at_line_start:
            continue
        mine = columns(split_indent(new[new_nb[s]])[0], frame.tab)
        if mine == columns(split_indent(old[o])[0], frame.tab):
            votes.add("old")
        elif mine == columns(split_indent(region[r])[0], frame.tab):
            votes.add("file")
    if len(votes) == 1:
        return votes.pop()
    if votes or frame.base is None:
        return None
    first = next((m for m in new_nb if m > 0 or frame.at_line_start), None)
    if first is None:
        return "old"  # nothing of new_string is indented by this edit: both readings write the same
    mine = columns(split_indent(new[first])[0], frame.tab)
    if mine == frame.base[0]:
        return "old"
    return "file" if mine == frame.base[1] else None


def compose(
    region: list[str],
    old: list[str],
    new: list[str],
    pairs: list[tuple[int, int]],
    frame: Frame,
    how: Reading,
    blank_late: bool = True,
) -> str | None:
    """new_string as it should be written over `region`, or None when it cannot be mapped safely.

    `region` is the matched text's lines, `old` and `new` the strings' lines (no line-number prefixes, LF), and
    `pairs` each non-blank line of `old` with its line of `region`. Where old_string lost blank lines and
    new_string adds lines at that spot, the file's blank lines go after the added lines when `blank_late`,
    else before them (the caller composes both; if they differ, it cannot tell which was meant).
    """
    new_nb = [m for m, line in enumerate(new) if _key(line, frame.loose)]
    aligned = _align([_key(old[o], frame.loose) for o, _ in pairs], [_key(new[m], frame.loose) for m in new_nb])
    old_gaps = _gaps([o for o, _ in pairs], len(old))
    new_gaps = _gaps(new_nb, len(new))
    out: list[str] = []
    bounds_new = [-1, *new_nb, len(new)]
    bounds_region = [-1, *(r for _, r in pairs), len(region)]
    lost, dropped = _lost_blanks(aligned, old_gaps, new_gaps, bounds_region, blank_late)

    def paired(s: int) -> int | None:
        if s < len(new_nb):
            return aligned.pair.get(s)
        last_ok = not new_nb and not pairs or aligned.pair.get(len(new_nb) - 1) == len(pairs) - 1
        return len(pairs) if last_ok else None

    for s in range(len(new_nb) + 1):
        if s in lost:
            out += region[bounds_region[lost[s]] + 1 : bounds_region[lost[s] + 1]]
        t = paired(s)
        kept = t is not None and (s == 0 and t == 0 or s > 0 and t > 0 and paired(s - 1) == t - 1)
        if kept and t is not None and new_gaps[s] == old_gaps[t]:
            out += region[bounds_region[t] + 1 : bounds_region[t + 1]]
        elif s not in dropped:
            blanks = new[bounds_new[s] + 1 : bounds_new[s + 1]]
            out += [line.rstrip(WS) if frame.strip_trailing else line for line in blanks]
        if s == len(new_nb):
            break
        m = new_nb[s]
        o, r = pairs[t] if t is not None else (None, None)
        line = _line(new[m], old[o] if o is not None else None, region[r] if r is not None else None, m, frame, how)
        if line is None:
            return None
        out.append(line)
    return "\n".join(out)


def _lost_blanks(
    aligned: _Align, old_gaps: list[int], new_gaps: list[int], bounds_region: list[int], late: bool
) -> tuple[dict[int, int], set[int]]:
    """Blank lines old_string got wrong at a spot where new_string inserts lines, and new_string copied.

    Returns where the file's own blank lines go (a non-blank line of new_string, mapped to the old_string line
    whose gap in the file goes before it) and which of new_string's gaps are dropped as the copied damage.
    """
    placed: dict[int, int] = {}
    dropped: set[int] = set()
    previous = None
    for s in sorted(aligned.pair):
        t = aligned.pair[s]
        if previous is not None and t > 0 and aligned.pair[previous] == t - 1 and previous < s - 1:
            file_gap = bounds_region[t + 1] - bounds_region[t] - 1
            stretch = range(previous + 1, s + 1)
            if old_gaps[t] != file_gap and sum(new_gaps[x] for x in stretch) == old_gaps[t]:
                dropped.update(stretch)
                if file_gap:
                    placed[s if late else previous + 1] = t
        previous = s
    return placed, dropped


def _line(mine: str, old: str | None, file: str | None, index: int, frame: Frame, how: Reading) -> str | None:
    if old is not None and file is not None and mine == old:
        return file
    partial = index == 0 and not frame.at_line_start
    indent, body = ("", mine) if partial else split_indent(mine)
    if not partial:
        indent_or_none = _indent(indent, file, frame, how)
        if indent_or_none is None:
            return None
        indent = indent_or_none
    if old is None or file is None:
        body = undo(body, frame.undo)
        return indent + (body.rstrip(WS) if frame.strip_trailing else body)
    old_body = old if partial else split_indent(old)[1]
    file_body = file if partial else split_indent(file)[1]
    mapped = _map_body(old_body, body, file_body, frame)
    return None if mapped is None else indent + mapped


def _indent(indent: str, file: str | None, frame: Frame, how: Reading) -> str | None:
    col = columns(indent, frame.tab) + (frame.delta if how == "old" else 0)
    if col < 0:
        return None
    if file is not None:
        theirs = split_indent(file)[0]
        if columns(theirs, frame.tab) == col:
            return theirs
    if frame.use_tabs:
        return "\t" * (col // frame.tab) + " " * (col % frame.tab)
    if how == "file" or (frame.delta == 0 and "\t" not in indent):
        return indent if "\t" not in indent else " " * col
    return " " * col


def _map_body(old: str, new: str, file: str, frame: Frame) -> str | None:
    """`new`'s text with every stretch it shares with `old` taken from `file` (which `old` matched)."""
    old_core, new_core, file_core = old.rstrip(WS), new.rstrip(WS), file.rstrip(WS)
    # Trailing blanks are unreliable once the copy lost or added some: a changed line then gets none.
    tail = file[len(file_core) :] if new[len(new_core) :] == old[len(old_core) :] else new[len(new_core) :]
    if frame.strip_trailing:
        tail = ""
    if len(old_core) > _MAX_LINE_ALIGN or len(new_core) > _MAX_LINE_ALIGN:
        return None
    old_plain, _, old_back = units(old_core, frame.loose)
    file_plain, file_at, _ = units(file_core, frame.loose)
    if old_plain != file_plain:
        return None
    pieces: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_core, new_core, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            pieces.append(undo(new_core[j1:j2], frame.undo))
            continue
        # A stretch may start or end inside one unit (`&` of `&amp;` kept, `amp;` deleted): its edges come
        # from new_string, the rest from the file.
        a, b = i1, i2
        while a < b and not _boundary(old_back, file_at, a):
            a += 1
        while b > a and not _boundary(old_back, file_at, b):
            b -= 1
        if a == b:
            pieces.append(undo(new_core[j1:j2], frame.undo))
            continue
        head, rest = new_core[j1 : j1 + a - i1], new_core[j1 + b - i1 : j2]
        file_piece = file_core[file_at[old_back[a]] : file_at[old_back[b]]]
        pieces += [undo(head, frame.undo), file_piece, undo(rest, frame.undo)]
    return "".join(pieces) + tail


def _boundary(old_back: list[int], file_at: list[int], index: int) -> bool:
    """Whether raw index `index` of old_string's line starts a unit there and at the same place in the file."""
    plain = old_back[index]
    return plain >= 0 and file_at[plain] >= 0


def match_quotes(new: str, region: str) -> str:
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
