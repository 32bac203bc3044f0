"""A session's budget for output saved to disk: full command outputs and background jobs' logs.

Each file has its own cap (1 GiB), but a session can make many; past the budget the oldest files go
first. A file still being written (a running job's log) is never removed, nor the one the current call
just saved (the result names it), so the budget can be passed while those are large; it is restored as
soon as older files can go. The caller says in its result what was removed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(slots=True)
class _Spill:
    path: Path
    in_use: Callable[[], bool] | None
    on_remove: Callable[[], None] | None


@dataclass(frozen=True, slots=True)
class Removed:
    """A saved output file the budget removed, and its size."""

    path: Path
    size: int


class SpillBudget:
    """The files one session saved, oldest first, and how many bytes they may take together."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._files: list[_Spill] = []

    def add(
        self, path: Path, *, in_use: Callable[[], bool] | None = None, on_remove: Callable[[], None] | None = None
    ) -> None:
        """Count `path` from now on; `in_use` says when it may not be removed, `on_remove` is told when it is."""
        self._files.append(_Spill(path, in_use, on_remove))

    def enforce(self, keep: Path | None = None) -> list[Removed]:
        """Remove the oldest files (never `keep` nor one in use) until the total is within the budget."""
        sizes: list[tuple[_Spill, int]] = []
        for spill in self._files:
            size = _size(spill.path)
            if size is not None:
                sizes.append((spill, size))
        self._files = [spill for spill, _ in sizes]  # deleted by someone else: no longer counted
        total = sum(size for _, size in sizes)
        removed: list[Removed] = []
        for spill, size in sizes:
            if total <= self.limit_bytes:
                break
            if spill.path == keep or (spill.in_use is not None and spill.in_use()):
                continue
            try:
                os.unlink(spill.path)
            except FileNotFoundError:
                pass
            except OSError:
                continue
            total -= size
            self._files.remove(spill)
            removed.append(Removed(spill.path, size))
            if spill.on_remove is not None:
                spill.on_remove()
        return removed


def removal_note(removed: list[Removed], limit_bytes: int) -> str:
    """The line a result carries when files were removed to keep within the budget."""
    listed = ", ".join(f"{item.path} ({size_text(item.size)})" for item in removed)
    return (
        f"[To keep this session's saved output within its {size_text(limit_bytes)} budget, "
        f"the oldest saved output was removed: {listed}.]"
    )


def size_text(size: int) -> str:
    """A size in the largest binary unit it reaches (`1.5 MiB`)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.3g} {unit}"
    return f"{size} bytes"


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
