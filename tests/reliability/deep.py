"""Folders nested deeper than PATH_MAX, built and inspected through descriptors (paths that long cannot be opened)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

DEEP_BYTES = 4400
"""Deeper than PATH_MAX (4096): /proc/self/fd/N of a descriptor down there cannot be read."""


def make_deep(top: Path, total: int = DEEP_BYTES, files: dict[str, str] | None = None) -> tuple[Path, list[str]]:
    """A chain of folders under `top` whose full path passes `total` bytes, with `files` (relative
    name: text; folders made as needed) at the bottom; returns the bottom's path and the chain's names."""
    names: list[str] = []
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while len(str(top)) + sum(len(n) + 1 for n in names) < total:
            name = f"{len(names):03d}" + "d" * 200
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            names.append(name)
        for relative, text in (files or {}).items():
            _write_below(fd, relative, text)
    finally:
        os.close(fd)
    return top.joinpath(*names), names


def _write_below(dir_fd: int, relative: str, text: str) -> None:
    *folders, name = relative.split("/")
    fd = os.dup(dir_fd)
    try:
        for folder in folders:
            try:
                os.mkdir(folder, dir_fd=fd)
            except FileExistsError:
                pass
            child = os.open(folder, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
        os.write(out, text.encode())
        os.close(out)
    finally:
        os.close(fd)


def listing(top: Path, names: list[str]) -> list[str]:
    """Every name along the chain and everything below its bottom, with file contents: what a leak would change."""
    seen: list[str] = []
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth, name in enumerate(names):
            seen += [f"{depth}:{entry}" for entry in sorted(os.listdir(fd))]
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        seen += _tree(fd, "")
    finally:
        os.close(fd)
    return seen


def _tree(dir_fd: int, prefix: str) -> list[str]:
    seen: list[str] = []
    for entry in sorted(os.listdir(dir_fd)):
        st = os.stat(entry, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            child = os.open(entry, os.O_RDONLY | os.O_DIRECTORY, dir_fd=dir_fd)
            try:
                seen += [f"{prefix}{entry}/"] + _tree(child, f"{prefix}{entry}/")
            finally:
                os.close(child)
        else:
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
            try:
                seen.append(f"{prefix}{entry}={os.read(fd, 1 << 20)!r} mode={st.st_mode:o}")
            finally:
                os.close(fd)
    return seen


def hop_link(link: Path, hop: Path, top: Path, names: list[str]) -> None:
    """Make `link` lead to the bottom of the chain: a symlink holds at most PATH_MAX bytes, so through `hop`."""
    half = len(names) // 2
    hop.symlink_to(top.joinpath(*names[:half]))
    link.symlink_to(hop.joinpath(*names[half:]))
