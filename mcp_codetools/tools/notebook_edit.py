"""NotebookEdit: replace, insert or delete one cell of a Jupyter notebook that was Read."""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import InvalidInputError
from mcp_codetools.files.editing import Loaded, commit_write, load_checked
from mcp_codetools.files.kinds import NOTEBOOK_MAX_BYTES, notebook_too_large
from mcp_codetools.files.notebook_worker import NotebookChange, edit_in_worker
from mcp_codetools.files.refusals import missing_file_error
from mcp_codetools.files.writes import hard_link_note
from mcp_codetools.tools import edit_checks
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


class NotebookEditInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    notebook_path: str = Field(description="Path of the .ipynb file.")
    cell_id: str | None = Field(
        default=None, description="Id of the cell to change (as Read shows it); for insert, the new cell goes after it."
    )
    new_source: str = Field(description="The cell's new source (ignored for delete).")
    cell_type: Literal["code", "markdown"] | None = Field(
        default=None, description="Type of the cell (insert: default code; replace: keeps the current type)."
    )
    edit_mode: Literal["replace", "insert", "delete"] = Field(default="replace", description="What to do.")


@dataclass(frozen=True, slots=True)
class _Prepared:
    loaded: Loaded
    change: NotebookChange


class NotebookEditTool(Tool[NotebookEditInput, _Prepared]):
    """NotebookEdit: replace, insert or delete one cell of a notebook read before."""

    name = "NotebookEdit"
    title = "Edit notebook cell"
    description = (
        "Replace, insert or delete one cell of a Jupyter notebook (.ipynb) that was Read in this session. "
        "Replacing a code cell clears its outputs. Insert puts the new cell after cell_id, or first without one."
    )
    input_model = NotebookEditInput
    read_only = False
    destructive = True
    idempotent = False
    path_fields = ("notebook_path",)
    reads_files = False
    writes_files = True

    @override
    async def validate_input(self, args: NotebookEditInput, ctx: CallContext) -> _Prepared:
        path = ctx.paths["notebook_path"]
        session = ctx.session
        if path.suffix.lower() != ".ipynb":
            raise InvalidInputError(f"{path} is not a Jupyter notebook (.ipynb). Use Edit for other files.")
        size = 0
        with contextlib.suppress(OSError):  # a cheap first look, so a huge file is not read whole to be refused
            size = os.stat(path).st_size
        if size > NOTEBOOK_MAX_BYTES:
            raise notebook_too_large(path, size)
        loaded = load_checked(path, session.workspace, session.ledger, session.settings.hard_links)
        if loaded is None:
            raise missing_file_error(path, session.cwd, session.workspace)
        # Importing nbformat, parsing, validating and writing out take seconds on a large notebook: in a worker
        # process, so they hold no lock of this one and every other session's calls go on meanwhile. A cancelled
        # call kills the worker; the file is written here, by the commit sequence.
        change = await edit_in_worker(
            loaded.data, path, cell=args.cell_id, new_source=args.new_source, cell_type=args.cell_type,
            mode=args.edit_mode,
        )  # fmt: skip
        return _Prepared(loaded, change)

    @override
    async def call(self, args: NotebookEditInput, ctx: CallContext, prepared: _Prepared) -> ToolOutput:
        path = ctx.paths["notebook_path"]
        session = ctx.session
        loaded, change = prepared.loaded, prepared.change
        problem = None
        if args.edit_mode != "delete" and change.cell_type == "code" and _python_notebook(loaded.data):
            old = change.old_source if args.edit_mode == "replace" else None
            problem = edit_checks.cell_syntax_check(session.settings, path, old, args.new_source)
        await commit_write(
            path,
            change.data,
            loaded,
            workspace=session.workspace,
            history=session.history,
            ledger=session.ledger,
            made_by="NotebookEdit",
        )
        done = {"replace": "Replaced", "insert": "Inserted", "delete": "Deleted"}[args.edit_mode]
        where = f"at position {change.index + 1}" if args.edit_mode != "delete" else f"from position {change.index + 1}"
        text = (
            f"{done} {change.cell_type} cell {change.cell_id} {where} in {path}; "
            f"the notebook has {change.total_cells} cell{'s' if change.total_cells != 1 else ''}."
        )
        if args.edit_mode == "replace" and change.cell_type == "code":
            text += " Its outputs and execution count were cleared."
        output = ToolOutput(
            text + hard_link_note(loaded.st),
            meta={
                "path": str(path),
                "cellId": change.cell_id,
                "editMode": args.edit_mode,
                "cellType": change.cell_type,
                "oldSource": change.old_source,
            },
        )
        edit_checks.add_syntax_note(output, problem, f" in cell {change.cell_id}")
        return output


def _python_notebook(data: bytes) -> bool:
    """Whether the notebook's code is Python: its kernel's language, else its language_info's name, else Python.

    Read shows a notebook with no language metadata as Python, so its cells are checked as Python too. The
    metadata sits at the end (nbformat writes it after the cells): only the tail is searched, not parsed.
    """
    tail = data[-8192:]
    found = _KERNEL_LANGUAGE.search(tail) or _INFO_NAME.search(tail)
    return found is None or found.group(1).strip().lower() in (b"python", b"python3", b"")


_KERNEL_LANGUAGE = re.compile(rb'"kernelspec"\s*:\s*\{[^{}]*?"language"\s*:\s*"([^"]*)"')
_INFO_NAME = re.compile(rb'"language_info"\s*:\s*\{[^{}]*?"name"\s*:\s*"([^"]*)"')
