"""Numbered views of a text file whose cost is bounded by the view, not the file.

Small files are read whole. Large ones are scanned once in chunks to count lines and note, per chunk,
which line it starts in; that index is cached per (inode, mtime, size), so a later view deep in the
file is a seek. Memory holds one chunk and the lines of the view, each line capped.
"""

from __future__ import annotations

import os
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from mcp_codetools.files.stamps import digest_bytes
from mcp_codetools.files.text import CUT_MARK, MAX_LINE_CHARS, TextFormat, number_line, shows_as_is

WHOLE_FILE_BYTES = 4 * 1024 * 1024
DIGEST_MAX_BYTES = 64 * 1024 * 1024
CHUNK = 1024 * 1024
CHECKPOINT_EVERY = 64 * 1024
"""A deep view starts at most this many bytes before its first line, so few lines are walked in Python."""
_LINE_KEEP_BYTES = MAX_LINE_CHARS * 4 + 16


@dataclass
class View:
    """Lines `first`..`first + len(numbered) - 1` of a file of `total_lines` lines."""

    numbered: list[str]
    first: int
    total_lines: int
    digest: str | None
    cut_by_budget: bool
    fmt: TextFormat

    @property
    def last(self) -> int:
        """The number of the view's last line."""
        return self.first + len(self.numbered) - 1


def _take(lines: list[str], first: int, max_lines: int, budget: int) -> tuple[list[str], bool]:
    """Number lines from `first` until `max_lines` or the character budget runs out."""
    chosen = lines[first - 1 : first - 1 + max_lines]
    if _plain(chosen):
        # Nothing to strip, clip or replace: number the lines in one pass (a Read's main cost per line).
        out = [f"{number}\t{line}" for number, line in enumerate(chosen, first)]
        if sum(map(len, out)) + len(out) <= budget:
            return out, False
    else:
        out = [number_line(first + i, line) for i, line in enumerate(chosen)]
    used = 0
    for i, rendered in enumerate(out):
        used += len(rendered) + 1
        if used > budget and i:
            return out[:i], True
    return out, False


def _plain(lines: list[str]) -> bool:
    """Whether `number_line` would show every line as it is: no CR, no undecodable byte, none too long."""
    if not lines or max(map(len, lines)) > MAX_LINE_CHARS:
        return False
    joined = "".join(lines)
    return "\r" not in joined and shows_as_is(joined)


def split_lines(text: str) -> list[str]:
    """`text` split at newlines, without an empty piece after a final newline."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def read_view(
    fd: int,
    st: os.stat_result,
    fmt: TextFormat,
    path: Path,
    *,
    first: int,
    max_lines: int,
    budget: int,
    cache: LineIndexCache,
    whole: bytes | None = None,
) -> View:
    """Read lines [first, first + max_lines) within `budget` characters of numbered output.

    `whole`: the file's bytes, when the caller has already read all of them (a short file's first read).
    """
    if whole is not None or st.st_size <= WHOLE_FILE_BYTES or not fmt.ascii_compatible:
        data = whole if whole is not None else _read_all(fd, st.st_size)
        text = data[len(fmt.bom) :].decode(fmt.encoding, fmt.errors)
        lines = split_lines(text)
        numbered, cut = _take(lines, first, max_lines, budget)
        return View(numbered, first, len(lines), digest_bytes(data), cut, fmt)
    key = (path, st.st_ino, st.st_mtime_ns, st.st_size)
    hit = cache.get(key)
    if hit is None:
        checkpoints, total, digest = _index(fd, st.st_size)
        cache.put(key, checkpoints, total, digest)
    else:
        checkpoints, total, digest = hit
    numbered, cut = _window(fd, fmt, checkpoints, first, max_lines, budget)
    return View(numbered, first, total, digest, cut, fmt)


def _read_all(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    offset = 0
    while True:
        block = os.pread(fd, max(CHUNK, size - offset + 1), offset)
        if not block:
            break
        parts.append(block)
        offset += len(block)
    return b"".join(parts)


def _index(fd: int, size: int) -> tuple[list[tuple[int, int]], int, str | None]:
    """One pass: (byte offset, line number at that byte) per chunk, the line count, and the digest."""
    crc: int | None = 0 if size <= DIGEST_MAX_BYTES else None
    checkpoints: list[tuple[int, int]] = []
    newlines = 0
    offset = 0
    last_byte = b""
    while True:
        block = os.pread(fd, CHUNK, offset)
        if not block:
            break
        for start in range(0, len(block), CHECKPOINT_EVERY):
            checkpoints.append((offset + start, newlines + 1))
            newlines += block.count(b"\n", start, start + CHECKPOINT_EVERY)
        if crc is not None:
            crc = zlib.crc32(block, crc)
        offset += len(block)
        last_byte = block[-1:]
    total = newlines + (1 if offset and last_byte != b"\n" else 0)
    return checkpoints, total, f"{crc:08x}" if crc is not None else None


def _window(
    fd: int, fmt: TextFormat, checkpoints: list[tuple[int, int]], first: int, max_lines: int, budget: int
) -> tuple[list[str], bool]:
    start_offset, line_no = 0, 1
    for offset, line in checkpoints:
        if line < first or offset == 0:
            start_offset, line_no = offset, line
        else:
            break
    # A checkpoint may fall mid-line: the bytes before its first newline belong to line `line_no`.
    out: list[str] = []
    used = 0
    pending = bytearray()
    pending_len = 0
    offset = start_offset
    while len(out) < max_lines:
        block = os.pread(fd, CHUNK, offset)
        if not block:
            break
        offset += len(block)
        parts = block.split(b"\n")
        for i, part in enumerate(parts):
            if line_no >= first:
                if len(pending) < _LINE_KEEP_BYTES:
                    pending += part[: _LINE_KEEP_BYTES - len(pending)]
                pending_len += len(part)
            if i == len(parts) - 1:
                continue
            if line_no >= first:
                rendered = _render(line_no, bytes(pending), pending_len, fmt)
                used += len(rendered) + 1
                if used > budget and out:
                    return out, True
                out.append(rendered)
                if len(out) >= max_lines:
                    return out, False
            pending.clear()
            pending_len = 0
            line_no += 1
    if pending_len and line_no >= first and len(out) < max_lines:
        rendered = _render(line_no, bytes(pending), pending_len, fmt)
        if used + len(rendered) + 1 > budget and out:
            return out, True
        out.append(rendered)
    return out, False


def _render(number: int, raw: bytes, true_len: int, fmt: TextFormat) -> str:
    line = raw.decode(fmt.encoding, fmt.errors)
    if true_len > len(raw):
        line = line[: MAX_LINE_CHARS + 1]
        rendered = number_line(number, line)
        hidden = true_len - MAX_LINE_CHARS
        return rendered.split(CUT_MARK)[0] + f"{CUT_MARK}about {hidden} of its about {true_len} characters hidden]"
    return number_line(number, line)


IndexKey = tuple[Path, int, int, int]
IndexEntry = tuple[list[tuple[int, int]], int, "str | None"]


class LineIndexCache:
    """Per large file: where each chunk starts in lines, the line count and digest, so a deep view is a seek."""

    def __init__(self, capacity: int = 16) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[IndexKey, IndexEntry] = OrderedDict()

    def get(self, key: IndexKey) -> IndexEntry | None:
        """The index for `key`, marked as most recently used; None when not cached."""
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
        return hit

    def put(self, key: IndexKey, checkpoints: list[tuple[int, int]], total_lines: int, digest: str | None) -> None:
        """Cache a file's line index, evicting the least recently used past capacity."""
        self._entries[key] = (checkpoints, total_lines, digest)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
