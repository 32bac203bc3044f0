"""Edit: replace an exact string in a file that was Read, keeping its encoding and line endings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from mcp_codetools import matching
from mcp_codetools.errors import EditMatchError, FileStateError
from mcp_codetools.fileio import (
    encode_content,
    ensure_parent,
    hard_link_note,
    read_whole,
    refuse_read_only,
    write_atomic,
)
from mcp_codetools.fileview import digest_bytes
from mcp_codetools.session import CodeSession, FileStamp
from mcp_codetools.text import BinaryContentError, TextFormat, detect
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput
from mcp_codetools.tools.read import missing_file_error, unreadable_error

NOT_READ = "File has not been read yet. Read it first before writing to it."
MODIFIED = (
    "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."
)
UNEXPECTEDLY_MODIFIED = "File has been unexpectedly modified. Read it again before attempting to write it."


class EditInput(ToolInput):
    file_path: str = Field(description="Absolute path, or relative to the working directory.")
    old_string: str = Field(description="Exact text to replace, without Read's line-number prefixes.")
    new_string: str = Field(description="Replacement text (must differ from old_string).")
    replace_all: bool = Field(default=False, description="Replace every occurrence (default: exactly one).")


@dataclass
class Loaded:
    """A file as validate_input saw it; call re-checks that it is still so.

    UTF-8 and latin-1 files are matched as raw bytes (no decode, no re-encode: every byte outside the
    match is written back as it was); UTF-16 files are matched as decoded text.
    """

    data: bytes
    st: os.stat_result
    fmt: TextFormat
    _text: str | None = field(default=None, repr=False)

    @property
    def as_bytes(self) -> bool:
        return self.fmt.ascii_compatible

    @property
    def body(self) -> Any:
        """What matching works on: the bytes after the BOM, or the decoded text."""
        return self.data[len(self.fmt.bom) :] if self.as_bytes else self.text

    @property
    def text(self) -> str:
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
        return value.decode(self.fmt.encoding, "replace") if isinstance(value, bytes) else str(value)

    def to_file(self, body: Any) -> bytes:
        return self.fmt.bom + (
            body if isinstance(body, bytes) else encode_content(body, self.fmt.encoding, self.fmt.errors)
        )


def check_read_state(session: CodeSession, path: Path, loaded: Loaded) -> None:
    """Refuse a write to a file the model has not read, or that changed since it did (judged by content)."""
    record = session.ledger.get(path)
    if record is None:
        raise FileStateError(NOT_READ, "file_not_read")
    seen = record.stamp
    if seen.same_metadata(loaded.st):
        return
    if not seen.same_file_state(FileStamp(loaded.st.st_mtime_ns, loaded.st.st_size, digest_bytes(loaded.data))):
        raise FileStateError(MODIFIED, "file_changed_since_read")


def load_file(path: Path, session: CodeSession) -> Loaded:
    data, st = read_whole(path, session.workspace)
    try:
        fmt = detect(data)
    except BinaryContentError as exc:
        raise unreadable_error(path, exc) from None
    return Loaded(data, st, fmt)


def recheck_unchanged(path: Path, loaded: Loaded) -> None:
    """The last look before writing; the caller must not await between this and the write."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileStateError(UNEXPECTEDLY_MODIFIED, "file_changed_since_read") from None
    same = (st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino)
    if same == (loaded.st.st_mtime_ns, loaded.st.st_size, loaded.st.st_ctime_ns, loaded.st.st_ino):
        return
    try:
        with open(path, "rb") as handle:
            unchanged = handle.read() == loaded.data
    except OSError:
        unchanged = False
    if not unchanged:
        raise FileStateError(UNEXPECTEDLY_MODIFIED, "file_changed_since_read")


class EditTool(Tool[EditInput]):
    name = "Edit"
    title = "Edit file"
    description = (
        "Replace old_string with new_string in a file. Read the file first in this session; the edit is "
        "refused if it changed since. old_string must match the file exactly (whitespace included, without "
        "Read's `N<TAB>` prefixes) and occur once, unless replace_all is true. Encoding and line endings are kept."
    )
    input_model = EditInput
    read_only = False
    destructive = True
    idempotent = False
    path_fields = ("file_path",)

    async def validate_input(self, args: EditInput, ctx: CallContext) -> None:
        path = ctx.paths["file_path"]
        session = ctx.session
        if args.old_string == args.new_string:
            raise EditMatchError("No changes to make: old_string and new_string are exactly the same.", "no_change")
        if not os.path.lexists(path):
            if args.old_string == "":
                return
            raise missing_file_error(path, session)
        if path.suffix == ".ipynb":
            raise FileStateError("File is a Jupyter Notebook. Edit its JSON with Write after reading it.", "not_a_file")
        loaded = load_file(path, session)
        check_read_state(session, path, loaded)
        body = loaded.body
        if args.old_string == "":
            if loaded.text.strip():
                raise EditMatchError(
                    "Cannot create new file - file already exists. To change it, give the old_string to replace.",
                    "old_string_not_unique",
                )
            matches = [matching.Match(0, len(body))]
        else:
            old = loaded.convert(args.old_string)
            matches = matching.find_matches(body, old) if old is not None else []
            if not matches:
                raise EditMatchError(matching.not_found_message(loaded.text, args.old_string, str(path)))
            if len(matches) > 1 and not args.replace_all:
                lines = matching.lines_of(body, [m.start for m in matches[:20]])
                listed = ", ".join(str(n) for n in lines) + (" …" if len(matches) > 20 else "")
                raise EditMatchError(
                    f"Found {len(matches)} matches of the string to replace, but replace_all is false "
                    f"(at lines {listed}). To replace all occurrences, set replace_all to true. To replace only "
                    "one occurrence, please provide more context to uniquely identify the instance.",
                    "old_string_not_unique",
                )
        ctx.state["matches"] = matches
        ctx.state["loaded"] = loaded

    async def call(self, args: EditInput, ctx: CallContext) -> ToolOutput:
        path = ctx.paths["file_path"]
        session = ctx.session
        loaded: Loaded | None = ctx.state.get("loaded")
        if loaded is None:
            return create_file(path, args.new_string, ctx)
        matches: list[matching.Match] = ctx.state["matches"]
        body = loaded.body
        new = loaded.convert(matching.adapt_newlines(args.new_string, loaded.fmt.newline))
        if new is None:
            raise EditMatchError(
                f"new_string has characters the file's encoding ({loaded.fmt.encoding}) cannot hold.", "no_change"
            )
        new_body = matching.apply(body, matches, new)
        data = loaded.to_file(new_body)
        refuse_read_only(loaded.st, path)
        session.history.remember(path, loaded.data)
        recheck_unchanged(path, loaded)
        stamp = write_atomic(path, data, session.workspace, loaded.st)
        session.ledger.record_write(path, stamp)
        output = _edit_result(path, loaded, body, new_body, matches, len(new), args.replace_all)
        output.text += hard_link_note(loaded.st)
        return output


def create_file(path: Path, content: str, ctx: CallContext) -> ToolOutput:
    """Create a new file (parents included) with UTF-8 content as given."""
    session = ctx.session
    ensure_parent(path, session.workspace)
    data = encode_content(content, "utf-8", "surrogateescape")
    if os.path.lexists(path):
        raise FileStateError(UNEXPECTEDLY_MODIFIED, "file_changed_since_read")
    session.history.remember(path, None)
    stamp = write_atomic(path, data, session.workspace, None)
    session.ledger.record_write(path, stamp)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    return ToolOutput(
        f"File created successfully at: {path} ({lines} line{'s' if lines != 1 else ''}).",
        meta={"path": str(path), "type": "create", "bytes": len(data)},
    )


def _edit_result(
    path: Path,
    loaded: Loaded,
    old_body: Any,
    new_body: Any,
    matches: list[matching.Match],
    new_len: int,
    replace_all: bool,
) -> ToolOutput:
    first = matches[0]
    line = matching.line_of(old_body, first.start)  # both bodies agree up to the first match
    old_window = matching.window(old_body, first.start, first.end, line, loaded.to_display)
    new_window = matching.window(new_body, first.start, first.start + new_len, line, loaded.to_display)
    head = (
        f"The file {path} has been updated. All {len(matches)} occurrences were successfully replaced."
        if replace_all and len(matches) > 1
        else f"The file {path} has been updated successfully."
    )
    where = "first " if len(matches) > 1 else ""
    return ToolOutput(
        f"{head} Here is the result around the {where}change:\n{matching.snippet(new_window)}",
        meta={
            "path": str(path),
            "replacements": len(matches),
            "structuredPatch": [matching.structured_patch(old_window, new_window)],
        },
    )
