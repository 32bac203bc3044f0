"""NotebookEdit's heavy work in a child process: importing nbformat, parsing, validating, editing, writing out.

In a worker thread it still held the GIL for most of the work, and a 20 MB notebook delayed every other
session's calls by up to ~100 ms (the collector's passes, the parser's tokens). A process shares nothing:
the loop only waits on its pipes. One process per call, started with `sys.executable -I` (no PYTHON*
variables, no user site, not the working folder on the path) and a bare environment (the server's secrets
stay its own), in its own process group. It costs ~0.3 s to start and import nbformat, against seconds of
parse on the notebooks where it matters, and its memory (about 13 times the notebook) is returned when it
exits. A cancelled or timed-out call kills the group and reaps the child; what it sends back is bounded.

The request on stdin: an 8-byte length, a JSON header (the edit and the bounds), then the notebook bytes.
The answer on stdout: an 8-byte length, a JSON header (the change, or the error to raise), then the new
bytes. The file is written by the server (files/editing.py), never here.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc

import mcp_codetools
from mcp_codetools.child_pipes import drain, feed, finish, kill_group
from mcp_codetools.errors import BinaryFileError, ExecutionError, FileTooLargeError, InvalidInputError, ToolError
from mcp_codetools.files.kinds import NOTEBOOK_MAX_BYTES, NOTEBOOK_MAX_CELLS

EditMode = Literal["replace", "insert", "delete"]
CellType = Literal["code", "markdown"]

WORKER_TIMEOUT_S = 120.0
"""The longest one edit may take in its process (a notebook at the bounds takes 2-8 s)."""
STDERR_KEEP_BYTES = 8_192
_LENGTH = struct.Struct(">Q")
_ERRORS: dict[str, type[ToolError]] = {
    cls.__name__: cls for cls in (InvalidInputError, BinaryFileError, FileTooLargeError)
}
"""The refusals the worker may send back, raised again here as they were raised there."""
_KEPT_ENV = ("PATH", "SYSTEMROOT", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP")
_BOOT = (
    "import json, sys; sys.path[:0] = [p for p in json.loads(sys.argv[1]) if p not in sys.path]; "
    "from mcp_codetools.files.notebook_edit import serve_one; serve_one()"
)
"""The child's entry (a string, not an import: this module stays free of nbformat)."""


@dataclass(frozen=True, slots=True)
class NotebookChange:
    """A notebook edit ready to write: the new bytes and which cell changed how."""

    data: bytes
    cell_id: str
    index: int
    """0-based position of the cell changed (for delete: where it was)."""
    cell_type: str
    old_source: str | None
    total_cells: int


def frame(header: dict[str, Any], body: bytes) -> bytes:
    """A request or an answer as the pipes carry it: the header's length, the header as JSON, the body."""
    raw = json.dumps(header).encode("utf-8")
    return _LENGTH.pack(len(raw)) + raw + body


def unframe(message: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and the body of a framed message.

    Raises:
        ValueError: it is cut short or its header is not a JSON object.
    """
    if len(message) < _LENGTH.size:
        raise ValueError("no header")
    (size,) = _LENGTH.unpack_from(message)
    if len(message) < _LENGTH.size + size:
        raise ValueError("the header is cut short")
    header = json.loads(message[_LENGTH.size : _LENGTH.size + size])
    if not isinstance(header, dict):
        raise ValueError("the header is not an object")
    return header, message[_LENGTH.size + size :]


def answer_bound(data: bytes, new_source: str) -> int:
    """The most a worker may send back: the notebook, the new source escaped, the old cell's source, a header."""
    return 2 * len(data) + 8 * len(new_source.encode("utf-8")) + 1_000_000


async def edit_in_worker(
    data: bytes,
    path: Path,
    *,
    cell: str | None,
    new_source: str,
    cell_type: CellType | None,
    mode: EditMode,
) -> NotebookChange:
    """The notebook's new bytes after one cell change, computed in a child process.

    Raises:
        InvalidInputError, BinaryFileError, FileTooLargeError: as `edit_notebook` raises them.
        ExecutionError: the worker took too long, died, or answered more than it may.
        RuntimeError: the worker failed unexpectedly (a bug: reported as an internal error).
    """
    header = {
        "path": str(path),
        "cell": cell,
        "new_source": new_source,
        "cell_type": cell_type,
        "mode": mode,
        "max_bytes": NOTEBOOK_MAX_BYTES,
        "max_cells": NOTEBOOK_MAX_CELLS,
    }
    answer = await _run(frame(header, data), answer_bound(data, new_source), path)
    try:
        head, body = unframe(answer)
    except ValueError:
        raise ExecutionError(
            f"Checking {path} as a notebook failed: the worker process ended without a whole answer. Nothing was "
            "written. Try again; if it fails again, change the notebook with a script (keep it valid nbformat)."
        ) from None
    error = head.get("error")
    if isinstance(error, dict):
        kind, message = str(error.get("kind")), str(error.get("message"))
        if kind in _ERRORS:
            raise _ERRORS[kind](message)
        if kind == "MemoryError":
            raise ExecutionError(
                f"{path} took more memory to check and write back than this machine gave. Nothing was written. "
                "Change it with a script instead (keep it valid nbformat)."
            )
        raise RuntimeError(f"the notebook worker failed: {message}")
    done = head.get("ok")
    if not isinstance(done, dict):
        raise RuntimeError("the notebook worker answered without a result")
    return NotebookChange(
        body,
        str(done["cell_id"]),
        int(done["index"]),
        str(done["cell_type"]),
        done["old_source"] if isinstance(done["old_source"], str) else None,
        int(done["total_cells"]),
    )


async def _run(request: bytes, bound: int, path: Path) -> bytes:
    """Send `request` to a new worker and return what it printed; kill and reap it however this ends."""
    process = await open_worker()
    out = bytearray()
    err = bytearray()
    over = False

    async def drain_out(stream: anyio.abc.ByteReceiveStream) -> None:
        nonlocal over
        async for chunk in stream:
            if len(out) + len(chunk) > bound:
                over = True
                kill_group(process)
                return
            out.extend(chunk)

    try:
        with anyio.move_on_after(WORKER_TIMEOUT_S) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(feed, process, request)
                if process.stdout is not None:
                    tg.start_soon(drain_out, process.stdout)
                if process.stderr is not None:
                    tg.start_soon(drain, process.stderr, err, STDERR_KEEP_BYTES)
            await process.wait()
    finally:
        await finish(process)
    if scope.cancelled_caught:
        raise ExecutionError(
            f"Checking {path} as a notebook took longer than {WORKER_TIMEOUT_S:.0f} s and was stopped. Nothing was "
            "written. Change it with a script instead (keep it valid nbformat)."
        )
    if over:
        raise ExecutionError(
            f"Checking {path} as a notebook gave more back than this change can make ({bound:,} bytes). Nothing "
            "was written."
        )
    if process.returncode != 0 and not out:
        stderr = err.decode("utf-8", "replace").strip().splitlines()
        raise ExecutionError(
            f"Checking {path} as a notebook failed: the worker process exited with {process.returncode}"
            f"{f' ({stderr[-1][:300]})' if stderr else ''}. Nothing was written. Try again; if it fails again, "
            "change the notebook with a script (keep it valid nbformat)."
        )
    return bytes(out)


async def open_worker() -> anyio.abc.Process:
    """A new worker process in its own group (tests replace it to hold or count workers)."""
    return await anyio.open_process(
        worker_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={name: os.environ[name] for name in _KEPT_ENV if name in os.environ},
        start_new_session=True,
    )


def worker_command() -> list[str]:
    """This interpreter, isolated, with the server's import path (but never the working folder)."""
    here = str(Path(mcp_codetools.__file__).resolve().parent.parent)
    cwd = os.getcwd()
    path = [here] + [p for p in sys.path if p and os.path.isabs(p) and p != cwd and p != here]
    return [sys.executable, "-I", "-c", _BOOT, json.dumps(path)]
