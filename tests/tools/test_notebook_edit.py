"""NotebookEdit: replace, insert and delete keep the notebook valid nbformat; the Read-first rule holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat import v4

from tests.conftest import Caller
from tests.tools.notebook_here import edits_in_process
from tests.tools.samples import write_notebook

pytestmark = pytest.mark.anyio

THROUGH_THE_WORKER = {"test_replace_clears_outputs_and_execution_count", "test_an_unknown_cell_id_lists_the_ids"}
"""A change and a refusal through the real worker process; the other tests compute theirs here (notebook_here)."""


@pytest.fixture(autouse=True)
def edits_here(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.function.__name__ not in THROUGH_THE_WORKER:
        edits_in_process(monkeypatch)


def load(path: Path) -> Any:
    notebook = nbformat.read(str(path), as_version=4)
    nbformat.validate(notebook)
    return notebook


async def read_notebook(call: Caller, path: Path) -> Any:
    await call.ok("Read", {"file_path": str(path)})
    return load(path)


async def test_replace_clears_outputs_and_execution_count(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    nb = await read_notebook(call, f)
    target = nb.cells[1]
    text = await call.ok("NotebookEdit", {"notebook_path": str(f), "cell_id": target.id, "new_source": "print('bye')"})
    after = load(f)
    cell = after.cells[1]
    assert cell.source == "print('bye')" and cell.outputs == [] and cell.execution_count is None
    assert cell.id == target.id and "cleared" in text
    assert [c.source for c in after.cells[2:]] == [c.source for c in nb.cells[2:]]


async def test_replace_can_change_the_cell_type(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    nb = await read_notebook(call, f)
    await call.ok(
        "NotebookEdit",
        {"notebook_path": str(f), "cell_id": nb.cells[1].id, "new_source": "## now prose", "cell_type": "markdown"},
    )
    cell = load(f).cells[1]
    assert cell.cell_type == "markdown" and cell.id == nb.cells[1].id and "outputs" not in cell


async def test_insert_goes_after_the_cell_or_first_and_gets_a_new_id(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    nb = await read_notebook(call, f)
    await call.ok(
        "NotebookEdit",
        {"notebook_path": str(f), "cell_id": nb.cells[0].id, "new_source": "x = 1", "edit_mode": "insert"},
    )
    await call.ok(
        "NotebookEdit",
        {"notebook_path": str(f), "new_source": "# top", "cell_type": "markdown", "edit_mode": "insert"},
    )
    after = load(f)
    assert [c.source for c in after.cells[:3]] == ["# top", nb.cells[0].source, "x = 1"]
    ids = [c.id for c in after.cells]
    assert len(set(ids)) == len(ids) == len(nb.cells) + 2


async def test_delete_removes_the_cell(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    nb = await read_notebook(call, f)
    await call.ok(
        "NotebookEdit", {"notebook_path": str(f), "cell_id": nb.cells[4].id, "new_source": "", "edit_mode": "delete"}
    )
    after = load(f)
    assert [c.id for c in after.cells] == [c.id for c in nb.cells[:4]]


async def test_edits_chain_without_a_new_read(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    nb = await read_notebook(call, f)
    for source in ("a = 1", "a = 2"):
        await call.ok("NotebookEdit", {"notebook_path": str(f), "cell_id": nb.cells[1].id, "new_source": source})
    assert load(f).cells[1].source == "a = 2"


async def test_the_notebook_must_have_been_read_and_unchanged(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    cell = load(f).cells[1].id
    out = await call.fails("NotebookEdit", {"notebook_path": str(f), "cell_id": cell, "new_source": "x"})
    assert out.meta["errorCode"] == "file_not_read"
    await call.ok("Read", {"file_path": str(f)})
    nb = load(f)
    nb.cells[0].source = "changed elsewhere"
    f.write_text(nbformat.writes(nb), encoding="utf-8")
    out = await call.fails("NotebookEdit", {"notebook_path": str(f), "cell_id": cell, "new_source": "x"})
    assert out.meta["errorCode"] == "file_changed_since_read"


async def test_an_unknown_cell_id_lists_the_ids(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    nb = await read_notebook(call, f)
    out = await call.fails("NotebookEdit", {"notebook_path": str(f), "cell_id": "nope", "new_source": "x"})
    assert out.meta["errorCode"] == "invalid_input" and nb.cells[0].id in out.text


async def test_cells_of_a_notebook_without_ids_are_named_by_index(call: Caller, root: Path) -> None:
    nb = v4.new_notebook()
    nb.nbformat_minor = 4
    nb.cells = [v4.new_code_cell("a"), v4.new_code_cell("b")]
    for cell in nb.cells:
        del cell["id"]
    f = root / "old.ipynb"
    f.write_text(nbformat.writes(nb), encoding="utf-8")
    text = await call.ok("Read", {"file_path": str(f)})
    assert "id=cell-1" in text
    await call.ok("NotebookEdit", {"notebook_path": str(f), "cell_id": "cell-1", "new_source": "b2"})
    await call.ok("NotebookEdit", {"notebook_path": str(f), "new_source": "first", "edit_mode": "insert"})
    after = load(f)
    assert [c.source for c in after.cells] == ["first", "a", "b2"]
    assert all("id" not in c for c in after.cells)


async def test_a_version_3_notebook_keeps_the_ids_read_showed(call: Caller, root: Path) -> None:
    """Converting nbformat 3 makes random ids; the ones Read shows must be the ones NotebookEdit finds."""
    import json

    worksheet = {"cells": [{"cell_type": "code", "input": "x = 1", "language": "python", "outputs": []}]}
    f = root / "v3.ipynb"
    f.write_text(json.dumps({"metadata": {}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [worksheet]}))
    first = await call.ok("Read", {"file_path": str(f)})
    again = await call.ok("Read", {"file_path": str(f), "offset": 1})
    assert "id=cell-0" in first and "id=cell-0" in again
    await call.ok("NotebookEdit", {"notebook_path": str(f), "cell_id": "cell-0", "new_source": "x = 2"})
    after = load(f)
    assert (after.nbformat, after.nbformat_minor) >= (4, 5) and [c.source for c in after.cells] == ["x = 2"]
