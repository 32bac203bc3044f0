"""One call must not stall the others: a small Read's latency in another HTTP session while a big NotebookEdit runs.

`python -m benchmarks.notebook_stall [--cells N] [--source-bytes B]` starts the server over streamable HTTP
(this interpreter, `python -m mcp_codetools`, run from a scratch folder), Reads a generated notebook in
session A, then runs NotebookEdit on it while session B Reads a small file in a loop; then the same with a
notebook over the bounds (30 MB, 200,000 cells), which must be refused at once. It prints B's Read latency
when idle (the same-run baseline) and during each edit (median, p99, max), how long each edit took, and the
server's peak RSS. The target: no Read during an edit takes more than 100 ms over the idle median.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import anyio
from mcp import Client

from benchmarks import procs
from benchmarks.stall import during_figures, idle_figures, idle_reads, reads_during, report, two_sessions
from benchmarks.stats import median

HUGE_CELLS = 200_000
HUGE_SOURCE_BYTES = 10
"""200,000 cells of this much source make a notebook of about 30 MB, over both bounds."""


def _notebook(path: Path, cells: int, source_bytes: int) -> Path:
    body = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [
            {
                "cell_type": "code",
                "id": f"c{i}",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": f"# cell {i}\n" + "x" * source_bytes,
            }
            for i in range(cells)
        ],
    }
    path.write_text(json.dumps(body, indent=1), encoding="utf-8")
    return path


async def measure(root: Path, cells: int, source_bytes: int, idle_count: int) -> dict[str, float | int | str]:
    """Run the scenario once against a server on `root`; the figures, in ms and MiB."""
    notebook = _notebook(root / "big.ipynb", cells, source_bytes)
    small = root / "small.txt"
    small.write_text("one small line\n", encoding="utf-8")
    read_args = {"file_path": str(small)}
    async with two_sessions(root) as (editor, reader, proc):
        await editor.call_tool("Read", {"file_path": str(notebook), "limit": 1})
        idle = await idle_reads(reader, read_args, idle_count)
        heavy = await reads_during(reader, read_args, lambda: _edit(editor, notebook))
        huge = _notebook(root / "huge.ipynb", HUGE_CELLS, HUGE_SOURCE_BYTES)
        await editor.call_tool("Read", {"file_path": str(huge), "limit": 1})
        refused = await reads_during(reader, read_args, lambda: _edit(editor, huge))
        peak = procs.status_kib(proc.pid, "VmHWM")
    base = median(idle)
    figures = idle_figures(idle) | {
        "idle read max ms": round(max(idle), 2),
        "server peak RSS MiB": round(peak / 1024, 1) if peak else -1,
    }
    for label, path, (outcome, edit_ms, during) in (("heavy", notebook, heavy), ("over the bounds", huge, refused)):
        edit: dict[str, float | int | str] = {
            f"{label}: notebook MiB": round(path.stat().st_size / 2**20, 1),
            f"{label}: cells": cells if path == notebook else HUGE_CELLS,
            f"{label}: edit ms": round(edit_ms, 1),
            f"{label}: edit outcome": outcome,
        }
        figures |= edit | during_figures(label, "edit", during, base)
    return figures


async def _edit(editor: Client, notebook: Path) -> str:
    """NotebookEdit of the first cell; how it ended, in a line."""
    result = await editor.call_tool(
        "NotebookEdit", {"notebook_path": str(notebook), "cell_id": "c0", "new_source": "# changed"}
    )
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    return ("error: " if result.is_error else "ok: ") + text[:160]


def main() -> None:
    """Run the check and print the figures; exit 1 when a Read during the edit took over the target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000, help="cells in the heavy notebook (default: the bound)")
    parser.add_argument("--source-bytes", type=int, default=900, help="bytes of source per cell")
    parser.add_argument("--idle-reads", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nb-stall-") as scratch:
        figures = anyio.run(measure, Path(scratch).resolve(), args.cells, args.source_bytes, args.idle_reads)
    report(figures, "an edit")


if __name__ == "__main__":
    main()
