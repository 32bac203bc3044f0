"""Naming an open descriptor by a path, for a program that takes paths: `/proc/self/fd/N`, where it works.

On Linux with /proc mounted, `/proc/self/fd/N` names the open file or folder itself, not a path to it,
so a child can be pointed at what was checked without a later swap of the path mattering. macOS has no
such name for a folder (its `/dev/fd/N` duplicates descriptors, but cannot be a working directory), and
neither has Linux where /proc is absent or empty (some containers, a private mount namespace). Callers
then take the portable way (`fchdir` in the child, the descriptor as stdin). Which one is decided by
trying it once, never by the platform's name, so the portable way runs wherever the other cannot.
"""

from __future__ import annotations

import functools
import os

FORCE_PORTABLE = os.environ.get("MCP_CODETOOLS_FD_PATHS", "") == "off"
"""MCP_CODETOOLS_FD_PATHS=off takes the portable way even where /proc works (tests and benchmarks compare both)."""


def fd_path(fd: int) -> str:
    """The path that names descriptor `fd` of the process that opens it."""
    return f"/proc/self/fd/{fd}"


@functools.lru_cache(maxsize=1)
def _probe() -> bool:
    try:
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        named, held = os.stat(fd_path(fd)), os.fstat(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def usable() -> bool:
    """Whether `fd_path` names open descriptors here (asked of the system once per process)."""
    return not FORCE_PORTABLE and _probe()
