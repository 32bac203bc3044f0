"""Did an edit break a Python file? Python's own compiler says, at the cost of the few lines the edit touched.

Compiling a whole 2,000-line module takes ~10 ms, far more than the edit. A change inside a function can only
break that function, so the compile covers the innermost `def` or `class` around the change, dedented, in the
file before and after; a change at the top level covers the column-0 statements from the `def`, `class` or
decorator above it to the next one. The shortcut is used only where it is sound: the block's first line is a
`def`, `class` or decorator (never inside brackets), no triple-quoted string is open above it, the text
outside the block is the same before and after, and the block compiled before the edit. Anything else (and
every error the shortcut finds) is settled by compiling the whole file before and after, so an error is
reported only when the edit introduced it.

The shortcut never splits the whole file: it reads lines outward from the change in a window that grows
until the block's bounds are inside it, and blocks known to compile (the text after one edit is the text
before the next) are remembered, so a run of edits in one function compiles each version once.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass

from mcp_codetools.files.text import clip_line

PYTHON_SUFFIXES = frozenset({".py", ".pyi", ".pyw"})
MAX_CHECK_CHARS = 2 * 1024 * 1024
"""Larger files are not checked: a whole parse would cost more than the answer is worth."""


def surely_too_large(body: str | bytes | bytearray) -> bool:
    """Whether `body` is over `MAX_CHECK_CHARS` characters for sure, told without decoding it.

    A character takes at most 4 bytes in any encoding a file is read in, so only bytes beyond 4x the limit
    are sure; between, the checks decode and count as before.
    """
    return len(body) > (MAX_CHECK_CHARS if isinstance(body, str) else 4 * MAX_CHECK_CHARS)


_BLOCK = re.compile(r"(?:async[ \t]+def|def|class)[ \t]|@")
_WINDOW = 2 * 1024
"""Characters read on each side of the change at first; grown fourfold until the block fits."""
_GUESSED_LINE = 40
_STEPS = 8
"""Lines found one by one at the end of `_line_start`'s search rather than guessed and counted."""
KEPT_BLOCKS = 64
MAX_KEPT_BLOCK = 64 * 1024
_compiled: OrderedDict[str, None] = OrderedDict()
"""Blocks that compiled cleanly, most recent last: a pure function's answer, so sharing it is safe."""
_compiled_lock = threading.Lock()
"""The tools check on the event loop today; the lock keeps the memory whole if a check ever runs in a thread."""


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """A syntax error: 1-based line and column, the parser's message and the line's text."""

    line: int
    column: int
    message: str
    text: str

    def describe(self, lead: str = "The edit introduced a syntax error") -> str:
        """The error as the model reads it: where, why, and the line with a caret under the spot."""
        caret = " " * max(0, self.column - 1) + "^"
        return f"{lead} at line {self.line}: {self.message}\n{self.line}\t{clip_line(self.text)}\n\t{caret}"


def _problem(source: str) -> SyntaxProblem | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence" and the like are not our business
            # Compiling adds the checks the parser leaves to the compiler: `return` outside a function, `break`
            # outside a loop, `await` outside async code, a `nonlocal` with no binding. From source it costs
            # about what ast.parse did (no tree of Python objects is built), half of parsing then compiling.
            compile(source, "<edit>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        lines = source.split("\n")
        line = exc.lineno or 1
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return SyntaxProblem(line, exc.offset or 1, exc.msg, text)
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting: also broken
        return SyntaxProblem(1, 1, str(exc) or type(exc).__name__, "")
    return None


def introduced_error(old: str | None, new: str, first: int = 0, last: int | None = None) -> SyntaxProblem | None:
    """The syntax error `new` has and `old` did not, or None.

    `first` and `last` are the 0-based lines of `new` the change covers (the whole file when not given).
    """
    if len(new) > MAX_CHECK_CHARS:
        return None
    if old is not None and last is not None and _block_check(old, new, first, last):
        return None
    found = _problem(new)
    if found is None or old is None:
        return found
    before = _problem(old)
    if before is None or before.message != found.message:
        return found
    # The same error as before, on the same text or at the same place (an edit inside the broken line).
    return None if before.text == found.text or (before.line, before.column) == (found.line, found.column) else found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block_check(old: str, new: str, first: int, last: int) -> bool:
    """True when the edited block compiles after the edit (and did before); False when the shortcut cannot tell."""
    bounds = _block_bounds(new, first, max(first, last))
    if bounds is None:
        return False
    start, end, indent = bounds
    if new.count('"""', 0, start) % 2 or new.count("'''", 0, start) % 2:
        return False  # the block may sit inside a string
    old_end = len(old) - (len(new) - end)
    if old_end < start or not old.startswith(new[:start]) or not old.endswith(new[end:]):
        return False
    after = _dedented(new[start:end], indent)
    before = _dedented(old[start:old_end], indent)
    return after is not None and before is not None and _compiles(before) and _compiles(after)


def _compiles(block: str) -> bool:
    with _compiled_lock:
        if block in _compiled:
            _compiled.move_to_end(block)
            return True
    if _problem(block) is not None:
        return False
    if len(block) <= MAX_KEPT_BLOCK:
        with _compiled_lock:
            _compiled[block] = None
            while len(_compiled) > KEPT_BLOCKS:
                _compiled.popitem(last=False)
    return True


def _line_start(text: str, index: int) -> int | None:
    """The offset where 0-based line `index` starts (None: the text has fewer lines), without splitting the text.

    Guessed from a typical line length, then from the mean length of the lines counted so far; each count
    covers only the stretch since the last guess, so the search reads about the text above the line once.
    """
    pos = have = 0  # `have`: the newlines in text[:pos]
    width = _GUESSED_LINE
    while 0 < index - have > _STEPS:
        ahead = min(len(text), pos + (index - have) * width)
        if ahead == pos:
            return None
        have += text.count("\n", pos, ahead)
        pos = ahead
        width = max(1, pos // max(1, have))
    while have >= index > 0:  # overshot: the last newline in text[:pos] is the have-th
        found = text.rfind("\n", 0, pos)
        if have == index:
            return found + 1
        pos, have = found, have - 1
    while have < index:
        found = text.find("\n", pos)
        if found < 0:
            return None
        pos, have = found + 1, have + 1
    return pos


def _block_bounds(text: str, first: int, last: int) -> tuple[int, int, str] | None:
    """[start, end) offsets and indentation of the innermost def/class (with decorators) around lines first..last.

    Reads a window of lines around the change, grown fourfold until both bounds fall inside it (or it is the file).
    """
    at = _line_start(text, first)
    if at is None:
        return None
    after = at
    for _ in range(last - first + 1):
        found = text.find("\n", after)
        after = len(text) if found < 0 else found + 1
    span = _WINDOW
    while True:
        low = 0 if at <= span else text.rfind("\n", 0, at - span) + 1
        high = len(text) if after + span >= len(text) else text.find("\n", after + span)
        high = len(text) if high < 0 else high
        lines = text[low:high].split("\n")
        top = text.count("\n", low, at)
        start, end = _enclosing(lines, top, top + last - first, at_top=low == 0)
        if end is None and start is not None and high == len(text):
            end = len(lines)
        if start is not None and end is not None:
            break
        if low == 0 and high == len(text):
            return None
        span *= 4
    begin = low + sum(map(len, lines[:start])) + start  # map keeps the sum in C
    finish = begin + sum(map(len, lines[start:end])) + (end - start)
    finish = min(finish, len(text))  # the window's last line has no newline after it in the window
    return begin, finish, lines[start][: _indent(lines[start])]


def _enclosing(lines: list[str], first: int, last: int, *, at_top: bool) -> tuple[int | None, int | None]:
    """[start, end) of the innermost def/class (with its decorators) around lines first..last; None: past `lines`.

    `at_top`: `lines` start at the top of the file, itself a statement boundary.
    """
    last = min(last, len(lines) - 1)
    body = [line for line in lines[first : last + 1] if line.strip()]
    level = min((_indent(line) for line in body), default=0)
    limit, start = level, None
    for index in range(first - 1, -1, -1):
        text = lines[index].lstrip(" \t")
        if not text or text.startswith("#"):
            continue
        depth = len(lines[index]) - len(text)
        if (depth < limit or depth == limit == 0) and _BLOCK.match(text):
            start = index
            break
        limit = min(limit, depth)
    if start is None and not at_top:
        return None, None
    start = start or 0
    depth = _indent(lines[start]) if start else 0
    while start > 0 and lines[start - 1].lstrip(" \t").startswith("@") and _indent(lines[start - 1]) == depth:
        start -= 1
    if start == 0 and not at_top:
        return None, None  # decorators may go on above the window
    for index in range(last + 1, len(lines)):
        text = lines[index].lstrip(" \t")
        if not text or text.startswith("#") or _indent(lines[index]) > depth:
            continue
        if depth > 0 or _BLOCK.match(text):
            return start, index
    return start, None


def _dedented(block: str, indent: str) -> str | None:
    if not indent:
        return block
    lines = block.split("\n")
    if any(line.strip() and not line.startswith(indent) for line in lines):
        return None
    return "\n".join(line[len(indent) :] for line in lines)
