"""Write: create a file, or replace one that was Read in full, keeping its encoding and line endings."""

from __future__ import annotations

from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import FileNotReadError
from mcp_codetools.files import matching
from mcp_codetools.files.editing import (
    Loaded,
    commit_write,
    count_lines,
    load_checked,
)
from mcp_codetools.files.refusals import refuse_folder_name
from mcp_codetools.files.writes import hard_link_note
from mcp_codetools.tools import edit_checks
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


class WriteInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    file_path: str = Field(description="Absolute path, or relative to the working directory.")
    content: str = Field(description="The whole new content of the file.")


class WriteTool(Tool[WriteInput, Loaded | None]):
    """Write: a file's whole content, new or replacing one read before."""

    name = "Write"
    title = "Write file"
    description = (
        "Write a whole file. A new file is created with its folders. An existing file must have been Read "
        "in full in this session and be unchanged since; prefer Edit for changes to part of a file."
    )
    input_model = WriteInput
    read_only = False
    destructive = True
    idempotent = True
    path_fields = ("file_path",)
    reads_files = False
    writes_files = True

    @override
    async def validate_input(self, args: WriteInput, ctx: CallContext) -> Loaded | None:
        """The file as loaded and checked, for call to replace; None when there is none yet: create it."""
        path = ctx.paths["file_path"]
        session = ctx.session
        loaded = load_checked(path, session.workspace, session.ledger, session.settings.hard_links)
        if loaded is None:
            refuse_folder_name(args.file_path)
            return None
        record = session.ledger.get(path)
        gaps = record.unread_ranges() if record is not None else []
        if gaps:
            listed = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in gaps[:10])
            raise FileNotReadError(
                f"File has only been read in part: lines {listed} were not read. Writing the whole file would "
                "replace text you have not seen. Read those lines first, or use Edit to change part of the file."
            )
        return loaded

    @override
    async def call(self, args: WriteInput, ctx: CallContext, loaded: Loaded | None) -> ToolOutput:
        path = ctx.paths["file_path"]
        session = ctx.session
        if loaded is None:
            return await edit_checks.create(session, path, args.content)
        content = (
            matching.adapt_newlines(args.content, loaded.fmt.newline) if "\r" not in args.content else args.content
        )
        checked = edit_checks.applies(session, path, content)
        problem = edit_checks.syntax_check(session.settings, path, loaded.text, content) if checked else None
        data = loaded.to_file(content)
        await commit_write(
            path,
            data,
            loaded,
            workspace=session.workspace,
            history=session.history,
            ledger=session.ledger,
            made_by="Write",
        )
        lines = count_lines(content)
        output = ToolOutput(
            f"The file {path} has been updated successfully ({lines} line{'s' if lines != 1 else ''})."
            + hard_link_note(loaded.st),
            meta={"path": str(path), "type": "update", "bytes": len(data)},
        )
        if checked:
            edit_checks.add_syntax_note(output, problem)
            await edit_checks.add_diagnostics_note(
                output, session, path, loaded.text, content, broken=problem is not None
            )
        return output
