"""The read ledger: per resolved path, the last Read (or our own write), what it covered, and its stamp."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcp_codetools.files.stamps import FileStamp


@dataclass(slots=True)
class ReadRecord:
    """The ledger entry for one resolved path."""

    stamp: FileStamp
    offset: int | None = None
    limit: int | None = None
    partial: bool = False
    total_lines: int | None = None
    covered: list[tuple[int, int]] = field(default_factory=list)
    served_unchanged: bool = False
    by_write: bool = False

    def cover(self, first: int, last: int) -> None:
        """Add the lines first..last to what was seen, merging touching spans."""
        if last < first:
            return
        spans = sorted([*self.covered, (first, last)])
        merged: list[tuple[int, int]] = []
        for a, b in spans:
            if merged and a <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.covered = merged

    def unread_ranges(self) -> list[tuple[int, int]]:
        """Line ranges of the file not yet seen under the current stamp."""
        if self.by_write or self.total_lines is None:
            return []
        gaps: list[tuple[int, int]] = []
        expected = 1
        for a, b in self.covered:
            if a > expected:
                gaps.append((expected, a - 1))
            expected = max(expected, b + 1)
        if expected <= self.total_lines:
            gaps.append((expected, self.total_lines))
        return gaps


class ReadLedger:
    """Per resolved path: the last read (or our own write) and what it covered."""

    def __init__(self) -> None:
        self._records: dict[Path, ReadRecord] = {}

    def get(self, path: Path) -> ReadRecord | None:
        """The record for a resolved path, or None if it was never read or written."""
        return self._records.get(path)

    def record_read(
        self,
        path: Path,
        stamp: FileStamp,
        *,
        offset: int,
        limit: int | None,
        first: int,
        last: int,
        total_lines: int,
        partial: bool,
        served_unchanged: bool = False,
    ) -> None:
        """Record a Read of lines first..last; lines seen under the same file state still count."""
        previous = self._records.get(path)
        record = ReadRecord(stamp, offset, limit, partial, total_lines, served_unchanged=served_unchanged)
        if previous is not None and previous.stamp.same_file_state(stamp) and not previous.by_write:
            record.covered = list(previous.covered)
        record.cover(first, last)
        self._records[path] = record

    def record_write(self, path: Path, stamp: FileStamp) -> None:
        """Our own write: the model knows the content it just wrote."""
        self._records[path] = ReadRecord(stamp, by_write=True)

    def forget(self, path: Path) -> None:
        """Drop the record: the path counts as never read."""
        self._records.pop(path, None)

    def paths(self) -> list[Path]:
        """The paths with a record (Bash stamps them to tell which files a command changed)."""
        return list(self._records)
