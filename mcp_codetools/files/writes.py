"""Writes that a crash cannot leave half done.

A write goes to a temporary file in the target's own folder, is flushed to disk, and is renamed over
the target, all through a descriptor of that folder that was checked to lie inside the roots. The
target's mode bits are kept. A file with several hard links is written in place instead, so every
link keeps seeing the same file.

A writer killed mid-write (SIGKILL, power loss) leaves its temporary file, `.<name>.<nonce><tag>.tmp`; the
next write of the same file removes such leftovers (`sweep_stale_temps`). The tag is a digest of the name and
the nonce (`temp_name`), so the sweep proves a file is one of ours before touching it: a user's
`.notes.txt.abcdefabcdef.tmp` merely looks like one and is never removed. A writer holds an exclusive `flock`
on its temporary file for as long as it lives, which the kernel drops when the process dies, however it
dies; so a temp file is taken as stale only when no one holds its lock and it is older than
`STALE_AFTER_S`, which covers the instant between a writer's create and its lock, and writers on another
machine sharing the folder where locks do not cross machines (an in-flight write takes well under a
second, a big one on a slow disk seconds). Without locks (a filesystem that refuses them), a leftover
must be `STALE_UNLOCKED_S` old.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import stat
import sys
import time
from pathlib import Path

from mcp_codetools.errors import FileReadOnlyError, InvalidInputError, os_errors
from mcp_codetools.files.opening import open_checked_dir, open_child_dir, open_parent_dir
from mcp_codetools.files.paths import Workspace
from mcp_codetools.files.stamps import FileStamp, digest_bytes

if sys.platform != "win32":
    import fcntl

STALE_AFTER_S = 60.0
"""Age (since its last change) past which an unlocked temporary file of a write is taken as left by a dead writer."""
STALE_UNLOCKED_S = 3600.0
"""The same where the filesystem refuses locks, so a live writer cannot be told from a dead one."""
_NONCE_HEX = 8
_TAG_HEX = 8
_TAG_DOMAIN = b"mcp-codetools atomic write\0"


def _tag(name: str, nonce: str) -> str:
    """What marks a temp name as ours: 32 bits a file named by anyone else matches once in 4 billion."""
    digest = hashlib.sha256(_TAG_DOMAIN + name.encode("utf-8", "surrogateescape") + b"\0" + nonce.encode())
    return digest.hexdigest()[:_TAG_HEX]


def temp_name(name: str) -> str:
    """A new temporary sibling's name for a write of `name`: `.<name>.<nonce><tag>.tmp` (32 random bits)."""
    nonce = secrets.token_hex(_NONCE_HEX // 2)
    return f".{name}.{nonce}{_tag(name, nonce)}.tmp"


def ensure_parent(path: Path, workspace: Workspace) -> None:
    """Create missing parent folders one step at a time, each through a checked folder descriptor.

    Creating by path would let a folder swapped for a symlink mid-way carry the new folders outside
    the roots; `mkdir(name, dir_fd=...)` from a descriptor opened beneath a root cannot.
    """
    missing: list[str] = []
    parent = path.parent
    while not os.path.lexists(parent):  # lexists answers False for ENAMETOOLONG rather than raising
        missing.append(parent.name)
        parent = parent.parent
    if not missing:
        return
    dfd = open_checked_dir(parent, workspace, str(path))
    try:
        for name in reversed(missing):
            with os_errors("create folder", f"{name} for {path}"), contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=dfd)
            child = open_child_dir(name, dfd, str(path))
            os.close(dfd)
            dfd = child
    finally:
        os.close(dfd)


def hard_link_note(st: os.stat_result | None) -> str:
    """A file with other hard links was written in place: every link, wherever it is, sees the change."""
    if st is None or st.st_nlink <= 1:
        return ""
    return f"\n(Note: this file has {st.st_nlink} hard links; it was written in place, so all of them show the change.)"


def encode_content(content: str, encoding: str, errors: str) -> bytes:
    """Text as the file stores it; refuse characters the file's encoding cannot hold.

    Raises:
        InvalidInputError: a character has no form in `encoding`.
    """
    try:
        return content.encode(encoding, errors)
    except UnicodeEncodeError as exc:
        bad = content[exc.start : exc.start + 1]
        raise InvalidInputError(
            f"The text has a character ({bad!r}) that the file's encoding ({encoding}) cannot hold. "
            "Nothing was written; use characters the encoding has, or rewrite the file as UTF-8."
        ) from None


def refuse_read_only(st: os.stat_result, path: Path) -> None:
    """Refuse a file no write bit allows, rather than writing over its mode."""
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise FileReadOnlyError(
            f"{path} is read-only (mode {stat.filemode(st.st_mode)}). It was left unchanged; "
            "change its permissions first if it really should be written."
        )


def write_atomic(path: Path, data: bytes, workspace: Workspace, existing: os.stat_result | None) -> FileStamp:
    """Write `data` to `path` crash-safely and return the new stamp.

    Raises:
        ExecutionError: the write failed (disk full, permission denied); the original is intact
            unless it was written in place.
    """
    dfd = open_parent_dir(path, workspace, str(path))
    try:
        sweep_stale_temps(path.name, dfd)
        if existing is not None and existing.st_nlink > 1:
            _write_in_place(path.name, data, dfd)
        else:
            _write_replace(path.name, data, dfd, existing)
        with contextlib.suppress(OSError):
            os.fsync(dfd)
        st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
    finally:
        os.close(dfd)
    return FileStamp(st.st_mtime_ns, st.st_size, digest_bytes(data), st.st_ctime_ns)


def remove_file(path: Path, workspace: Workspace) -> None:
    """Remove the file at `path` through a descriptor of its folder checked inside the roots.

    A folder on the way swapped for a symlink cannot carry the removal outside them.

    Raises:
        ExecutionError: it could not be removed.
    """
    dfd = open_parent_dir(path, workspace, str(path))
    try:
        with os_errors("write", path):
            os.unlink(path.name, dir_fd=dfd)
        with contextlib.suppress(OSError):
            os.fsync(dfd)
    finally:
        os.close(dfd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_replace(name: str, data: bytes, dfd: int, existing: os.stat_result | None) -> None:
    temp = temp_name(name)
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o644
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with os_errors("write", name):
        fd = os.open(temp, flags, 0o600, dir_fd=dfd)
        try:
            # Held until the file is renamed: a sweep by another writer of this file sees it is in use.
            _lock(fd)
            _write_all(fd, data)
            os.fsync(fd)
            os.fchmod(fd, mode)
            if existing is not None:
                with contextlib.suppress(OSError):
                    os.fchown(fd, existing.st_uid, existing.st_gid)
            os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dfd)
            raise
        finally:
            os.close(fd)


def sweep_stale_temps(name: str, dfd: int, *, now: float | None = None) -> list[str]:
    """Remove the temporary files that dead writers of `name` left in the folder `dfd`; returns their names.

    Only names `temp_name` made for `name` (the tag checked: a user's file that looks alike is not one),
    only regular files of this user with one link, only unlocked and old enough (see the module doc), and
    all through `dfd`, never a path. Any doubt (a file that changes while looked at) keeps the file.
    """
    pattern = re.compile(
        re.escape(f".{name}.") + f"([0-9a-f]{{{_NONCE_HEX}}})([0-9a-f]{{{_TAG_HEX}}})" + re.escape(".tmp")
    )
    try:
        with os.scandir(dfd) as entries:
            matched = (pattern.fullmatch(entry.name) for entry in entries)
            found = [m.string for m in matched if m is not None and _tag(name, m.group(1)) == m.group(2)]
    except OSError:
        return []
    when = time.time() if now is None else now
    removed: list[str] = []
    for temp in found:
        with contextlib.suppress(OSError):
            if _remove_if_stale(temp, dfd, when):
                removed.append(temp)
    return removed


def _remove_if_stale(temp: str, dfd: int, now: float) -> bool:
    st = os.stat(temp, dir_fd=dfd, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_nlink != 1:
        return False
    age = now - max(st.st_mtime, st.st_ctime)
    if age < STALE_AFTER_S:
        return False
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temp, flags, dir_fd=dfd)
    try:
        if not _same(os.fstat(fd), st):
            return False
        locked = _lock(fd)
        if locked is False or (locked is None and age < STALE_UNLOCKED_S):
            return False  # a live writer holds it, or may
        # Still the file looked at, under the lock: no writer can be between its create and its lock now.
        if not _same(os.stat(temp, dir_fd=dfd, follow_symlinks=False), st):
            return False
        os.unlink(temp, dir_fd=dfd)
        return True
    finally:
        os.close(fd)


def _lock(fd: int) -> bool | None:
    """Take `fd`'s exclusive lock without waiting: False when another holds it, None when locks are not had."""
    if sys.platform == "win32":
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) and stat.S_ISREG(a.st_mode)


def _write_in_place(name: str, data: bytes, dfd: int) -> None:
    flags = os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with os_errors("write", name):
        fd = os.open(name, flags, dir_fd=dfd)
    try:
        # Grow first, so running out of space fails before any byte of the old content is lost.
        with os_errors("write in place", name):
            old_size = os.fstat(fd).st_size
            if len(data) > old_size:
                os.posix_fallocate(fd, 0, len(data))
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
    finally:
        os.close(fd)
