"""
One resolver for every path a tool touches, and the opens that keep to it.

A path is resolved against the session's working directory, symlinks are followed, and the real path
must lie inside a workspace root, compared component by component (``/ws/proj2`` is not inside
``/ws/proj``). Opens re-check the descriptor they got, so a directory swapped for a symlink between
the check and the open cannot carry a read or a write outside the roots.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcp_codetools.errors import FileStateError, InvalidInputError, PermissionDeniedError

PATH_MAX = 4096


def canonical_root(raw: str | os.PathLike[str]) -> Path:
    """A root as it will be compared: absolute, with every symlink resolved."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(raw))))


def is_within(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or lies under it; both must already be real paths."""
    return path == root or path.is_relative_to(root)


class Workspace:
    """The workspace roots and the rule that confines paths to them."""

    def __init__(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        resolved: list[Path] = []
        for raw in roots:
            root = canonical_root(raw)
            if not root.is_dir():
                raise ValueError(f"workspace root is not a directory: {raw}")
            if root not in resolved:
                resolved.append(root)
        if not resolved:
            raise ValueError("at least one workspace root is required")
        self.roots: tuple[Path, ...] = tuple(resolved)
        self.readable: list[Path] = []
        """Folders the server made itself (full command output, job logs): open to reads only."""

    def add_readable(self, folder: Path) -> None:
        self.readable.append(canonical_root(folder))

    def contains(self, real_path: Path, *, for_read: bool = False) -> bool:
        if any(is_within(real_path, root) for root in self.roots):
            return True
        return for_read and any(is_within(real_path, folder) for folder in self.readable)

    def resolve(self, raw: str, cwd: Path, *, field: str = "file_path", for_read: bool = False) -> Path:
        """Resolve `raw` to a real path inside the roots.

        Raises:
            InvalidInputError: the path is empty or holds a NUL byte.
            PermissionDeniedError: the real path lies outside every root.
        """
        if not raw or not raw.strip():
            raise InvalidInputError(f"`{field}` is empty. Give an absolute path, or one relative to {cwd}.")
        if "\x00" in raw:
            raise InvalidInputError(f"`{field}` contains a NUL byte, which no file name can hold.")
        try:
            size = len(raw.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidInputError(f"`{field}` contains an unpaired surrogate, which no file name can hold.") from None
        if size > PATH_MAX:
            raise InvalidInputError(f"`{field}` is {size} bytes long; a path can be at most {PATH_MAX} bytes.")
        expanded = os.path.expanduser(raw) if raw.startswith("~") else raw
        joined = os.path.join(cwd, expanded)
        try:
            real = Path(os.path.realpath(joined))
        except OSError as exc:  # a link on the way vanished between realpath's lstat and readlink
            raise FileStateError(
                f"{raw} changed while it was being resolved ({exc.strerror}). Try the call again.", "not_a_file"
            ) from None
        if not self.contains(real, for_read=for_read):
            shown = ", ".join(str(r) for r in self.roots)
            via = "" if real == Path(os.path.normpath(joined)) else f" (it resolves to {real})"
            raise PermissionDeniedError(
                f"Access denied: {raw}{via} is outside the workspace roots ({shown}). "
                "Only files inside the roots can be used."
            )
        return real

    def display(self, path: Path, cwd: Path) -> str:
        """The path as the model should see it: absolute, as it is on disk."""
        return str(path)

    def describe_roots(self) -> str:
        return ", ".join(str(r) for r in self.roots)


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
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileStateError(f"File does not exist: {shown}", "file_not_found") from None
    except OSError as exc:
        raise FileStateError(f"Cannot open {shown}: {exc.strerror}", "not_a_file") from None
    refuse_non_regular(st, shown)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise FileStateError(f"Cannot open {shown}: {exc.strerror}", "not_a_file") from None
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
        raise FileStateError(f"{shown} is a directory, not a file. Use Glob to list files, or Bash `ls`.", "not_a_file")
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
        raise FileStateError(
            f"Cannot read {shown}: it is a {kind}, which could block or never end. Only regular files can be read.",
            "not_a_file",
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
        raise FileStateError(f"Cannot open a folder on the way to {shown}: {exc.strerror}", "not_a_file") from None
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


def similar_names(path: Path, limit: int = 1) -> Sequence[str]:
    """Names beside a missing file that the caller may have meant (same stem, or a close spelling)."""
    import difflib

    parent = path.parent
    try:
        names = [entry.name for entry in os.scandir(parent)][:5000]
    except OSError:
        return ()
    stem_hits = [n for n in names if Path(n).stem == path.stem and n != path.name]
    close = difflib.get_close_matches(path.name, names, n=limit, cutoff=0.75)
    ordered = list(dict.fromkeys(stem_hits + close))
    return [str(parent / n) for n in ordered[:limit]]
