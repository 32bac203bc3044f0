"""A folder swapped for a symlink right after the resolver checked the path: the race the opens must hold against."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.files.paths import Workspace


def around_each_resolve(
    monkeypatch: pytest.MonkeyPatch, after: Callable[[], None], before: Callable[[], None] = lambda: None
) -> None:
    """Run `before` and `after` around every check of a path, by `resolve` or `resolve_pinned` (Read's)."""
    for name in ("resolve", "resolve_pinned"):
        original = getattr(Workspace, name)

        def checked(self: Workspace, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            before()
            resolved = _original(self, *args, **kwargs)
            after()
            return resolved

        monkeypatch.setattr(Workspace, name, checked)


def swap_after_resolve(monkeypatch: pytest.MonkeyPatch, folder: Path, target: Path) -> None:
    """After each resolve, replace `folder` (if still a real folder) with a symlink to `target`."""

    def swap() -> None:
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
            folder.symlink_to(target)

    around_each_resolve(monkeypatch, swap)
