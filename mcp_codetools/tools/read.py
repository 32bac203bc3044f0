"""Read: a numbered view of a text file, paged so a result never outgrows the model's budget."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import BinaryFileError, FileMissingError, InvalidInputError, os_errors, tool_error_from_os
from mcp_codetools.files.opening import open_pinned_for_read, open_regular_for_read
from mcp_codetools.files.refusals import missing_file_error, unreadable_error
from mcp_codetools.files.rich import Kind, RichLimits, read_rich, rich_kind
from mcp_codetools.files.stamps import FileStamp
from mcp_codetools.files.text import CUT_MARK, SAMPLE_BYTES, BinaryContentError, long_line_note, sniff
from mcp_codetools.files.view import WHOLE_FILE_BYTES, View, read_view
from mcp_codetools.session import CodeSession
from mcp_codetools.tools.base import CallContext, ImagePart, Tool, ToolInput, ToolOutput

_NOTICE_RESERVE = 600


class ReadInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    file_path: str = Field(description="Absolute path, or relative to the working directory.")
    offset: int | None = Field(
        default=None,
        ge=0,
        description="Line number to start at (1-based; 0 reads as 1). Use with limit for large files.",
    )
    limit: int | None = Field(default=None, gt=0, description="Number of lines to read (default {read_default_lines}).")
    pages: str | None = Field(
        default=None,
        max_length=200,
        description='PDF pages, e.g. "3", "1-5", "2,4-6" (at most {pdf_max_pages} a call).',
    )


class ReadTool(Tool[ReadInput]):
    """Read: a numbered page of a text file (or an image, PDF pages, a notebook), recorded for Edit and Write."""

    name = "Read"
    title = "Read file"
    description = (
        "Read a text file. Returns lines as `N<TAB>text`, numbered from 1, up to {read_default_lines} lines by "
        "default; use offset and limit to page through larger files (a result that would be too long is cut, "
        "and says which offset to read next). Lines over 2000 characters are cut. Read a file before you Edit or "
        "Write it. Re-reading an unchanged range returns a short notice instead of the same text. "
        "Images (PNG, JPEG, GIF, WebP) are shown as images, scaled down if large. PDFs: text per page "
        "(pages without text as images); over {pdf_pages_without_range} pages, pass pages. Notebooks (.ipynb): "
        "cells with outputs; offset and limit count cells."
    )
    input_model = ReadInput
    read_only = True
    destructive = False
    idempotent = True
    path_fields = ("file_path",)
    reads_pinned = True
    reads_files = True
    writes_files = False

    @override
    def is_concurrency_safe(self, args: ReadInput) -> bool:
        return True

    @override
    async def call(self, args: ReadInput, ctx: CallContext, prepared: None) -> ToolOutput:
        path = ctx.paths["file_path"]
        session = ctx.session
        first = max(args.offset or 1, 1)
        max_lines = args.limit or session.settings.read_default_lines
        budget = session.settings.max_result_chars - _NOTICE_RESERVE

        pinned = ctx.pinned.pop("file_path", None)
        try:
            if pinned is not None:
                fd, st = open_pinned_for_read(pinned, path, session.workspace, str(path))
            else:
                fd, st = open_regular_for_read(path, session.workspace, str(path))
        except FileMissingError:
            if os.path.lexists(path):
                raise  # a dangling link: that, not a spelling, is what to report
            raise missing_file_error(path, session.cwd, session.workspace) from None
        finally:
            if pinned is not None:
                pinned.close()
        try:
            with os_errors("read", path):
                head = os.pread(fd, SAMPLE_BYTES, 0)
            kind = rich_kind(path, head)
            if kind is not None or args.pages is not None:
                return await _read_rich(kind, fd, st, head, path, args, ctx)
            previous = session.ledger.get(path)
            if (
                previous is not None
                and not previous.by_write
                and not previous.partial
                and not previous.served_unchanged
                and previous.offset == first
                and previous.limit == args.limit
                and previous.stamp.same_metadata(st)
            ):
                ctx.defer(lambda: _mark_served(session, path))
                return ToolOutput(
                    f"File unchanged since your last Read of this range: {path}. Refer to that earlier result. "
                    "If it is no longer available to you, call Read again and the content will be returned.",
                    meta={"path": str(path), "unchanged": True},
                )
            try:
                fmt = sniff(head, whole=st.st_size <= SAMPLE_BYTES)
            except BinaryContentError as exc:
                raise unreadable_error(path, exc) from exc

            # A read that came back short reached the end: the sample is the whole file, no second read needed.
            whole = head if len(head) < SAMPLE_BYTES else None

            def load() -> View:
                return read_view(
                    fd,
                    st,
                    fmt,
                    path,
                    first=first,
                    max_lines=max_lines,
                    budget=budget,
                    cache=session.line_index,
                    whole=whole,
                )

            try:
                # Small files are cheaper read on the loop than the thread hop; large ones must not stall it.
                view = load() if st.st_size <= WHOLE_FILE_BYTES else await anyio.to_thread.run_sync(load)
            except UnicodeDecodeError as exc:
                raise BinaryFileError(
                    f"Cannot read {path}: it is not valid {fmt.encoding.upper()} ({exc.reason})."
                ) from None
            except OSError as exc:
                raise tool_error_from_os(exc, "read", path) from exc
        finally:
            os.close(fd)

        stamp = FileStamp(st.st_mtime_ns, st.st_size, view.digest, st.st_ctime_ns)
        partial = view.cut_by_budget
        ctx.defer(
            lambda: session.ledger.record_read(
                path,
                stamp,
                offset=first,
                limit=args.limit,
                first=first,
                last=view.last,
                total_lines=view.total_lines,
                partial=partial,
            )
        )
        text = _render(path, view, first, max_lines, args.limit is not None) + _links_note(st)
        return ToolOutput(text, meta=_meta(path, view))


def _links_note(st: os.stat_result) -> str:
    """A file with several hard links has other names, maybe outside the roots: Edit and Write refuse it."""
    if st.st_nlink <= 1:
        return ""
    return (
        f"\n(Note: this file has {st.st_nlink} hard links: the same file also has other names, which may lie "
        "outside the workspace. Edit and Write refuse it unless the server allows writing through hard links.)"
    )


async def _read_rich(
    kind: Kind | None, fd: int, st: os.stat_result, head: bytes, path: Path, args: ReadInput, ctx: CallContext
) -> ToolOutput:
    """Images, PDFs and notebooks: read off the event loop, recorded in the ledger like text."""
    if kind is None or (kind != "pdf" and args.pages is not None):
        raise InvalidInputError(f"pages applies to PDF files only; {path} is not a PDF. Use offset and limit.")
    session = ctx.session
    first = max(args.offset or 1, 1)
    limits = RichLimits.from_settings(session.settings)
    budget = session.settings.max_result_chars - _NOTICE_RESERVE
    with os_errors("read", path):
        view = await anyio.to_thread.run_sync(
            lambda: read_rich(
                kind,
                fd,
                st,
                path,
                head,
                pages=args.pages,
                first=first,
                max_cells=args.limit,
                limits=limits,
                budget=budget,
            )
        )
    stamp = FileStamp(st.st_mtime_ns, st.st_size, view.digest, st.st_ctime_ns)
    ctx.defer(
        lambda: session.ledger.record_read(
            path, stamp, offset=first, limit=args.limit, first=1, last=0, total_lines=0, partial=not view.complete
        )
    )
    text, images, trailing = view.split()
    return ToolOutput(text, meta=view.meta, images=[ImagePart(i.data, i.mime_type) for i in images], trailing=trailing)


def _mark_served(session: CodeSession, path: Path) -> None:
    record = session.ledger.get(path)
    if record is not None:
        record.served_unchanged = True


def _render(path: Path, view: View, first: int, max_lines: int, limit_given: bool) -> str:
    total = view.total_lines
    if total == 0:
        return f"(The file {path} exists but is empty: 0 lines.)"
    if not view.numbered:
        return (
            f"(The file {path} has {total} line{'s' if total != 1 else ''}; offset {first} is past its end. "
            f"Use an offset from 1 to {total}.)"
        )
    parts: list[str] = []
    if view.fmt.encoding not in ("utf-8",) or view.fmt.bom:
        note = "not valid UTF-8, shown as latin-1" if view.fmt.encoding == "latin-1" else view.fmt.describe()
        parts.append(f"(Encoding: {note}. Edit and Write keep it.)")
    body = "\n".join(view.numbered)
    parts.append(body)
    shown = len(view.numbered)
    if CUT_MARK in body:  # one search of the text instead of one per line (a mark never holds a newline)
        parts.extend(long_line_note(path, view.numbered))
    if view.cut_by_budget:
        parts.append(
            f"\n[Partial view: lines {view.first}-{view.last} of {total}; the rest did not fit in one result. "
            f"Call Read with offset={view.last + 1} limit={shown} for the next part, or Grep for a specific section.]"
        )
    elif view.last < total and not limit_given:
        parts.append(
            f"\n[Showing lines {view.first}-{view.last} of {total}. "
            f"Call Read with offset={view.last + 1} to read more.]"
        )
    return "\n".join(parts)


def _meta(path: Path, view: View) -> dict[str, object]:
    meta: dict[str, object] = {
        "path": str(path),
        "startLine": view.first,
        "numLines": len(view.numbered),
        "totalLines": view.total_lines,
        "encoding": view.fmt.encoding,
        "bom": bool(view.fmt.bom),
        "newline": "crlf" if view.fmt.newline == "\r\n" else "lf",
        "truncated": view.cut_by_budget,
    }
    if view.last < view.total_lines and view.numbered:
        meta["nextOffset"] = view.last + 1
    return meta
