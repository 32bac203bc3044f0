"""Counting what a call does to one file: how often it looks at it (stat, lstat) and opens it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.files import editing, opening
from mcp_codetools.search import targets as search_targets


@dataclass
class FileIO:
    looks: int = 0
    opens: int = 0


_watched: list[tuple[str, FileIO]] = []


def _on_audit(event: str, args: tuple[Any, ...]) -> None:
    # Both os.open and the built-in open raise the "open" audit event; there is none for stat.
    if event == "open" and _watched and args and isinstance(args[0], str | os.PathLike):
        for name, counts in _watched:
            if os.fspath(args[0]) == name:
                counts.opens += 1


sys.addaudithook(_on_audit)  # a hook cannot be removed; it does nothing while nothing is watched


@contextmanager
def file_io(path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FileIO]:
    """Count the stat/lstat calls and opens of `path` (by its full name) inside the block."""
    counts = FileIO()
    name = str(path)

    def counting(real: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
        def look(target: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            if kwargs.get("dir_fd") is None and isinstance(target, str | os.PathLike) and os.fspath(target) == name:
                counts.looks += 1
            return real(target, *args, **kwargs)

        return look

    def counting_open(real: Callable[..., int]) -> Callable[..., int]:
        # Confined opens go through openat2 from a root's descriptor, which raises no audit event.
        def opened(target: Any, *args: Any, **kwargs: Any) -> int:
            if os.fspath(target) == name:
                counts.opens += 1
            return real(target, *args, **kwargs)

        return opened

    monkeypatch.setattr(os, "stat", counting(os.stat))
    monkeypatch.setattr(os, "lstat", counting(os.lstat))
    confined_open = counting_open(opening.open_beneath)
    for module in (opening, editing, search_targets):
        monkeypatch.setattr(module, "open_beneath", confined_open)
    _watched.append((name, counts))
    try:
        yield counts
    finally:
        _watched.remove((name, counts))
        monkeypatch.undo()
