"""Load, check, commit: the one sequence every writing tool goes through (FileHistory's restore included).

A file is loaded whole with its text format (`load_checked`, in validate_input); the read ledger must show
the model saw it as it is now (judged by content, so a touched-but-unchanged file passes). `commit_write`
(in call) is the rest, in one order for every tool: refuse a read-only file, look again, write, and only
once the write returned, record the version it replaced in the history and the new stamp in the ledger.
The last look and the write are one step of a worker thread, under the lock every write of the server holds.

The version the history records is the content before the write, which the `Loaded` holds since the load:
that is the staged copy, and it becomes a history version only when the write succeeded, so a call refused
at the last look or a write that failed (disk full) leaves no version that was never replaced.
"""

from __future__ import annotations

import functools
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_codetools.errors import (
    FileChangedError,
    FileMissingError,
    FileNotReadError,
    FileTooLargeError,
    NotAFileError,
    PermissionDeniedError,
    os_errors,
)
from mcp_codetools.files.history import FileHistory
from mcp_codetools.files.ledger import ReadLedger
from mcp_codetools.files.opening import open_beneath, open_regular_for_read
from mcp_codetools.files.paths import Workspace
from mcp_codetools.files.refusals import unreadable_error
from mcp_codetools.files.stamps import FileStamp, digest_bytes
from mcp_codetools.files.text import BinaryContentError, TextFormat, detect
from mcp_codetools.files.writes import encode_content, ensure_parent, refuse_read_only, remove_file, write_atomic

MAX_EDIT_BYTES = 1024 * 1024 * 1024

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = (
    "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."
)
UNEXPECTEDLY_MODIFIED = "File has been unexpectedly modified. Read it again before attempting to write it."


def read_whole(path: Path, workspace: Workspace) -> tuple[bytes, os.stat_result]:
    """The bytes and stat of a regular file, refusing what is too large to edit in memory."""
    fd, st = open_regular_for_read(path, workspace, str(path))
    try:
        if st.st_size > MAX_EDIT_BYTES:
            raise FileTooLargeError(
                f"File is too large to edit ({st.st_size} bytes). The largest editable file is 1 GiB."
            )
        with os_errors("read", path):
            data = os.read(fd, st.st_size + 1)  # one read for the common case; the loop covers a growing file
            if len(data) > st.st_size:
                chunks = [data]
                while block := os.read(fd, 8 * 1024 * 1024):
                    chunks.append(block)
                data = b"".join(chunks)
            return data, os.fstat(fd)
    finally:
        os.close(fd)


@dataclass
class Loaded:
    """A file as validate_input saw it; call re-checks that it is still so.

    UTF-8 and latin-1 files are matched as raw bytes (no decode, no re-encode: every byte outside the
    match is written back as it was); UTF-16 files are matched as decoded text.
    """

    data: bytes
    st: os.stat_result
    fmt: TextFormat
    workspace: Workspace
    """Where it was loaded from: the last look before writing opens it the same confined way."""
    _text: str | None = field(default=None, repr=False)

    @property
    def as_bytes(self) -> bool:
        """Whether the file is matched as raw bytes (any encoding ASCII agrees with), not decoded text."""
        return self.fmt.ascii_compatible

    @property
    def body(self) -> Any:
        """What matching works on: the bytes after the BOM, or the decoded text."""
        return self.data[len(self.fmt.bom) :] if self.as_bytes else self.text

    @property
    def text(self) -> str:
        """The content decoded (after the BOM), once, on first use."""
        if self._text is None:
            self._text = self.data[len(self.fmt.bom) :].decode(self.fmt.encoding, self.fmt.errors)
        return self._text

    def convert(self, value: str) -> Any:
        """A string from the model in the form `body` has (None when the file's encoding cannot hold it)."""
        if not self.as_bytes:
            return value
        try:
            return value.encode(self.fmt.encoding, self.fmt.errors)
        except UnicodeEncodeError:
            return None

    def to_display(self, value: Any) -> str:
        """A matched piece (bytes or text) as text for the result."""
        return value.decode(self.fmt.encoding, "replace") if isinstance(value, bytes) else str(value)

    def to_file(self, body: Any) -> bytes:
        """The bytes to write for `body` (bytes or text), with the file's BOM and encoding."""
        return self.fmt.bom + (
            body if isinstance(body, bytes) else encode_content(body, self.fmt.encoding, self.fmt.errors)
        )


def check_read_state(ledger: ReadLedger, path: Path, loaded: Loaded) -> None:
    """Refuse a write to a file the model has not read, or that changed since it did (judged by content)."""
    record = ledger.get(path)
    if record is None:
        raise FileNotReadError(NOT_READ)
    seen = record.stamp
    if seen.same_metadata(loaded.st):
        return
    if not seen.same_file_state(FileStamp(loaded.st.st_mtime_ns, loaded.st.st_size, digest_bytes(loaded.data))):
        raise FileChangedError(MODIFIED)


def load_file(path: Path, workspace: Workspace) -> Loaded:
    """Read a file whole through a confined open and detect its text format.

    Raises:
        BinaryFileError: the file is not text.
    """
    data, st = read_whole(path, workspace)
    try:
        fmt = detect(data)
    except BinaryContentError as exc:
        raise unreadable_error(path, exc) from exc
    return Loaded(data, st, fmt, workspace)


def load_existing(path: Path, workspace: Workspace) -> Loaded | None:
    """The file at `path` loaded whole, or None when there is nothing at `path` to load.

    "Nothing there" is what `os.path.lexists` says, asked only when the open failed, so the usual case
    costs no extra lstat. A name that is there but cannot be opened keeps its error.
    """
    try:
        return load_file(path, workspace)
    except (FileMissingError, NotAFileError):
        if os.path.lexists(path):
            raise
        return None


def recheck_unchanged(path: Path, loaded: Loaded) -> None:
    """The last look before writing; the caller holds `COMMITS` from this to the end of the write.

    The file is opened beneath its root like every other open: a folder on the way that became a symlink,
    or a file that became one, counts as a change.
    """
    try:
        fd = open_beneath(path, loaded.workspace, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        raise FileChangedError(UNEXPECTEDLY_MODIFIED) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileChangedError(UNEXPECTEDLY_MODIFIED)
        same = (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)
        if same == (loaded.st.st_mtime_ns, loaded.st.st_size, loaded.st.st_ctime_ns, loaded.st.st_ino):
            return
        if st.st_size != len(loaded.data):
            raise FileChangedError(UNEXPECTEDLY_MODIFIED)
        os.set_blocking(fd, True)
        try:
            unchanged = _read_all(fd, len(loaded.data) + 1) == loaded.data
        except OSError:
            unchanged = False
        if not unchanged:
            raise FileChangedError(UNEXPECTEDLY_MODIFIED)
    finally:
        os.close(fd)


def _read_all(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit and (block := os.read(fd, min(limit - size, 8 * 1024 * 1024))):
        chunks.append(block)
        size += len(block)
    return b"".join(chunks)


COMMITS = threading.Lock()
"""Held from the last look to the end of the write, by every write of this server: two calls' writes of one
file cannot interleave, whichever threads they run in."""

HARD_LINKS_REFUSE = "refuse"
HARD_LINKS_WRITE_THROUGH = "write-through"


def refuse_hard_links(path: Path, loaded: Loaded, policy: str) -> None:
    """Refuse to change a file with other hard links, unless the operator allowed writing through them.

    Another name of the same file may lie outside the roots (`ln outside/secret h` inside a root), and no
    bounded check can show that every other name is inside: so by default such a file is not written.

    Raises:
        PermissionDeniedError: the file has several links and the policy is not write-through.
    """
    links = loaded.st.st_nlink
    if links <= 1 or policy == HARD_LINKS_WRITE_THROUGH:
        return
    raise PermissionDeniedError(
        f"Refused: {path} has {links} hard links, so the same file also has other names, which may lie outside "
        "the workspace roots; a change here would change them too. It was left unchanged. To edit a private copy, "
        f"break the link first (Bash: `cp -p {path} {path}.tmp && mv {path}.tmp {path}`). The server's operator can "
        "allow writing through hard links with MCP_CODETOOLS_HARD_LINKS=write-through (setting hard_links)."
    )


def load_checked(path: Path, workspace: Workspace, ledger: ReadLedger, hard_links: str) -> Loaded | None:
    """The file at `path` loaded and checked for a write (None: nothing there yet).

    Raises:
        FileNotReadError, FileChangedError: the model has not read it as it is now.
        PermissionDeniedError: it has other hard links and the operator did not allow writing through them.
    """
    loaded = load_existing(path, workspace)
    if loaded is not None:
        check_read_state(ledger, path, loaded)
        refuse_hard_links(path, loaded, hard_links)
    return loaded


async def commit_write(
    path: Path,
    data: bytes | None,
    loaded: Loaded | None,
    *,
    workspace: Workspace,
    history: FileHistory,
    ledger: ReadLedger,
    made_by: str,
) -> FileStamp | None:
    """Write `data` over the file `loaded` (None: create it), the one way every writing tool writes.

    Refuse a read-only file, look again, write crash-safely, then record what the write replaced in the
    history and the new stamp in the ledger. Nothing is recorded for a write that did not happen.
    `data` None removes the file `loaded` instead (a restore of the time before it existed), by the same steps;
    the ledger then forgets it, and None is returned.

    The last look and the write run in a worker thread (writing and syncing 20 MB takes ~90 ms, too long to
    hold every other session), in one piece under `COMMITS`, so no other write of this server comes between
    them. The thread is not abandoned on cancel, and the record follows its return with no checkpoint
    between: what is on disk is always recorded. The record stays on the event loop, where every other
    reader of the history and the ledger runs.

    Raises:
        FileChangedError: the file changed since it was loaded (or, for a create, appeared).
        FileReadOnlyError: no write bit allows writing it.
        ExecutionError: the write failed; the file is as it was.
    """
    before = loaded.data if loaded is not None else None
    try:
        stamp = await anyio.to_thread.run_sync(functools.partial(_look_again_and_write, path, data, loaded, workspace))
    except _WrittenPartWay as failed:
        # Written in place (other hard links see the same file): a write that failed part-way may have
        # changed it, so the version before it is kept to restore.
        history.remember(path, before, made_by=f"{made_by} (failed part-way; the file may be half written)")
        raise failed.error from failed.error.__cause__
    history.remember(path, before, made_by=made_by)
    if stamp is None:
        ledger.forget(path)
    else:
        ledger.record_write(path, stamp)
    return stamp


class _WrittenPartWay(Exception):
    """A failed write of a file written in place; `error` is what the call reports."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _look_again_and_write(
    path: Path, data: bytes | None, loaded: Loaded | None, workspace: Workspace
) -> FileStamp | None:
    with COMMITS:
        if loaded is None:
            if os.path.lexists(path) or data is None:
                raise FileChangedError(UNEXPECTEDLY_MODIFIED)
            return write_atomic(path, data, workspace, None)
        refuse_read_only(loaded.st, path)
        recheck_unchanged(path, loaded)
        if data is None:
            remove_file(path, workspace)
            return None
        try:
            return write_atomic(path, data, workspace, loaded.st)
        except Exception as exc:
            if loaded.st.st_nlink > 1:
                raise _WrittenPartWay(exc) from exc
            raise


async def create_file(path: Path, content: str, workspace: Workspace, history: FileHistory, ledger: ReadLedger) -> int:
    """Create a new file (parents included) with UTF-8 content as given; returns its size in bytes."""
    ensure_parent(path, workspace)
    data = encode_content(content, "utf-8", "surrogateescape")
    await commit_write(
        path, data, None, workspace=workspace, history=history, ledger=ledger, made_by="a create (Edit or Write)"
    )
    return len(data)


def count_lines(content: str) -> int:
    """Lines in `content`, counting a last line without a newline."""
    return content.count("\n") + (0 if content.endswith("\n") or not content else 1)


def created_message(path: Path, content: str) -> str:
    """The result text for a created file."""
    lines = count_lines(content)
    return f"File created successfully at: {path} ({lines} line{'s' if lines != 1 else ''})."
