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
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks import procs
from benchmarks.stats import median

TARGET_MS = 100.0
"""The most a small Read may take over its idle median while another session's call runs."""
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _listening(port: int) -> None:
    with anyio.fail_after(60):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


def _client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


def _start_server(root: Path, port: int, token: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_codetools", "--transport", "http", "--port", str(port), "--root", str(root)],
        env={**os.environ, "MCP_CODETOOLS_HTTP_TOKEN": token},
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(root: Path, cells: int, source_bytes: int, idle_reads: int) -> dict[str, float | int | str]:
    """Run the scenario once against a server on `root`; the figures, in ms and MiB."""
    notebook = _notebook(root / "big.ipynb", cells, source_bytes)
    small = root / "small.txt"
    small.write_text("one small line\n", encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    proc = _start_server(root, port, token)
    try:
        await _listening(port)
        url = f"http://127.0.0.1:{port}/mcp"
        async with _client(url, token) as editor, _client(url, token) as reader:
            await editor.call_tool("Read", {"file_path": str(notebook), "limit": 1})
            read_args = {"file_path": str(small)}
            await reader.call_tool("Read", read_args)  # warm
            idle: list[float] = []
            for _ in range(idle_reads):
                start = time.perf_counter()
                await reader.call_tool("Read", read_args)
                idle.append((time.perf_counter() - start) * 1000)
            heavy = await _edit_while_reading(editor, reader, notebook, read_args)
            huge = _notebook(root / "huge.ipynb", HUGE_CELLS, HUGE_SOURCE_BYTES)
            await editor.call_tool("Read", {"file_path": str(huge), "limit": 1})
            refused = await _edit_while_reading(editor, reader, huge, read_args)
        peak = procs.status_kib(proc.pid, "VmHWM")
    finally:
        procs_stop(proc)
    base = median(idle)
    figures: dict[str, float | int | str] = {
        "idle read median ms": round(base, 2),
        "idle read p99 ms": round(_pct(idle, 0.99), 2),
        "idle read max ms": round(max(idle), 2),
        "server peak RSS MiB": round(peak / 1024, 1) if peak else -1,
    }
    for label, path, run in (("heavy", notebook, heavy), ("over the bounds", huge, refused)):
        during = run.reads
        figures |= {
            f"{label}: notebook MiB": round(path.stat().st_size / 2**20, 1),
            f"{label}: cells": cells if path == notebook else HUGE_CELLS,
            f"{label}: edit ms": round(run.edit_ms, 1),
            f"{label}: edit outcome": run.outcome,
            f"{label}: reads during edit": len(during),
            f"{label}: read during edit median ms": round(median(during), 2) if during else 0.0,
            f"{label}: read during edit p99 ms": round(_pct(during, 0.99), 2) if during else 0.0,
            f"{label}: read during edit max ms": round(max(during), 2) if during else 0.0,
            f"{label}: added over idle median ms": round(max(during) - base, 2) if during else 0.0,
        }
    return figures


@dataclass
class _EditRun:
    edit_ms: float = 0.0
    outcome: str = ""
    reads: list[float] = field(default_factory=list)


async def _edit_while_reading(editor: Client, reader: Client, notebook: Path, read_args: dict[str, str]) -> _EditRun:
    """NotebookEdit on `notebook` in one session, small Reads in the other until it answers."""
    run = _EditRun()
    done = anyio.Event()

    async def edit() -> None:
        start = time.perf_counter()
        result = await editor.call_tool(
            "NotebookEdit", {"notebook_path": str(notebook), "cell_id": "c0", "new_source": "# changed"}
        )
        run.edit_ms = (time.perf_counter() - start) * 1000
        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
        run.outcome = ("error: " if result.is_error else "ok: ") + text[:160]
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(edit)
        while not done.is_set():
            start = time.perf_counter()
            await reader.call_tool("Read", read_args)
            run.reads.append((time.perf_counter() - start) * 1000)
    return run


def procs_stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and reap it (its own process group)."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


def main() -> None:
    """Run the check and print the figures; exit 1 when a Read during the edit took over the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20_000, help="cells in the heavy notebook (default: the bound)")
    parser.add_argument("--source-bytes", type=int, default=900, help="bytes of source per cell")
    parser.add_argument("--idle-reads", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nb-stall-") as scratch:
        figures = anyio.run(measure, Path(scratch).resolve(), args.cells, args.source_bytes, args.idle_reads)
    for key, value in figures.items():
        print(f"{key}: {value}")
    worst = max(float(figures[f"{label}: added over idle median ms"]) for label in ("heavy", "over the bounds"))
    met = worst <= TARGET_MS
    verdict = "met" if met else "NOT met"
    print(f"target: no Read during an edit more than {TARGET_MS:g} ms over the idle median: {verdict}")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
