"""FileHistory: list the versions this session's writes replaced, and restore one (itself undoable)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio.to_thread
from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import ExecutionError, FileChangedError, InvalidInputError
from mcp_codetools.files.editing import Loaded, commit_write, read_whole, refuse_hard_links
from mcp_codetools.files.history import HistoryEntry
from mcp_codetools.files.paths import Workspace
from mcp_codetools.files.stamps import FileStamp, digest_bytes
from mcp_codetools.files.text import BinaryContentError, TextFormat, detect
from mcp_codetools.files.writes import ensure_parent
from mcp_codetools.session import CodeSession
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


class FileHistoryInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    action: Literal["list", "restore"] = Field(description="list versions, or restore one.")
    file_path: str | None = Field(default=None, description="The file (list: omit to list every changed file).")
    version: int | None = Field(default=None, ge=1, description="restore: the version number that list shows.")
    force: bool = Field(default=False, description="restore even if the file changed outside this session.")


@dataclass(frozen=True, slots=True)
class _Restore:
    """A restore as validate_input checked it: the version's bytes (None: remove) and the file now (None: absent)."""

    path: Path
    number: int
    content: bytes | None
    current: Loaded | None


class FileHistoryTool(Tool[FileHistoryInput, _Restore | None]):
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
    reads_files = False
    writes_files = True

    @override
    def is_read_only(self, args: FileHistoryInput) -> bool:
        return args.action == "list"

    @override
    def is_concurrency_safe(self, args: FileHistoryInput) -> bool:
        return args.action == "list"

    @override
    async def validate_input(self, args: FileHistoryInput, ctx: CallContext) -> _Restore | None:
        """For a restore: the version's content, and the file as it is now, checked as Edit checks it."""
        if args.action == "list":
            return None
        path = ctx.paths.get("file_path")
        if path is None or args.version is None:
            raise InvalidInputError("restore needs file_path and version (see action=list for the versions).")
        session = ctx.session
        history = session.history
        number = args.version
        entry = next((e for e in history.entries(path) if e.number == number), None)
        if entry is None:
            kept = ", ".join(str(e.number) for e in history.entries(path)) or "none"
            raise InvalidInputError(
                f"{path} has no version {number} in this session's history (versions kept: {kept})."
            )
        try:  # both off the loop: a version and the file may each be megabytes
            content = await anyio.to_thread.run_sync(history.content, entry)
        except LookupError as exc:
            raise ExecutionError(f"Cannot restore version {number} of {path}: {exc}.") from exc
        current = await anyio.to_thread.run_sync(_load_current, path, session.workspace)
        if not args.force and not _known(session, path, current):
            raise FileChangedError(
                f"{path} changed outside this session since its last Read or write, so restoring version {number} "
                "would overwrite changes nobody here has seen. Read it to look first, or pass force=true."
            )
        if current is not None:
            refuse_hard_links(path, current, session.settings.hard_links)
        return _Restore(path, number, content, current)

    @override
    async def call(self, args: FileHistoryInput, ctx: CallContext, prepared: _Restore | None) -> ToolOutput:
        if prepared is None:
            return _list(ctx.session, ctx.paths.get("file_path"))
        return await _restore(ctx.session, prepared)


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


def _known(session: CodeSession, path: Path, current: Loaded | None) -> bool:
    """Whether the file is as this session last saw or left it (Read, or one of our writes)."""
    record = session.ledger.get(path)
    if current is None:
        return record is None
    if record is None:
        return False
    st = current.st
    return record.stamp.same_file_state(FileStamp(st.st_mtime_ns, st.st_size, digest_bytes(current.data)))


async def _restore(session: CodeSession, restore: _Restore) -> ToolOutput:
    """Put a version back through the one commit sequence of every writing tool (`editing.commit_write`)."""
    path, number, content, current = restore.path, restore.number, restore.content, restore.current
    if (current.data if current is not None else None) == content:
        return ToolOutput(f"{path} already holds version {number}; nothing was written.", meta={"path": str(path)})
    if content is not None and current is None:
        ensure_parent(path, session.workspace)
    await commit_write(
        path,
        content,
        current,
        workspace=session.workspace,
        history=session.history,
        ledger=session.ledger,
        made_by=f"FileHistory restore of version {number}",
    )
    if content is None:
        done = f"Restored version {number} of {path}: the file did not exist then, so it was removed."
    else:
        done = f"Restored version {number} of {path} ({len(content):,} bytes)."
    return ToolOutput(
        done + " The version it replaced was recorded; list the history to undo this restore.",
        meta={"path": str(path), "restored": number},
    )


def _load_current(path: Path, workspace: Workspace) -> Loaded | None:
    """The file as it is now, whatever its content (a restore puts bytes back, text or not); None: absent."""
    if not os.path.lexists(path):
        return None
    data, st = read_whole(path, workspace)
    try:
        fmt = detect(data)
    except BinaryContentError:
        fmt = TextFormat("latin-1")  # never used: a restore writes the version's bytes as they were kept
    return Loaded(data, st, fmt, workspace)
