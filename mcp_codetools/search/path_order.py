r"""rg's parallel content output, put back in path order, so a search is fast and its pages still line up.

`rg --sort=path` gives a stable order but searches on one thread (2.3× slower than plain `rg -n` over
64k files on two cores, more on bigger machines). Searching in parallel and sorting afterwards works
because rg writes each file's lines as one contiguous block. So the output only has to be cut into
blocks, one per file, and the blocks sorted: the lines within a block are never reordered.

Each line names its file: rg runs with field separators that begin with a NUL (`path\0:12\0:text`,
`path\0-13\0-context`), and a NUL can be in neither a path nor a printed line (rg treats such files as
binary). Removing the NULs gives rg's own `path:12:text` back. Blocks are kept in a spooled temporary
file (in memory up to SPOOL_BYTES, then on disk), with a small index in memory: a page reads only the
blocks it shows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass

SPOOL_BYTES = 4 * 1024 * 1024
"""Output kept in memory before the spool moves to disk."""
MATCH_SEPARATOR = r"--field-match-separator=\x00:"
CONTEXT_SEPARATOR = r"--field-context-separator=\x00-"
GROUP_SEPARATOR = b"--"
"""What rg prints between groups of context lines, within a file and between files."""


def path_key(path: bytes) -> bytes:
    """The order of `rg --sort=path`: rg sorts each folder's entries by name, so paths compare part by part.

    A NUL, which no name holds, stands for each `/`: it sorts below every byte a name can hold, so one
    bytes comparison orders as part-by-part would (a tuple of parts cost 3× as much to sort).
    """
    return path.replace(b"/", b"\0")


@dataclass(slots=True)
class _Block:
    path: bytes
    start: int
    size: int
    lines: int


class FileBlocks:
    """A sink for rg's content output that regroups it by file; `page` then reads it in path order.

    `context` says whether rg prints context (then a `--` line separates the files, as with one thread).
    Reading stops, and rg with it, after `count_limit` bytes; `complete` is then False and the blocks
    seen so far are all there is.
    """

    def __init__(self, count_limit: int, *, context: bool, spool_bytes: int = SPOOL_BYTES) -> None:
        self.count_limit = count_limit
        self.context = context
        self.complete = True
        self._spool = tempfile.SpooledTemporaryFile(max_size=spool_bytes)
        self._written = 0
        self._blocks: list[_Block] = []
        self._current: _Block | None = None
        self._pending_separators = 0
        self._rest = b""
        self._seen = 0

    def __call__(self, chunk: bytes) -> bool:
        """Take a chunk of rg's output by whole lines; False once there is enough (or no room to spool)."""
        self._seen += len(chunk)
        data = self._rest + chunk if self._rest else chunk
        end = data.rfind(b"\n") + 1
        self._rest = data[end:]
        if end:
            try:
                self._feed(data, end)
            except OSError:  # no room to spool: keep the whole files seen so far, as after the count limit
                if self._blocks and self._blocks[-1] is self._current:
                    self._blocks.pop()
                self._current = None
                self.complete = False
                return False
        if self._seen > self.count_limit:
            self.complete = False
            return False
        return True

    def finish(self) -> None:
        """Take a last line without a newline (rg always ends with one; after an early stop it is cut off)."""
        if self._rest and self.complete:
            self._feed(self._rest + b"\n", len(self._rest) + 1)
        self._rest = b""

    def drop(self, hidden: Callable[[bytes], bool]) -> None:
        """Leave out the blocks of files `hidden` names (call after `finish`): totals and pages skip them whole."""
        self._blocks = [block for block in self._blocks if not block.path or not hidden(block.path)]
        self._current = None

    @property
    def total(self) -> int:
        """Lines in the path-ordered output, `--` separators included."""
        lines = sum(block.lines for block in self._blocks)
        if self.context and self._blocks:
            lines += len(self._blocks) - 1
        return lines

    def page(self, offset: int, limit: int | None, budget: int) -> tuple[list[bytes], bool]:
        """Lines `offset` onwards, at most `limit` of them and `budget` bytes (one newline each), in path order.

        Returns the lines (as rg prints them, NULs removed) and whether the budget cut the page short.
        """
        kept: list[bytes] = []
        used = 0
        skip = offset
        for index, block in enumerate(sorted(self._blocks, key=lambda block: path_key(block.path))):
            lines: list[bytes] = []
            if self.context and index:
                lines.append(GROUP_SEPARATOR)
            size = block.lines + len(lines)
            if skip >= size:
                skip -= size
                continue
            lines += self._read(block)
            for line in lines[skip:]:
                if limit is not None and len(kept) >= limit:
                    return kept, False
                used += len(line) + 1
                if used > budget:
                    return kept, True
                kept.append(line)
            skip = 0
        return kept, False

    def close(self) -> None:
        """Close the spool file."""
        self._spool.close()

    def _read(self, block: _Block) -> list[bytes]:
        self._spool.seek(block.start)
        data = self._spool.read(block.size)
        return data.replace(b"\0", b"").split(b"\n")[:-1]

    def _feed(self, data: bytes, end: int) -> None:
        """Sort the whole lines in `data[:end]` into blocks."""
        if self.context:
            self._feed_lines(data, end)
        else:
            self._feed_blocks(data, end)

    def _feed_blocks(self, data: bytes, end: int) -> None:
        """Split whole lines into per-file blocks, writing the chunk to the spool once.

        Without context every line names its file, and a file's lines are contiguous: so the chunk is
        written as it came, and each block is a slice of it, found by testing where each line begins
        (two C calls a line; splitting and joining the lines cost 2-3 times as much).
        """
        base = self._written
        current = self._current
        try:
            self._spool.write(memoryview(data)[:end])
        except OSError:
            if current is not None and self._starts_another(data, current.path):
                self._current = None  # its file ended before this chunk: whole, so kept
            raise
        self._written += end
        pos = 0
        while pos < end:
            first = pos
            nl = data.index(b"\n", pos) + 1
            nul = data.find(b"\0", pos, nl)
            if current is None or (nul >= 0 and data[pos:nul] != current.path):
                current = self._start_block(data[pos:nul] if nul >= 0 else b"", base + pos)
            prefix = current.path + b"\0"
            lines = 1
            pos = nl
            while pos < end and data.startswith(prefix, pos):
                pos = data.index(b"\n", pos) + 1
                lines += 1
            current.lines += lines
            current.size += pos - first

    @staticmethod
    def _starts_another(data: bytes, path: bytes) -> bool:
        """Whether the first line of `data` names a file other than `path` (a line naming none is a note)."""
        nul = data.find(b"\0", 0, data.find(b"\n"))
        return nul >= 0 and data[:nul] != path

    def _start_block(self, path: bytes, start: int | None = None) -> _Block:
        self._pending_separators = 0  # between files: the page puts its own
        self._current = _Block(path, self._written if start is None else start, 0, 0)
        self._blocks.append(self._current)
        return self._current

    def _feed_lines(self, data: bytes, end: int) -> None:
        """Line by line, for output with context: `--` lines belong to no file until the next line shows which."""
        pos = 0
        run = 0  # where the current block's unwritten lines begin
        while pos < end:
            nl = data.index(b"\n", pos)
            nul = data.find(b"\0", pos, nl)
            if nul < 0 and data[pos:nl] == GROUP_SEPARATOR:
                # Within a file or between two: only the next line tells. Held back until then.
                self._write(data, run, pos)
                self._pending_separators += 1
                run = pos = nl + 1
                continue
            # A line without a NUL that is not a separator is rg's note about the file just printed
            # ("WARNING: stopped searching binary file"): it belongs to the current block.
            path = data[pos:nul] if nul >= 0 else None
            current = self._current
            if current is None or (path is not None and path != current.path):
                self._write(data, run, pos)
                current = self._start_block(path or b"")
                run = pos
            elif self._pending_separators:
                self._write_separators()
            current.lines += 1
            pos = nl + 1
        self._write(data, run, end)

    def _write(self, data: bytes, start: int, stop: int) -> None:
        if stop > start and self._current is not None:
            self._append(memoryview(data)[start:stop])

    def _write_separators(self) -> None:
        assert self._current is not None
        count, self._pending_separators = self._pending_separators, 0
        self._append((GROUP_SEPARATOR + b"\n") * count)
        self._current.lines += count

    def _append(self, data: bytes | memoryview) -> None:
        assert self._current is not None
        self._spool.write(data)
        self._written += len(data)
        self._current.size += len(data)
