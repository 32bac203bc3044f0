"""
`CodeSession`: everything one MCP session remembers between calls.

The read ledger (what was read, when, which part), the file history of edits, the working directory
shared by Bash and relative paths, and background jobs. The dispatcher decides who may touch it when.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_codetools.config import Settings
from mcp_codetools.paths import Workspace

if TYPE_CHECKING:
    from mcp_codetools.dispatcher import Dispatcher

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FileStamp:
    """What a file looked like at one moment: enough to tell later whether it changed."""

    mtime_ns: int
    size: int
    digest: str | None
    ctime_ns: int = 0
    """No call can set ctime back (utime moves it too), so it catches a change whose mtime was restored."""

    def same_metadata(self, st: os.stat_result) -> bool:
        return (self.mtime_ns, self.size, self.ctime_ns) == (st.st_mtime_ns, st.st_size, st.st_ctime_ns)

    def same_file_state(self, other: FileStamp) -> bool:
        """Unchanged, judged by content when both digests are known, else by mtime and size."""
        if self.digest is not None and other.digest is not None:
            return self.digest == other.digest
        return self.mtime_ns == other.mtime_ns and self.size == other.size


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
        self._records.pop(path, None)

    def paths(self) -> list[Path]:
        return list(self._records)


class FileHistory:
    """The content of files before each of our writes, newest last, bounded in bytes."""

    ENTRY_OVERHEAD = 256

    def __init__(self, max_bytes: int = 8 * 1024 * 1024, max_entries: int = 64) -> None:
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._entries: deque[tuple[Path, bytes | None]] = deque()
        self._bytes = 0

    def remember(self, path: Path, before: bytes | None) -> None:
        size = len(before or b"") + self.ENTRY_OVERHEAD
        if size > self._max_bytes:
            return
        self._entries.append((path, before))
        self._bytes += size
        while self._entries and (self._bytes > self._max_bytes or len(self._entries) > self._max_entries):
            _, dropped = self._entries.popleft()
            self._bytes -= len(dropped or b"") + self.ENTRY_OVERHEAD

    def versions(self, path: Path) -> list[bytes | None]:
        return [before for p, before in self._entries if p == path]


IndexKey = tuple[Path, int, int, int]
IndexEntry = tuple[list[tuple[int, int]], int, "str | None"]


class LineIndexCache:
    """Per large file: where each chunk starts in lines, the line count and digest, so a deep view is a seek."""

    def __init__(self, capacity: int = 16) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[IndexKey, IndexEntry] = OrderedDict()

    def get(self, key: IndexKey) -> IndexEntry | None:
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
        return hit

    def put(self, key: IndexKey, checkpoints: list[tuple[int, int]], total_lines: int, digest: str | None) -> None:
        self._entries[key] = (checkpoints, total_lines, digest)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


class CodeSession:
    """One MCP session's state. On stdio there is one per process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.workspace = Workspace(settings.roots)
        self.cwd: Path = self.workspace.roots[0]
        self.ledger = ReadLedger()
        self.history = FileHistory()
        self.line_index = LineIndexCache()
        self.extras: dict[str, Any] = {}
        self._scratch: Path | None = None
        self._dispatcher: Dispatcher | None = None

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            from mcp_codetools.dispatcher import Dispatcher

            self._dispatcher = Dispatcher(self.settings.max_concurrency, self.settings.queue_timeout_s)
        return self._dispatcher

    @property
    def scratch_dir(self) -> Path:
        """A private temporary folder for this session (full command output and the like)."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="mcp-codetools-")).resolve()
            self.workspace.add_readable(self._scratch)
        return self._scratch

    def resolve(self, raw: str, *, field: str = "file_path", for_read: bool = False) -> Path:
        """A path confined to the roots; `for_read` also admits the session's own scratch folder."""
        return self.workspace.resolve(raw, self.cwd, field=field, for_read=for_read)

    def set_cwd(self, path: Path) -> bool:
        """Move the working directory; refuse (return False) a folder outside the roots."""
        real = Path(os.path.realpath(path))
        if not real.is_dir() or not self.workspace.contains(real):
            return False
        self.cwd = real
        return True

    async def aclose(self) -> None:
        """End the session: stop what it started and remove its scratch folder."""
        closers = self.extras.pop("closers", [])
        for close in closers:
            try:
                await close()
            except Exception:
                logger.exception("closing a session resource failed; going on with the rest")
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
