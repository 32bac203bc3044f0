"""Edit: replace an exact string in a file that was Read, keeping its encoding and line endings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import (
    FileExistsAlreadyError,
    InvalidInputError,
    NoChangeError,
    NotAFileError,
    OldStringNotFoundError,
    OldStringNotUniqueError,
)
from mcp_codetools.files import matching, recovery, recovery_notes
from mcp_codetools.files.editing import (
    Loaded,
    commit_write,
    create_file,
    created_message,
    load_checked,
)
from mcp_codetools.files.refusals import missing_file_error, refuse_folder_name
from mcp_codetools.files.writes import hard_link_note
from mcp_codetools.tools import edit_checks
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


class EditInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    file_path: str = Field(description="Absolute path, or relative to the working directory.")
    old_string: str = Field(description="Exact text to replace, without Read's line-number prefixes.")
    new_string: str = Field(description="Replacement text (must differ from old_string).")
    replace_all: bool = Field(default=False, description="Replace every occurrence (default: exactly one).")


@dataclass(frozen=True, slots=True)
class Replacement:
    """What validate_input found: the file as loaded and checked, and where old_string is in it."""

    loaded: Loaded
    matches: list[matching.Match]
    new_string: str | None = None
    """new_string as recovery adapted it (re-indented, quotes matched), when old_string matched only so."""
    recovered: recovery.Recovered | None = None


class EditTool(Tool[EditInput, Replacement | None]):
    """Edit: replace one (or every) exact occurrence of a string in a file read before."""

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
    reads_files = False
    writes_files = True

    @override
    async def validate_input(self, args: EditInput, ctx: CallContext) -> Replacement | None:
        """Check the edit can be made; None means the file does not exist and old_string is empty: create it."""
        path = ctx.paths["file_path"]
        session = ctx.session
        if args.old_string == args.new_string:
            raise NoChangeError("No changes to make: old_string and new_string are exactly the same.")
        if path.suffix == ".ipynb" and os.path.lexists(path):
            raise NotAFileError("File is a Jupyter Notebook. Use NotebookEdit to change its cells.")
        loaded = load_checked(path, session.workspace, session.ledger, session.settings.hard_links)
        if loaded is None:
            if args.old_string == "":
                refuse_folder_name(args.file_path)
                return None
            raise missing_file_error(path, session.cwd, session.workspace)
        body = loaded.body
        if args.old_string == "":
            if loaded.text.strip():
                raise FileExistsAlreadyError(
                    "Cannot create new file - file already exists. To change it, give the old_string to replace."
                )
            matches = [matching.Match(0, len(body))]
        else:
            old = loaded.convert(args.old_string)
            matches = matching.find_matches(body, old) if old is not None else []
            if not matches:
                return await _recover(args, loaded, str(path), session.settings.edit_recovery)
            if len(matches) > 1 and not args.replace_all:
                lines = matching.lines_of(body, [m.start for m in matches[:20]])
                listed = ", ".join(str(n) for n in lines) + (" …" if len(matches) > 20 else "")
                raise OldStringNotUniqueError(
                    f"Found {len(matches)} matches of the string to replace, but replace_all is false "
                    f"(at lines {listed}). To replace all occurrences, set replace_all to true. To replace only "
                    "one occurrence, please provide more context to uniquely identify the instance."
                )
        return Replacement(loaded, matches)

    @override
    async def call(self, args: EditInput, ctx: CallContext, replacement: Replacement | None) -> ToolOutput:
        path = ctx.paths["file_path"]
        session = ctx.session
        if replacement is None:
            problem = edit_checks.syntax_check(session.settings, path, None, args.new_string)
            size = await create_file(path, args.new_string, session.workspace, session.history, session.ledger)
            created = ToolOutput(
                created_message(path, args.new_string), meta={"path": str(path), "type": "create", "bytes": size}
            )
            edit_checks.add_syntax_note(created, problem)
            await edit_checks.add_diagnostics_note(created, session, path, None, args.new_string)
            return created
        loaded, matches = replacement.loaded, replacement.matches
        body = loaded.body
        wanted = args.new_string if replacement.new_string is None else replacement.new_string
        new = loaded.convert(matching.adapt_newlines(wanted, loaded.fmt.newline))
        if new is None:
            raise InvalidInputError(
                f"new_string has characters the file's encoding ({loaded.fmt.encoding}) cannot hold."
            )
        new_body = matching.apply(body, matches, new)
        checked = edit_checks.applies(session, path)
        new_text = loaded.to_display(new_body) if checked else ""
        problem = None
        if checked:
            first = matching.line_of(new_body, matches[0].start) - 1
            last = first + loaded.to_display(new).count("\n") if len(matches) == 1 else None
            problem = edit_checks.syntax_check(session.settings, path, loaded.text, new_text, first, last)
        data = loaded.to_file(new_body)
        await commit_write(
            path,
            data,
            loaded,
            workspace=session.workspace,
            history=session.history,
            ledger=session.ledger,
            made_by="Edit",
        )
        output = _edit_result(path, loaded, body, new_body, matches, len(new), args.replace_all)
        output.text += hard_link_note(loaded.st)
        if replacement.recovered is not None:
            output.text += "\n" + recovery_notes.applied_note(replacement.recovered)
            output.meta["recovered"] = list(replacement.recovered.kinds)
        elif len(matches) == 1:
            output.text += matching.inside_word_note(body, matches[0])
        if checked:
            edit_checks.add_syntax_note(output, problem)
            await edit_checks.add_diagnostics_note(output, session, path, loaded.text, new_text)
        return output


async def _recover(args: EditInput, loaded: Loaded, shown: str, mode: str) -> Replacement:
    """Place an edit whose old_string missed, when exactly one region matches after normalising; else explain."""
    # Both searches are bounded but can take a moment on a large file: never on the event loop.
    found = None
    if mode != "off":
        found = await anyio.to_thread.run_sync(recovery.recover, loaded.text, args.old_string, args.new_string)
    if isinstance(found, recovery.Recovered) and mode == "apply":
        span = recovery.body_span(loaded.text, found, loaded.convert)
        if span is not None:
            return Replacement(loaded, [matching.Match(*span)], found.new, found)
    message = await anyio.to_thread.run_sync(recovery_notes.not_found, loaded.text, args.old_string, shown, found)
    raise OldStringNotFoundError(message)


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
    shown = (
        f" Here is the result around the {where}change:\n{matching.snippet(new_window)}"
        if new_window.region
        else " The file is now empty."
    )
    return ToolOutput(
        head + shown,
        meta={
            "path": str(path),
            "replacements": len(matches),
            "structuredPatch": [matching.structured_patch(old_window, new_window)],
        },
    )
