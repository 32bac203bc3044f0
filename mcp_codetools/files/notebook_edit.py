"""One cell of a notebook replaced, inserted or deleted, leaving valid nbformat.

A replaced code cell loses its outputs and execution count (they belonged to the old source). New
cells get ids the way nbformat makes them (on notebooks of format 4.5 and later, which have ids).
Cells of older notebooks, which have no ids, are named `cell-<index>` as Read shows them.

NotebookEdit runs this in a worker process (files/notebook_worker.py): `serve_one` is that process's entry.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat
from nbformat import v4

from mcp_codetools.errors import InvalidInputError, ToolError
from mcp_codetools.files.notebook import cell_id, collector_paused, parse_notebook
from mcp_codetools.files.notebook_worker import CellType, EditMode, NotebookChange, frame, unframe


def _find(cells: list[Any], wanted: str, path: Path) -> int:
    for index, cell in enumerate(cells):
        if cell_id(cell, index) == wanted or cell.get("id") == wanted:
            return index
    known = ", ".join(cell_id(cell, i) for i, cell in enumerate(cells[:12])) + (" …" if len(cells) > 12 else "")
    raise InvalidInputError(
        f'No cell with id "{wanted}" in {path}. Its cells are: {known or "(none)"}. Read the notebook for the ids.'
    )


def _new_cell(cell_type: str, source: str, with_id: bool) -> Any:
    make = v4.new_markdown_cell if cell_type == "markdown" else v4.new_code_cell
    cell = make(source)  # type: ignore[no-untyped-call]
    if not with_id:
        cell.pop("id", None)
    return cell


def edit_notebook(
    data: bytes,
    path: Path,
    *,
    cell: str | None,
    new_source: str,
    cell_type: CellType | None,
    mode: EditMode,
    yielding: bool = True,
    max_bytes: int | None = None,
    max_cells: int | None = None,
) -> NotebookChange:
    """The notebook's new bytes after one cell change, validated.

    `yielding`: parse with the Python scanner, which lets other threads run (off it in a worker process).

    Raises:
        InvalidInputError: no such cell, or a cell id is missing where one is needed.
        BinaryFileError: the file is not a notebook.
        FileTooLargeError: it is over `max_bytes` or `max_cells` (by default, the bounds of files/notebook.py).
    """
    with collector_paused():
        notebook = parse_notebook(data, path, yielding=yielding, max_bytes=max_bytes, max_cells=max_cells)
        return _edit_notebook(notebook, path, cell=cell, new_source=new_source, cell_type=cell_type, mode=mode)


def _edit_notebook(
    notebook: Any,
    path: Path,
    *,
    cell: str | None,
    new_source: str,
    cell_type: CellType | None,
    mode: EditMode,
) -> NotebookChange:
    cells: list[Any] = notebook.cells
    with_ids = (notebook.nbformat, notebook.nbformat_minor) >= (4, 5)
    old_source: str | None = None
    if mode == "insert":
        index = 0 if cell is None else _find(cells, cell, path) + 1
        new = _new_cell(cell_type or "code", new_source, with_ids)
        cells.insert(index, new)
        changed_id, changed_type = cell_id(new, index), new.cell_type
    else:
        if cell is None:
            raise InvalidInputError(f"cell_id is required to {mode} a cell. Read the notebook for the ids.")
        index = _find(cells, cell, path)
        target = cells[index]
        old_source = target.get("source", "")
        changed_id = cell_id(target, index)
        if mode == "delete":
            del cells[index]
            changed_type = target.get("cell_type", "code")
        else:
            wanted_type = cell_type or target.get("cell_type", "code")
            if wanted_type != target.get("cell_type"):
                replacement = _new_cell(wanted_type, new_source, with_ids)
                if "id" in target:
                    replacement["id"] = target["id"]
                replacement["metadata"] = target.get("metadata", {})
                cells[index] = replacement
            else:
                target["source"] = new_source
                if wanted_type == "code":
                    target["outputs"] = []
                    target["execution_count"] = None
            changed_type = wanted_type
    try:
        nbformat.validate(notebook)
        # v4's own writer: nbformat.writes would validate the whole notebook a second time (~0.4 s on 20 MB).
        text = v4.writes_json(notebook)  # type: ignore[no-untyped-call]
    except nbformat.ValidationError as exc:
        raise InvalidInputError(
            f"After this change {path} would not be a valid notebook ({str(exc).splitlines()[0][:300]}). "
            "Nothing was written."
        ) from None
    except RecursionError:
        raise InvalidInputError(
            f"{path} nests its JSON too deeply to be checked and written back as a notebook. Nothing was written."
        ) from None
    if not text.endswith("\n"):
        text += "\n"
    return NotebookChange(text.encode("utf-8"), changed_id, index, changed_type, old_source, len(cells))


def serve_one() -> None:
    """The worker process: one framed request from stdin (the edit, the bounds, the notebook), one answer out.

    A refusal goes back as its class and message, to be raised again in the server; anything else is a bug,
    sent back as such. Nothing is written here.
    """
    header, data = unframe(sys.stdin.buffer.read())
    body = b""
    answer: dict[str, Any]
    try:
        change = edit_notebook(
            data,
            Path(header["path"]),
            cell=header["cell"],
            new_source=header["new_source"],
            cell_type=header["cell_type"],
            mode=header["mode"],
            yielding=False,
            max_bytes=int(header["max_bytes"]),
            max_cells=int(header["max_cells"]),
        )
        body = change.data
        answer = {
            "ok": {
                "cell_id": change.cell_id,
                "index": change.index,
                "cell_type": change.cell_type,
                "old_source": change.old_source,
                "total_cells": change.total_cells,
            }
        }
    except ToolError as exc:
        answer = {"error": {"kind": type(exc).__name__, "message": exc.message}}
    except MemoryError:
        answer = {"error": {"kind": "MemoryError", "message": "out of memory"}}
    except Exception as exc:  # a bug: reported by the server as an internal error
        answer = {"error": {"kind": "internal", "message": f"{type(exc).__name__}: {str(exc)[:500]}"}}
    sys.stdout.buffer.write(frame(answer, body))
    sys.stdout.buffer.flush()
