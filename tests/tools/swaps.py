"""A folder swapped for a symlink right after the resolver checked the path: the race the opens must hold against."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcp_codetools.files.paths import Workspace
from mcp_codetools.files.realpaths import Pinned


def swap_after_resolve(monkeypatch: pytest.MonkeyPatch, folder: Path, target: Path) -> None:
    """After each resolve, replace `folder` (if still a real folder) with a symlink to `target`."""
    original = Workspace.resolve_pinned  # `resolve` goes through it too

    def resolve_then_swap(
        self: Workspace, raw: str, cwd: Path, *, field: str = "file_path", for_read: bool = False
    ) -> tuple[Path, Pinned | None]:
        resolved = original(self, raw, cwd, field=field, for_read=for_read)
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
            folder.symlink_to(target)
        return resolved

    monkeypatch.setattr(Workspace, "resolve_pinned", resolve_then_swap)
