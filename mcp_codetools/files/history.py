"""The file history: what files held before each of our writes, bounded in count and bytes."""

from __future__ import annotations

from collections import deque
from pathlib import Path


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
