"""Notebooks parse within bounds (NotebookEdit in a worker process: tests/tools/test_notebook_worker.py):
an oversized or too deeply nested notebook is a clear refusal, never "internal error"."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import anyio
import anyio.from_thread
import mcp_types as types
import pytest
from mcp import Client

from mcp_codetools.files import notebook, notebook_worker, rich
from mcp_codetools.files.notebook_edit import edit_notebook
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings
from mcp_codetools.tools import notebook_edit
from tests.conftest import Caller
from tests.tools.samples import write_notebook

pytestmark = pytest.mark.anyio

NESTED = (
    b'{"cells": [], "metadata": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b'}, "nbformat": 4, "nbformat_minor": 5}'
)


def _first_cell(path: Path) -> str:
    return str(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["id"])


async def test_a_notebook_nested_too_deeply_is_a_clear_refusal(call: Caller, root: Path) -> None:
    path = root / "deep.ipynb"
    path.write_bytes(NESTED)
    out = await call.fails("Read", {"file_path": str(path)})
    assert "not valid JSON: nested too deeply" in out.text, out.text
    assert out.meta["errorCode"] != "internal_error"
    with pytest.raises(Exception, match="nested too deeply"):
        edit_notebook(NESTED, path, cell=None, new_source="x", cell_type=None, mode="insert")


async def test_a_notebook_over_the_byte_bound_is_refused_by_read_and_notebook_edit(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_notebook(root / "nb.ipynb")
    await call.ok("Read", {"file_path": str(path)})
    bound = path.stat().st_size - 1
    for module in (notebook, rich, notebook_edit):
        monkeypatch.setattr(module, "NOTEBOOK_MAX_BYTES", bound)
    read = await call.fails("Read", {"file_path": str(path)})
    edit = await call.fails(
        "NotebookEdit", {"notebook_path": str(path), "cell_id": _first_cell(path), "new_source": "x"}
    )
    for out in (read, edit):
        assert out.meta["errorCode"] == "file_too_large" and "too large to parse" in out.text and "jq" in out.text


async def test_a_notebook_over_the_cell_bound_is_refused(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_notebook(root / "nb.ipynb")
    await call.ok("Read", {"file_path": str(path)})
    cells = len(json.loads(path.read_text(encoding="utf-8"))["cells"])
    monkeypatch.setattr(notebook, "NOTEBOOK_MAX_CELLS", cells - 1)
    monkeypatch.setattr(notebook_worker, "NOTEBOOK_MAX_CELLS", cells - 1)
    edit = await call.fails(
        "NotebookEdit", {"notebook_path": str(path), "cell_id": _first_cell(path), "new_source": "x"}
    )
    assert edit.meta["errorCode"] == "file_too_large" and f"{cells:,} cells" in edit.text
    read = await call.fails("Read", {"file_path": str(path)})
    assert read.meta["errorCode"] == "file_too_large"


def _huge_notebook(path: Path, cells: int = 200_000) -> Path:
    """About 30 MB of 200,000 small cells, written as bytes (json.dumps would take seconds)."""
    cell = b'{"cell_type": "code", "execution_count": null, "id": "c%d", "metadata": {}, "outputs": [], "source": "'
    cell += b"x" * 45 + b'"}'
    body = b",\n".join(cell % i for i in range(cells))
    path.write_bytes(b'{"cells": [\n' + body + b'\n], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    return path


async def test_a_30_mb_notebook_of_200000_cells_is_refused_before_it_is_read(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _huge_notebook(root / "huge.ipynb")
    assert path.stat().st_size > 28_000_000
    before = path.stat()

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("the notebook was loaded whole to be refused")

    monkeypatch.setattr(notebook_edit, "load_checked", never)
    edit = await call.fails("NotebookEdit", {"notebook_path": str(path), "cell_id": "c0", "new_source": "x"})
    read = await call.fails("Read", {"file_path": str(path)})
    for out in (edit, read):
        assert out.meta["errorCode"] == "file_too_large", out.text
        assert "too large to parse" in out.text and "jq" in out.text, out.text
    assert "Nothing was changed" in edit.text
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


async def test_notebook_edit_of_a_notebook_nested_too_deeply_is_a_clear_refusal(call: Caller, root: Path) -> None:
    """Written by the model (so the ledger knows it), then edited: the parse's RecursionError is a refusal."""
    path = root / "deep.ipynb"
    await call.ok("Write", {"file_path": str(path), "content": NESTED.decode()})
    out = await call.fails("NotebookEdit", {"notebook_path": str(path), "new_source": "x", "edit_mode": "insert"})
    assert out.meta["errorCode"] not in ("internal_error", None), out.meta
    assert "not valid JSON: nested too deeply" in out.text and "Cannot read" in out.text, out.text
    assert path.read_bytes() == NESTED


async def test_a_notebook_nested_too_deeply_through_an_mcp_client(root: Path) -> None:
    path = root / "deep.ipynb"
    app = CodeToolsServer(Settings(roots=(root,)))
    with anyio.fail_after(30):
        async with Client(app.server, mode="legacy") as client:
            written = await client.call_tool("Write", {"file_path": str(path), "content": NESTED.decode()})
            assert not written.is_error
            read = await client.call_tool("Read", {"file_path": str(path)})
            edit = await client.call_tool(
                "NotebookEdit", {"notebook_path": str(path), "new_source": "x", "edit_mode": "insert"}
            )
    for result in (read, edit):
        shown = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
        assert result.is_error and "not valid JSON: nested too deeply" in shown, shown
        assert "internal error" not in shown.lower()
    assert path.read_bytes() == NESTED


def test_the_collector_pause_lasts_until_the_last_overlapping_holder_is_done() -> None:
    assert gc.isenabled()
    first, second = notebook.collector_paused(), notebook.collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled(), "resumed while another thread still builds a notebook"
    second.__exit__(None, None, None)
    assert gc.isenabled()


async def test_a_notebook_call_leaves_the_collector_running(call: Caller, root: Path) -> None:
    path = root / "deep.ipynb"
    await call.ok("Write", {"file_path": str(path), "content": NESTED.decode()})
    await call.fails("NotebookEdit", {"notebook_path": str(path), "new_source": "x", "edit_mode": "insert"})
    good = write_notebook(root / "nb.ipynb")
    await call.ok("Read", {"file_path": str(good)})
    await call.ok("NotebookEdit", {"notebook_path": str(good), "cell_id": _first_cell(good), "new_source": "y"})
    assert gc.isenabled()
