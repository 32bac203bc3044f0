"""Text that prints alike but is stored differently: what a copy through a browser, a chat window or JSON does.

A model's old_string may hold a no-break space where the file has a space, `&lt;` where it has `<`, `—` where
it has `-`, or a `u00e9` escape where it has `é` (and each the other way round). Matching compares both sides in one
plain form; `units` maps that form back to the raw text, so offsets into the file stay exact.
"""

from __future__ import annotations

import html
import re
import unicodedata

QUOTES = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
INVISIBLE = {
    "\u00a0": " ",
    "\u2007": " ",
    "\u202f": " ",
    "\u200b": "",
    "\u200c": "",
    "\u200d": "",
    "\u2060": "",
    "\ufeff": "",
}
DASHES = {"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-"}
ELLIPSIS = {"\u2026": "..."}
_PLAIN = str.maketrans(QUOTES)
_LOOSE = str.maketrans({**QUOTES, **INVISIBLE, **DASHES, **ELLIPSIS})
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|nbsp|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_SPECIAL = re.compile(
    "["
    + "".join(INVISIBLE)
    + "".join(DASHES)
    + "\u2026]"
    + r"|&(?:lt|gt|amp|quot|apos|nbsp|#[0-9xX]+);|\\u[0-9a-fA-F]{4}"
)
_SHOWN_INVISIBLE = re.compile("[\u00a0\u00ad\u2007\u202f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]")
KIND_NAMES = {
    "invisible": "invisible or no-break spaces",
    "dashes": "dashes and ellipses",
    "entities": "HTML entities",
    "escapes": "\\u escapes",
}


def present(text: str) -> bool:
    """Whether `text` holds anything the loose form changes (else the loose pass would find nothing new)."""
    return _SPECIAL.search(text) is not None


def _escape(match: re.Match[str]) -> str:
    code = int(match.group(1), 16)
    # ASCII and surrogates stay written out: `\u000a` turned into a newline would change the lines themselves.
    return match.group(0) if code < 0x80 or 0xD800 <= code <= 0xDFFF else chr(code)


def _entity(match: re.Match[str]) -> str:
    value = html.unescape(match.group(0))
    return match.group(0) if "\n" in value or "\r" in value else value


def normalise(line: str, loose: bool) -> str:
    """`line` in the plain form matching compares: straight quotes, and when `loose` every lookalike undone."""
    if not loose:
        return line.translate(_PLAIN)
    if "&" in line:
        line = _ENTITY.sub(_entity, line)
    if "\\u" in line:
        line = _ESCAPE.sub(_escape, line)
    return line.translate(_LOOSE)


def units(raw: str, loose: bool) -> tuple[str, list[int], list[int]]:
    """(plain form, `at`, `back`): `at[i]` is where plain index i starts in `raw`, `back[j]` the reverse.

    Either is -1 where the index falls inside one unit (an entity, an escape, an ellipsis), which no offset
    may split. Both have one entry past the end.
    """
    parts: list[str] = []
    at: list[int] = []
    back = [-1] * (len(raw) + 1)
    specials = {m.start(): m for m in (*_ENTITY.finditer(raw), *_ESCAPE.finditer(raw))} if loose else {}
    length, pos = 0, 0
    dropped: int | None = None
    """Where a run of characters the plain form drops (zero-width) began: they go with the next character."""
    while pos < len(raw):
        found = specials.get(pos)
        piece = raw[pos : found.end()] if found else raw[pos]
        text = normalise(piece, loose)
        back[pos] = length
        if text:
            at.append(pos if dropped is None else dropped)
            at.extend([-1] * (len(text) - 1))
            dropped = None
        elif dropped is None:
            dropped = pos
        parts.append(text)
        length += len(text)
        pos += len(piece)
    at.append(len(raw))
    back[len(raw)] = length
    return "".join(parts), at, back


def kinds_between(region: str, old: str) -> list[str]:
    """Which lookalike kinds tell the file's region and old_string apart (by how often each form occurs)."""

    def count(text: str, table: dict[str, str]) -> int:
        return sum(text.count(char) for char in table)

    found = []
    if count(region, INVISIBLE) != count(old, INVISIBLE):
        found.append(KIND_NAMES["invisible"])
    if count(region, DASHES) + count(region, ELLIPSIS) != count(old, DASHES) + count(old, ELLIPSIS):
        found.append(KIND_NAMES["dashes"])
    if len(_ENTITY.findall(region)) != len(_ENTITY.findall(old)):
        found.append(KIND_NAMES["entities"])
    if len(_ESCAPE.findall(region)) != len(_ESCAPE.findall(old)):
        found.append(KIND_NAMES["escapes"])
    return found


def _counts(text: str) -> dict[str, int]:
    return {
        "invisible": sum(text.count(char) for char in INVISIBLE),
        "dashes": sum(text.count(char) for char in (*DASHES, *ELLIPSIS)),
        "entities": len(_ENTITY.findall(text)),
        "escapes": len(_ESCAPE.findall(text)),
    }


def copy_only(region: str, old: str) -> tuple[str, ...]:
    """The kinds old_string holds and the file's region never uses: damage of the copy, to undo in new_string."""
    mine, theirs = _counts(old), _counts(region)
    return tuple(kind for kind, n in mine.items() if n and not theirs[kind])


_UNDO = {
    "invisible": str.maketrans(INVISIBLE),
    "dashes": str.maketrans({**DASHES, **ELLIPSIS}),
}


def undo(text: str, kinds: tuple[str, ...]) -> str:
    """`text` with the listed kinds (from `copy_only`) put back in the plain form."""
    for kind in kinds:
        if kind in _UNDO:
            text = text.translate(_UNDO[kind])
        elif kind == "entities":
            text = _ENTITY.sub(_entity, text)
        elif kind == "escapes":
            text = _ESCAPE.sub(_escape, text)
    return text


def describe_invisible(text: str, what: str, first_line: int = 1, limit: int = 3) -> str:
    """Where `text` holds what prints as a space or as nothing: "U+00A0 NO-BREAK SPACE at line 12, column 5"."""
    spots: list[str] = []
    total = 0
    for number, line in enumerate(text.split("\n"), first_line):
        for found in _SHOWN_INVISIBLE.finditer(line):
            total += 1
            if len(spots) < limit:
                char = found.group(0)
                name = unicodedata.name(char, "UNNAMED")
                spots.append(f"U+{ord(char):04X} {name} at line {number}, column {found.start() + 1}")
    if not spots:
        return ""
    more = f" and {total - len(spots)} more" if total > len(spots) else ""
    return f"{what} holds {', '.join(spots)}{more}: these print like a space or like nothing."
