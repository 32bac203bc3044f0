"""The file history: what each file held before each of our writes, so a version can be listed and restored.

Contents live on disk in the session's scratch folder (one file per version), not in memory; memory
holds a small record per version. The copy is written by a background thread, so an Edit of a 10 MB file
does not pay for a second 10 MB write before it answers; until it is on disk the version is held in memory
(at most PENDING_MAX_BYTES of them; past that the write happens at once). The history is bounded by count
and by bytes; the oldest versions go first. A version larger than the byte bound is listed as not kept.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

PENDING_MAX_BYTES = 64 * 1024 * 1024
"""Versions waiting for the background write may hold this much memory; a larger backlog is written at once."""


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """A file's content just before one of our writes (`replaced_by` names the call that made that write)."""

    number: int
    path: Path
    replaced_at: float
    replaced_by: str
    size: int | None
    """None: the file did not exist before that write."""
    blob: Path | None
    kept: bool = True

    @property
    def existed(self) -> bool:
        """Whether the file existed before the write (else undoing it deletes the file)."""
        return self.size is not None


class FileHistory:
    """Versions of files before each of our writes, oldest first, spilled to `spill_dir`."""

    ENTRY_OVERHEAD = 256

    def __init__(
        self,
        spill_dir: Callable[[], Path] | None = None,
        *,
        max_bytes: int = 256 * 1024 * 1024,
        max_entries: int = 200,
    ) -> None:
        self._spill_dir = spill_dir
        self._folder: Path | None = None
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._entries: deque[HistoryEntry] = deque()
        self._memory: dict[int, bytes] = {}
        """Contents held in memory when there is no spill folder (tests, a session without scratch)."""
        self._bytes = 0
        self._numbers = itertools.count(1)
        self.dropped = 0
        self._pending: dict[int, bytes] = {}
        """Versions whose copy is not on disk yet; the background writer removes each once it is."""
        self._pending_bytes = 0
        self._lock = threading.Lock()
        self._writer: ThreadPoolExecutor | None = None

    def remember(self, path: Path, before: bytes | None, made_by: str = "Edit or Write") -> HistoryEntry:
        """Record `before` (None: the file did not exist) as the version the call `made_by` replaces."""
        number = next(self._numbers)
        size = len(before) if before is not None else None
        cost = (size or 0) + self.ENTRY_OVERHEAD
        kept = cost <= self._max_bytes
        blob: Path | None = None
        if before is not None and kept:
            try:
                blob = self._store(number, before)
            except OSError as exc:
                # The write itself must not fail because its undo copy could not be saved.
                logger.warning("file history: cannot save the version of %s (%s); it is listed as not kept", path, exc)
                kept = False
        entry = HistoryEntry(
            number,
            path,
            time.time(),
            made_by,
            size,
            blob,
            kept,
        )
        self._entries.append(entry)
        self._bytes += cost if kept else self.ENTRY_OVERHEAD
        self._trim()
        return entry

    def _store(self, number: int, data: bytes) -> Path | None:
        folder = self._folder_path()
        if folder is None:
            self._memory[number] = data
            return None
        blob = folder / f"{number:08d}.bin"
        with self._lock:
            later = self._pending_bytes + len(data) <= PENDING_MAX_BYTES
            if later:
                self._pending[number] = data
                self._pending_bytes += len(data)
        if not later:
            _write_blob(blob, data)
            return blob
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="file-history")
        self._writer.submit(self._write_later, number, blob)
        return blob

    def _write_later(self, number: int, blob: Path) -> None:
        with self._lock:
            data = self._pending.get(number)
        if data is None:
            return  # trimmed before it was written
        try:
            _write_blob(blob, data)
        except OSError as exc:
            logger.warning("file history: cannot save version %d (%s); it stays in memory", number, exc)
            return
        with self._lock:
            if self._pending.pop(number, None) is None:
                with contextlib.suppress(OSError):
                    blob.unlink()  # trimmed while it was being written
            else:
                self._pending_bytes -= len(data)

    def flush(self) -> None:
        """Wait until every version taken so far is on disk."""
        if self._writer is not None:
            self._writer.submit(lambda: None).result()

    def close(self) -> None:
        """Finish the background writes (called before the scratch folder is removed)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True, cancel_futures=True)
            self._writer = None

    def _folder_path(self) -> Path | None:
        if self._folder is None and self._spill_dir is not None:
            folder = self._spill_dir()
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._folder = folder
        return self._folder

    def _trim(self) -> None:
        while self._entries and (self._bytes > self._max_bytes or len(self._entries) > self._max_entries):
            old = self._entries.popleft()
            self._bytes -= ((old.size or 0) + self.ENTRY_OVERHEAD) if old.kept else self.ENTRY_OVERHEAD
            self._memory.pop(old.number, None)
            with self._lock:
                pending = self._pending.pop(old.number, None)
                if pending is not None:
                    self._pending_bytes -= len(pending)
            if old.blob is not None:
                with contextlib.suppress(OSError):
                    old.blob.unlink()
            self.dropped += 1

    def entries(self, path: Path | None = None) -> list[HistoryEntry]:
        """The versions kept, oldest first (of one file, or of all)."""
        return [entry for entry in self._entries if path is None or entry.path == path]

    def content(self, entry: HistoryEntry) -> bytes | None:
        """The bytes of a version (None: the file did not exist).

        Raises:
            LookupError: the version was not kept, or its spilled copy is gone.
        """
        if not entry.existed:
            return None
        if not entry.kept:
            raise LookupError(f"version {entry.number} was larger than the history's byte bound and was not kept")
        if entry.blob is None:
            return self._memory[entry.number]
        with self._lock:
            pending = self._pending.get(entry.number)
        if pending is not None:
            return pending
        try:
            return entry.blob.read_bytes()
        except OSError as exc:
            raise LookupError(f"the saved copy of version {entry.number} cannot be read: {exc.strerror}") from exc

    def versions(self, path: Path) -> list[bytes | None]:
        """The contents before each write to `path`, oldest first (those still kept)."""
        out: list[bytes | None] = []
        for entry in self.entries(path):
            with contextlib.suppress(LookupError):
                out.append(self.content(entry))
        return out

    @property
    def bytes_kept(self) -> int:
        """The bytes the kept versions take, counted against the bound."""
        return self._bytes


def _write_blob(blob: Path, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(blob, flags, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
