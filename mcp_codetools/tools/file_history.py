"""FileHistory: list the versions this session's writes replaced, and restore one (itself undoable)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Literal

from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import ExecutionError, FileChangedError, InvalidInputError, PermissionDeniedError, os_errors
from mcp_codetools.files.editing import COMMITS, HARD_LINKS_WRITE_THROUGH, read_whole
from mcp_codetools.files.history import HistoryEntry
from mcp_codetools.files.opening import open_parent_dir
from mcp_codetools.files.stamps import FileStamp, digest_bytes
from mcp_codetools.files.writes import ensure_parent, write_atomic
from mcp_codetools.session import CodeSession
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


class FileHistoryInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    action: Literal["list", "restore"] = Field(description="list versions, or restore one.")
    file_path: str | None = Field(default=None, description="The file (list: omit to list every changed file).")
    version: int | None = Field(default=None, ge=1, description="restore: the version number that list shows.")
    force: bool = Field(default=False, description="restore even if the file changed outside this session.")


class FileHistoryTool(Tool[FileHistoryInput, None]):
    """FileHistory: list the versions this session's writes replaced, or put one back."""

    name = "FileHistory"
    title = "File history (undo)"
    description = (
        "Undo for this session's edits. list: the versions Edit, MultiEdit, NotebookEdit and Write replaced "
        "(time, size, which call). restore: put a version back; the restore is recorded too, so it can be undone. "
        "A file changed outside this session since is not overwritten unless force is true."
    )
    input_model = FileHistoryInput
    read_only = False
    destructive = True
    idempotent = False
    path_fields = ("file_path",)

    @override
    def is_read_only(self, args: FileHistoryInput) -> bool:
        return args.action == "list"

    @override
    def is_concurrency_safe(self, args: FileHistoryInput) -> bool:
        return args.action == "list"

    @override
    async def call(self, args: FileHistoryInput, ctx: CallContext, prepared: None) -> ToolOutput:
        path = ctx.paths.get("file_path")
        if args.action == "list":
            return _list(ctx.session, path)
        if path is None or args.version is None:
            raise InvalidInputError("restore needs file_path and version (see action=list for the versions).")
        return _restore(ctx.session, path, args.version, args.force)


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def _size(entry: HistoryEntry) -> str:
    return f"{entry.size:,} bytes" if entry.size is not None else "did not exist"


def _list(session: CodeSession, path: Path | None) -> ToolOutput:
    history = session.history
    if path is None:
        by_path: dict[Path, list[HistoryEntry]] = {}
        for entry in history.entries():
            by_path.setdefault(entry.path, []).append(entry)
        if not by_path:
            return ToolOutput("No file has been changed in this session.", meta={"files": 0})
        lines = ["Files changed in this session (versions kept, last change):"]
        for changed, entries in by_path.items():
            last = entries[-1]
            lines.append(f"  {changed}: {len(entries)} · {last.replaced_by} at {_clock(last.replaced_at)}")
        lines.append("List one file's versions with action=list and its file_path.")
        return ToolOutput("\n".join(lines), meta={"files": len(by_path)})
    entries = history.entries(path)
    if not entries:
        return ToolOutput(
            f"No versions of {path} are recorded in this session.", meta={"path": str(path), "versions": 0}
        )
    lines = [f"Versions of {path} (oldest first):"]
    made = "as found before the first recorded change"
    for entry in entries:
        kept = "" if entry.kept else " · too large, not kept"
        lines.append(
            f"  version {entry.number} · {_size(entry)} · {made} · replaced by {entry.replaced_by} "
            f"at {_clock(entry.replaced_at)}{kept}"
        )
        made = f"written by {entry.replaced_by} at {_clock(entry.replaced_at)}"
    try:
        now = f"{os.stat(path).st_size:,} bytes"
    except OSError:
        now = "does not exist"
    lines.append(f"  now · {now} · {made}")
    lines.append("Restore one with action=restore, this file_path and its version number.")
    return ToolOutput(
        "\n".join(lines),
        meta={"path": str(path), "versions": [e.number for e in entries], "dropped": history.dropped},
    )


def _restore(session: CodeSession, path: Path, number: int, force: bool) -> ToolOutput:
    history = session.history
    entry = next((e for e in history.entries(path) if e.number == number), None)
    if entry is None:
        kept = ", ".join(str(e.number) for e in history.entries(path)) or "none"
        raise InvalidInputError(f"{path} has no version {number} in this session's history (versions kept: {kept}).")
    try:
        content = history.content(entry)
    except LookupError as exc:
        raise ExecutionError(f"Cannot restore version {number} of {path}: {exc}.") from exc
    # The writing tools look again and write in a worker thread under COMMITS: held from this look to the
    # write, so none of their writes lands between (blocking the loop for at most one write in progress).
    with COMMITS:
        return _put_back(session, path, number, content, force)


def _put_back(session: CodeSession, path: Path, number: int, content: bytes | None, force: bool) -> ToolOutput:
    history = session.history
    current, st = _current(session, path)
    if not force and not _known(session, path, current, st):
        raise FileChangedError(
            f"{path} changed outside this session since its last Read or write, so restoring version {number} "
            "would overwrite changes nobody here has seen. Read it to look first, or pass force=true."
        )
    if st is not None and st.st_nlink > 1 and session.settings.hard_links != HARD_LINKS_WRITE_THROUGH:
        raise PermissionDeniedError(
            f"Refused: {path} has {st.st_nlink} hard links, so it also has other names, which may lie outside the "
            "workspace roots. It was left unchanged (the server's hard_links setting decides this)."
        )
    if current == content:
        return ToolOutput(f"{path} already holds version {number}; nothing was written.", meta={"path": str(path)})
    made_by = f"FileHistory restore of version {number}"
    # What the restore replaces is recorded once the restore is done, so a failed one leaves no version.
    if content is None:
        # Through a descriptor of the folder checked inside the roots, like every write: a folder on the
        # way swapped for a symlink cannot carry the removal outside them.
        dfd = open_parent_dir(path, session.workspace, str(path))
        try:
            with os_errors("write", path):
                os.unlink(path.name, dir_fd=dfd)
        finally:
            os.close(dfd)
        history.remember(path, current, made_by=made_by)
        session.ledger.forget(path)
        done = f"Restored version {number} of {path}: the file did not exist then, so it was removed."
    else:
        if st is None:
            ensure_parent(path, session.workspace)
        stamp = write_atomic(path, content, session.workspace, st)
        history.remember(path, current, made_by=made_by)
        session.ledger.record_write(path, stamp)
        done = f"Restored version {number} of {path} ({len(content):,} bytes)."
    return ToolOutput(
        done + " The version it replaced was recorded; list the history to undo this restore.",
        meta={"path": str(path), "restored": number},
    )


def _current(session: CodeSession, path: Path) -> tuple[bytes | None, os.stat_result | None]:
    if not os.path.lexists(path):
        return None, None
    return read_whole(path, session.workspace)


def _known(session: CodeSession, path: Path, current: bytes | None, st: os.stat_result | None) -> bool:
    """Whether the file is as this session last saw or left it (Read, or one of our writes)."""
    record = session.ledger.get(path)
    if current is None or st is None:
        return record is None
    if record is None:
        return False
    return record.stamp.same_file_state(FileStamp(st.st_mtime_ns, st.st_size, digest_bytes(current)))
