"""MultiEdit: several replacements in one file, applied in order, written once or not at all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import override

from mcp_codetools.files import matching, recovery_notes
from mcp_codetools.files.edit_plan import EditStep, Planned, plan_edits, refuse_notebook
from mcp_codetools.files.editing import Loaded, commit_write, load_checked
from mcp_codetools.files.refusals import missing_file_error
from mcp_codetools.files.writes import hard_link_note
from mcp_codetools.tools import edit_checks
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


class EditItem(BaseModel):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    model_config = ConfigDict(extra="forbid")

    old_string: str = Field(description="Exact text to replace.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


class MultiEditInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    file_path: str = Field(description="Absolute path, or relative to the working directory.")
    edits: list[EditItem] = Field(min_length=1, description="Edits applied in order, each to the previous result.")


@dataclass
class _Prepared:
    loaded: Loaded
    planned: Planned


class MultiEditTool(Tool[MultiEditInput, _Prepared]):
    """MultiEdit: several Edit-style replacements in one file, all or nothing."""

    name = "MultiEdit"
    title = "Edit file in several places"
    description = (
        "Several Edit-style replacements in one file, applied in order, each to the result of the ones before. "
        "All or nothing: if any edit fails, nothing is written and the error names it (edits[i]). Same rules "
        "as Edit: Read the file first; old_string must match exactly and once unless replace_all."
    )
    input_model = MultiEditInput
    read_only = False
    destructive = True
    idempotent = False
    path_fields = ("file_path",)
    reads_files = False
    writes_files = True

    @override
    def input_schema(self) -> dict[str, Any]:
        # Clients and models read a flat schema best: the edit item is written out in place, not as a $ref.
        schema = super().input_schema()
        item = schema.pop("$defs")["EditItem"]
        item.pop("title", None)
        for prop in item["properties"].values():
            prop.pop("title", None)
        schema["properties"]["edits"]["items"] = item
        return schema

    @override
    async def validate_input(self, args: MultiEditInput, ctx: CallContext) -> _Prepared:
        path = ctx.paths["file_path"]
        session = ctx.session
        refuse_notebook(path)
        loaded = load_checked(path, session.workspace, session.ledger, session.settings.hard_links)
        if loaded is None:
            error = missing_file_error(path, session.cwd, session.workspace)
            if args.edits[0].old_string == "":
                raise type(error)(f"{error.message} MultiEdit changes existing files; to create one, use Write.")
            raise error
        steps = [EditStep(e.old_string, e.new_string, e.replace_all) for e in args.edits]
        # Scanning a large file per edit, and the bounded closest-region search when one misses, take a
        # moment: never on the event loop (as Edit's search).
        planned = await anyio.to_thread.run_sync(plan_edits, loaded, steps, str(path), session.settings.edit_recovery)
        return _Prepared(loaded, planned)

    @override
    async def call(self, args: MultiEditInput, ctx: CallContext, prepared: _Prepared) -> ToolOutput:
        path = ctx.paths["file_path"]
        session = ctx.session
        loaded, planned = prepared.loaded, prepared.planned
        body = planned.body
        data = loaded.fmt.bom + body if isinstance(body, bytearray) else loaded.to_file(body)
        # The reply is built before the write, so nothing after the write can fail.
        start = planned.first_change
        window = matching.window(body, start, start, matching.line_of(body, start), _display(loaded))
        edits, total = len(planned.counts), sum(planned.counts)
        text = (
            f"The file {path} has been updated: {edits} edit{'s' if edits != 1 else ''} applied "
            f"({total} replacement{'s' if total != 1 else ''}). Around the first change:\n{matching.snippet(window)}"
            + hard_link_note(loaded.st)
            + "".join(f"\nedits[{i}]: {recovery_notes.applied_note(r)}" for i, r in planned.recovered.items())
        )
        checked = edit_checks.applies(session, path, body)
        new_text = _display(loaded)(body) if checked else ""
        problem = None
        if checked:
            # The lines from the first change to the last: the check compiles the blocks around them only.
            first, last = (matching.line_of(body, at) - 1 for at in (start, len(body) - planned.unchanged_tail))
            problem = edit_checks.syntax_check(session.settings, path, loaded.text, new_text, first, last)
        await commit_write(
            path,
            data,
            loaded,
            workspace=session.workspace,
            history=session.history,
            ledger=session.ledger,
            made_by="MultiEdit",
        )
        meta: dict[str, Any] = {"path": str(path), "edits": len(planned.counts), "replacements": planned.counts}
        if planned.recovered:
            meta["recovered"] = {str(i): list(r.kinds) for i, r in planned.recovered.items()}
        output = ToolOutput(text, meta=meta)
        if checked:
            edit_checks.add_syntax_note(output, problem)
            await edit_checks.add_diagnostics_note(
                output, session, path, loaded.text, new_text, broken=problem is not None
            )
        return output


def _display(loaded: Loaded) -> Callable[[Any], str]:
    return lambda part: loaded.to_display(bytes(part) if isinstance(part, bytearray) else part)
