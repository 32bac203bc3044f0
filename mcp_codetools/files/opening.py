"""
Opens that keep to the resolver's verdict: a regular file for reading, a folder for *at-style writes.

Each open re-checks the descriptor it got, so a directory swapped for a symlink between the check and
the open cannot carry a read or a write outside the roots.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from mcp_codetools.errors import NotAFileError, PermissionDeniedError, os_errors, tool_error_from_os
from mcp_codetools.files.paths import Workspace


def _fd_path(fd: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


def check_fd_inside(fd: int, workspace: Workspace, shown: str, *, for_read: bool = False) -> None:
    """Confirm an open descriptor still names a file inside the roots (where /proc tells)."""
    actual = _fd_path(fd)
    if actual is not None and not workspace.contains(actual, for_read=for_read):
        raise PermissionDeniedError(f"Access denied: {shown} moved outside the workspace roots while being opened.")


def open_regular_for_read(path: Path, workspace: Workspace, shown: str) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without blocking on FIFOs or following a swapped-in link.

    Raises:
        FileStateError: missing, a directory, or not a regular file.
    """
    with os_errors("open", shown, missing=f"File does not exist: {shown}"):
        st = os.stat(path)
    refuse_non_regular(st, shown)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with os_errors("open", shown):
        fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        refuse_non_regular(st, shown)
        check_fd_inside(fd, workspace, shown, for_read=True)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def refuse_non_regular(st: os.stat_result, shown: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise NotAFileError(f"{shown} is a directory, not a file. Use Glob to list files, or Bash `ls`.")
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "FIFO"
            if stat.S_ISFIFO(st.st_mode)
            else "socket"
            if stat.S_ISSOCK(st.st_mode)
            else "device file"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "special file"
        )
        raise NotAFileError(
            f"Cannot read {shown}: it is a {kind}, which could block or never end. Only regular files can be read."
        )


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def open_checked_dir(folder: Path | str, workspace: Workspace, shown: str, *, dir_fd: int | None = None) -> int:
    """Open a folder without following a symlink in its last step, and check it lies inside the roots."""
    try:
        dfd = os.open(folder, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(folder, dir_fd):
            raise PermissionDeniedError(
                f"Access denied: a folder on the way to {shown} was replaced by a symlink after it was checked. "
                "Nothing was written."
            ) from None
        raise tool_error_from_os(exc, "open folder", shown) from None
    try:
        check_fd_inside(dfd, workspace, shown)
    except BaseException:
        os.close(dfd)
        raise
    return dfd


def _is_link(folder: Path | str, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(folder, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_parent_dir(path: Path, workspace: Workspace, shown: str) -> int:
    """Open the folder that will hold `path`, checked to be inside the roots, for *at-style writes."""
    return open_checked_dir(path.parent, workspace, shown)
