"""Fixtures the search-start tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def pinned(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A folder holding one file with `needle`, and a descriptor open on it (what a pinned search target is)."""
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "a.txt").write_text("needle\n", encoding="utf-8")
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield folder, fd
    finally:
        os.close(fd)
