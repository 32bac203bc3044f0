"""Opens that keep to the resolver's verdict, whatever happens to the path after it was checked.

The resolver hands over a real path inside a root. Every open here starts from that root's own
descriptor and refuses a symlink in any component of the rest, so a folder swapped for a link to
elsewhere (however deep that elsewhere is) cannot carry a read or a write outside the roots.
Where the system can do this in one call, it does: `openat2` with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS (Linux 5.6+), or `openat` with O_NOFOLLOW_ANY (macOS 11+), which refuses a link
anywhere in the path. Elsewhere, or for a path too long for one call, a walk opens one component at a
time with O_NOFOLLOW from the folder before it. All end in `open_below`; an error none explains is a
refusal. `method()` says which one this process uses.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import sys
import tempfile
from pathlib import Path

from mcp_codetools.errors import FileMissingError, NotAFileError, PermissionDeniedError, os_errors, tool_error_from_os
from mcp_codetools.files.paths import Workspace
from mcp_codetools.files.realpaths import Pinned, open_pinned

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PATH = getattr(os, "O_PATH", os.O_RDONLY)
# Windows has neither flag (nor descriptor-relative opens): the server refuses to serve there (see
# `cli`), so these stand-ins only let the module import, for `doctor` and `config`.
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_WALK_FLAGS = _PATH | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (the syscall table was unified by then)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_OPENAT2_RETRIES = 8
"""openat2 answers EAGAIN when a rename raced the lookup; after this many the open is refused."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_syscall() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None


_syscall = _load_syscall()
use_one_call: bool = os.environ.get("MCP_CODETOOLS_CONFINED_OPEN", "") != "walk"
"""Whether to try the one-call open (openat2, or O_NOFOLLOW_ANY) first. Tests (and
MCP_CODETOOLS_CONFINED_OPEN=walk) turn it off to run the walk. Cleared for the process the first time
the kernel answers ENOSYS to openat2."""

_DARWIN_O_NOFOLLOW_ANY = 0x20000000
"""<sys/fcntl.h> on macOS 11+; Python's os module names it only from 3.13 on (and only when built there)."""


def _refuses_links_anywhere(flag: int) -> bool:
    """Whether `flag` makes openat refuse a symlink in the middle of a path, and still opens a plain one.

    Asked of the system, not assumed: a kernel that does not know the flag ignores it (open flags are not
    checked), and would then follow every link. Any doubt answers False, and the walk is used.
    """
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-codetools-probe-") as tmp:
            os.mkdir(os.path.join(tmp, "d"))
            with open(os.path.join(tmp, "d", "f"), "wb"):
                pass
            os.symlink("d", os.path.join(tmp, "l"))
            dir_fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
            try:
                os.close(os.open("d/f", os.O_RDONLY | flag | _CLOEXEC, dir_fd=dir_fd))
                try:
                    os.close(os.open("l/f", os.O_RDONLY | flag | _CLOEXEC, dir_fd=dir_fd))
                except OSError as exc:
                    return exc.errno == errno.ELOOP
                return False
            finally:
                os.close(dir_fd)
    except OSError:
        return False


@functools.cache
def _nofollow_any() -> int | None:
    """The O_NOFOLLOW_ANY flag where this system has it and honours it (probed once), else None."""
    if sys.platform != "darwin":
        return None
    flag = getattr(os, "O_NOFOLLOW_ANY", _DARWIN_O_NOFOLLOW_ANY)
    return flag if _refuses_links_anywhere(flag) else None


def method() -> str:
    """How confined opens are made in this process: "openat2", "O_NOFOLLOW_ANY" or "walk"."""
    if use_one_call and _syscall is not None:
        return "openat2"
    if use_one_call and _nofollow_any() is not None:
        return "O_NOFOLLOW_ANY"
    return "walk"


class _Unsupported(Exception):
    """openat2 cannot answer this open (no such syscall, or the path is too long for one call)."""


def _openat2(dir_fd: int, relative: str, flags: int, mode: int) -> int:
    global use_one_call
    assert _syscall is not None
    # RESOLVE_NO_SYMLINKS covers the last component too; without O_NOFOLLOW a link there is ELOOP, not ENOTDIR.
    flags = (flags | _CLOEXEC) & ~os.O_NOFOLLOW
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE)
    name = os.fsencode(relative)
    for _ in range(_OPENAT2_RETRIES):
        fd = int(_syscall(_SYS_OPENAT2, dir_fd, name, ctypes.byref(how), ctypes.sizeof(how)))
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code == errno.EAGAIN:
            continue
        if code == errno.ENOSYS:
            use_one_call = False
            raise _Unsupported
        if code in (errno.ENAMETOOLONG, errno.E2BIG):
            raise _Unsupported
        raise OSError(code, os.strerror(code), relative)
    raise OSError(errno.EAGAIN, "the path kept changing while it was opened", relative)


def _open_nofollow_any(dir_fd: int, relative: str, flags: int, mode: int, nofollow_any: int) -> int:
    """One openat that refuses a symlink in any component (ELOOP), the last one included."""
    try:
        return os.open(relative, flags | nofollow_any | os.O_NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # over PATH_MAX (1024 bytes on macOS): the walk takes it
            raise _Unsupported from None
        raise _explain(exc, relative, dir_fd) from exc


def _walk(dir_fd: int, parts: list[str], flags: int, mode: int) -> int:
    """Open `parts` below `dir_fd` one component at a time, none of them a symlink."""
    current = dir_fd
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _WALK_FLAGS, dir_fd=current)
            except OSError as exc:
                raise _explain(exc, part, current) from exc
            if current != dir_fd:
                os.close(current)
            current = child
            if not stat.S_ISDIR(os.fstat(current).st_mode):  # O_PATH with O_NOFOLLOW could name a link
                raise OSError(errno.ELOOP, "a component is not a folder", part)
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | _CLOEXEC, mode, dir_fd=current)
        except OSError as exc:
            raise _explain(exc, parts[-1], current) from exc
    finally:
        if current != dir_fd:
            os.close(current)


def _explain(exc: OSError, part: str, dir_fd: int) -> OSError:
    """O_DIRECTORY meeting a symlink says ENOTDIR; say ELOOP, as openat2 does, so both read the same."""
    if exc.errno == errno.ENOTDIR:
        try:
            if stat.S_ISLNK(os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return OSError(errno.ELOOP, os.strerror(errno.ELOOP), part)
        except OSError:
            pass
    return exc


def open_root(root: Path, workspace: Workspace) -> int:
    """A descriptor of a root (O_PATH), checked to be the very folder the server started with.

    Raises:
        PermissionDeniedError: the root is gone or was replaced by another folder.
    """
    try:
        fd = os.open(root, _PATH | os.O_DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise PermissionDeniedError(f"Cannot open the workspace root {root}: {exc.strerror}.") from exc
    try:
        _refuse_replaced_root(root, os.fstat(fd), workspace)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refuse_replaced_root(root: Path, st: os.stat_result, workspace: Workspace) -> None:
    if workspace.identity(root) != (st.st_dev, st.st_ino):
        raise PermissionDeniedError(
            f"The workspace root {root} was replaced by another folder since the server started. "
            "Restart the server to use the new folder."
        )


def open_beneath(path: Path, workspace: Workspace, flags: int, mode: int = 0o600, *, for_read: bool = False) -> int:
    """Open the real path `path` from its root's descriptor, refusing a symlink in any component.

    Raises:
        PermissionDeniedError: `path` lies in no root (or, with `for_read`, no readable folder).
        OSError: the open failed; ELOOP or EXDEV mean a symlink was met (see `open_error`).
    """
    root = workspace.root_of(path, for_read=for_read)
    if root is None:
        raise PermissionDeniedError(f"Access denied: {path} is outside the workspace roots.")
    relative = _below(str(path), str(root))
    root_fd = open_root(root, workspace)
    try:
        return open_below(root_fd, relative, flags, mode)
    finally:
        os.close(root_fd)


def _below(path: str, root: str) -> str:
    """`path` relative to `root`, which holds it (both real paths); "." for the root itself.

    String slicing: `PurePath.relative_to` parses both paths again, and this runs on every confined open.
    """
    if path == root:
        return "."
    return path[len(root) :].lstrip(os.sep)


def open_below(dir_fd: int, relative: str, flags: int, mode: int = 0o600) -> int:
    """Open `relative` (a plain path: no `..`, no empty part) below the folder `dir_fd`, no symlink on the way.

    The one implementation behind every confined open: openat2 or O_NOFOLLOW_ANY where the system has
    one (see `method`), else the walk.

    Raises:
        PermissionDeniedError: `relative` is not a plain relative path.
        OSError: the open failed; ELOOP or EXDEV mean a symlink was met.
    """
    parts = relative.split("/")
    if relative.startswith("/") or any(part in ("", "..") for part in parts) or ("." in parts and relative != "."):
        raise PermissionDeniedError(f"Access denied: {relative} is not a plain path below its folder.")
    if use_one_call:
        try:
            if _syscall is not None:
                return _openat2(dir_fd, relative, flags, mode)
            nofollow_any = _nofollow_any()
            if nofollow_any is not None:
                return _open_nofollow_any(dir_fd, relative, flags, mode, nofollow_any)
        except _Unsupported:
            pass
    return _walk(dir_fd, parts, flags, mode)


def is_link_error(exc: OSError) -> bool:
    """The open met a symlink (or a way out of the root) where the checked path had a plain folder or file."""
    return exc.errno in (errno.ELOOP, errno.EXDEV)


def open_error(exc: OSError, shown: str, what: str = "open") -> Exception:
    """The tool error for a failed confined open: a symlink met is a refusal, a missing file is missing."""
    if is_link_error(exc):
        return PermissionDeniedError(
            f"Access denied: {shown} (or a folder on the way to it) was replaced by a symlink after it was checked. "
            "Nothing outside the workspace roots was touched; try again once the path is settled."
        )
    if exc.errno == errno.ENOENT:
        return FileMissingError(f"File does not exist: {shown}")
    return NotAFileError(f"Cannot {what} {shown}: {exc.strerror or exc}")


def open_regular_for_read(path: Path, workspace: Workspace, shown: str) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without blocking on FIFOs or following a swapped-in link.

    Raises:
        FileStateError: missing, a directory, or not a regular file.
        PermissionDeniedError: a component became a symlink after the path was checked.
    """
    with os_errors("open", shown, missing=f"File does not exist: {shown}"):
        st = os.stat(path)
    refuse_non_regular(st, shown)
    try:
        fd = open_beneath(path, workspace, os.O_RDONLY | os.O_NONBLOCK, for_read=True)
    except OSError as exc:
        raise open_error(exc, shown) from exc
    try:
        st = os.fstat(fd)
        refuse_non_regular(st, shown)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_pinned_for_read(pinned: Pinned, path: Path, workspace: Workspace, shown: str) -> tuple[int, os.stat_result]:
    """Open for reading the very file the resolver held at `path` (see `realpaths`): no path is walked again.

    The resolver found the held file at `path`, inside a root; the root must still be the folder the
    server started with, as for every confined open.

    Raises:
        FileStateError: a directory, or not a regular file.
        PermissionDeniedError: `path` lies in no root, or its root was replaced.
    """
    root = workspace.root_of(path, for_read=True)
    if root is None:
        raise PermissionDeniedError(f"Access denied: {path} is outside the workspace roots.")
    with os_errors("open", shown):
        root_st = os.stat(root)
    _refuse_replaced_root(root, root_st, workspace)
    refuse_non_regular(pinned.st, shown)  # before any open: a FIFO or a device is never opened
    with os_errors("open", shown, missing=f"File does not exist: {shown}"):
        fd = open_pinned(pinned, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (pinned.st.st_dev, pinned.st.st_ino):  # the kernel's promise, checked
            raise PermissionDeniedError(f"Access denied: {shown} changed while it was opened. Try again.")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def refuse_non_regular(st: os.stat_result, shown: str) -> None:
    """Refuse a folder, FIFO, socket or device, naming the kind and the tool to use instead."""
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


def open_checked_dir(folder: Path, workspace: Workspace, shown: str, *, for_read: bool = False) -> int:
    """Open a folder inside the roots (readable, for *at-style calls) with no symlink on the way."""
    try:
        return open_beneath(folder, workspace, _DIR_FLAGS, for_read=for_read)
    except OSError as exc:
        if is_link_error(exc):
            raise PermissionDeniedError(
                f"Access denied: a folder on the way to {shown} was replaced by a symlink after it was checked. "
                "Nothing was written."
            ) from None
        raise tool_error_from_os(exc, "open folder", shown) from exc


def open_child_dir(name: str, dir_fd: int, shown: str) -> int:
    """Open the folder `name` inside the folder `dir_fd`: one component, never a symlink."""
    if "/" in name or name in ("", ".", ".."):
        raise PermissionDeniedError(f"Access denied: {name!r} is not a plain folder name (on the way to {shown}).")
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        exc = _explain(exc, name, dir_fd)
        if is_link_error(exc):
            raise PermissionDeniedError(
                f"Access denied: a folder on the way to {shown} was replaced by a symlink after it was checked. "
                "Nothing was written."
            ) from None
        raise NotAFileError(f"Cannot open a folder on the way to {shown}: {exc.strerror}") from exc


def open_parent_dir(path: Path, workspace: Workspace, shown: str) -> int:
    """Open the folder that will hold `path`, checked to be inside the roots, for *at-style writes."""
    return open_checked_dir(path.parent, workspace, shown)
