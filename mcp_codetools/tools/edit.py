"""Edit: replace an exact string in a file that was Read, keeping its encoding and line endings.

Edit is a MultiEdit of one: the finding, recovery, uniqueness and conversion are `files/edit_plan.py`'s, shared
with MultiEdit; creating a file is `edit_checks.create`, shared with Write. What is left here is the result.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import FileExistsAlreadyError, NoChangeError
from mcp_codetools.files import matching, recovery_notes
from mcp_codetools.files.edit_plan import NO_CHANGE, EditStep, Planned, plan_edits, refuse_notebook
from mcp_codetools.files.editing import Loaded, commit_write, load_checked
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
    """What validate_input found: the file as loaded and checked, and the edit planned on it (a plan of one)."""

    loaded: Loaded
    planned: Planned


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
            raise NoChangeError(NO_CHANGE)
        refuse_notebook(path)
        loaded = load_checked(path, session.workspace, session.ledger, session.settings.hard_links)
        if loaded is None:
            if args.old_string == "":
                refuse_folder_name(args.file_path)
                return None
            raise missing_file_error(path, session.cwd, session.workspace)
        if args.old_string == "" and loaded.text.strip():
            raise FileExistsAlreadyError(
                "Cannot create new file - file already exists. To change it, give the old_string to replace."
            )
        step = EditStep(args.old_string, args.new_string, args.replace_all)
        # Scanning a large file, and recovery's bounded search when old_string misses, take a moment: never on
        # the event loop.
        planned = await anyio.to_thread.run_sync(
            functools.partial(plan_edits, loaded, [step], str(path), session.settings.edit_recovery, single=True)
        )
        return Replacement(loaded, planned)

    @override
    async def call(self, args: EditInput, ctx: CallContext, replacement: Replacement | None) -> ToolOutput:
        path = ctx.paths["file_path"]
        session = ctx.session
        if replacement is None:
            return await edit_checks.create(session, path, args.new_string)
        loaded, planned = replacement.loaded, replacement.planned
        body = loaded.body
        new_body = planned.body  # bytes or text: a plan of one builds no buffer
        matches, new_len = planned.first_matches, planned.first_new_len
        checked = edit_checks.applies(session, path, new_body)
        new_text = loaded.to_display(new_body) if checked else ""
        problem = None
        if checked:
            first = matching.line_of(new_body, matches[0].start) - 1
            added = new_body[matches[0].start : matches[0].start + new_len]
            if len(matches) == 1:
                last = first + loaded.to_display(added).count("\n")
            else:  # replace_all: from the first match to the last, so the check compiles the blocks around them
                last = matching.line_of(new_body, len(new_body) - planned.unchanged_tail) - 1
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
        output = _edit_result(path, loaded, body, new_body, matches, new_len, args.replace_all)
        output.text += hard_link_note(loaded.st)
        recovered = planned.recovered.get(0)
        if recovered is not None:
            output.text += "\n" + recovery_notes.applied_note(recovered)
            output.meta["recovered"] = list(recovered.kinds)
        elif len(matches) == 1:
            output.text += matching.inside_word_note(body, matches[0])
        if checked:
            edit_checks.add_syntax_note(output, problem)
            await edit_checks.add_diagnostics_note(
                output, session, path, loaded.text, new_text, broken=problem is not None
            )
        return output


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
