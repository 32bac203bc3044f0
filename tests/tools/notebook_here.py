"""NotebookEdit's change computed in the test's process instead of a worker process, for tests of what the change
is or how it is committed: a worker costs ~0.45 CPU-s a call (an interpreter, the package, nbformat).

The worker runs the same `edit_notebook` with the same bounds (`serve_one`); its own behaviour (the framing, the
refusals sent back, timeouts, cancelling, isolation) is tested in test_notebook_worker.py, and each file that uses
this keeps some calls through the real worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_codetools.files.kinds import NOTEBOOK_MAX_BYTES, NOTEBOOK_MAX_CELLS
from mcp_codetools.files.notebook_edit import edit_notebook
from mcp_codetools.files.notebook_worker import CellType, EditMode, NotebookChange
from mcp_codetools.tools import notebook_edit


def edits_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """NotebookEdit calls `edit_notebook` here, as the worker would, until `monkeypatch` is undone."""

    async def edit_here(
        data: bytes, path: Path, *, cell: str | None, new_source: str, cell_type: CellType | None, mode: EditMode
    ) -> NotebookChange:
        return edit_notebook(
            data, path, cell=cell, new_source=new_source, cell_type=cell_type, mode=mode, yielding=False,
            max_bytes=NOTEBOOK_MAX_BYTES, max_cells=NOTEBOOK_MAX_CELLS,
        )  # fmt: skip

    monkeypatch.setattr(notebook_edit, "edit_in_worker", edit_here)
