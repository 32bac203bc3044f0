"""NotebookEdit's heavy work runs in a worker process: the loop serves other sessions meanwhile, and a
cancelled, timed-out, dying or over-talkative worker is killed, reaped and reported clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from mcp_codetools.child_pipes import finish
from mcp_codetools.files import notebook_edit as files_notebook_edit
from mcp_codetools.files import notebook_worker
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from tests.conftest import Caller
from tests.tools.samples import write_notebook

pytestmark = pytest.mark.anyio

HOLD = "import sys, threading; sys.stdin.buffer.read(); threading.Event().wait()"
"""A stand-in worker that takes its request and never answers."""


def _first_cell(path: Path) -> str:
    return str(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["id"])


class Workers:
    """Replaces `open_worker`: records every worker started, optionally runs a stand-in program instead."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, program: str | None = None) -> None:
        self.started: list[anyio.abc.Process] = []
        self.running = anyio.Event()
        real = notebook_worker.open_worker

        async def opened() -> anyio.abc.Process:
            if program is None:
                process = await real()
            else:
                process = await anyio.open_process(
                    [sys.executable, "-I", "-c", program],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
            self.started.append(process)
            self.running.set()
            return process

        monkeypatch.setattr(notebook_worker, "open_worker", opened)

    def all_reaped(self) -> bool:
        """Every worker has exited and been waited for (its pid no longer names a process of ours)."""
        for process in self.started:
            if process.returncode is None:
                return False
            try:
                os.waitpid(process.pid, os.WNOHANG)
            except ChildProcessError:
                continue  # reaped already: what is wanted
            return False
        return True


async def _edit(call: Caller, path: Path, source: str = "# changed") -> Any:
    return await call("NotebookEdit", {"notebook_path": str(path), "cell_id": _first_cell(path), "new_source": source})


async def test_the_edit_runs_in_another_process(call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's own copy of the edit is never used: the worker, another process, does it."""
    path = write_notebook(root / "nb.ipynb")
    await call.ok("Read", {"file_path": str(path)})
    workers = Workers(monkeypatch)

    def here(*args: object, **kwargs: object) -> object:
        raise AssertionError("the notebook was edited in the server's process")

    monkeypatch.setattr(files_notebook_edit, "edit_notebook", here)
    out = await _edit(call, path)
    assert not out.is_error, out.text
    assert "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]) == "# changed"
    assert [p.pid != os.getpid() for p in workers.started] == [True]
    assert workers.all_reaped()


async def test_the_loop_serves_another_session_while_a_worker_runs_and_cancelling_kills_it(
    pipeline: Pipeline, call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_notebook(root / "nb.ipynb")
    before = path.read_bytes()
    (root / "small.txt").write_text("small\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    workers = Workers(monkeypatch, HOLD)
    other = CodeSession(Settings(roots=(root,)))
    results: list[Any] = []
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def edit() -> None:
                    results.append(await _edit(call, path))
                    workers.running.set()  # ended before a worker ran: wake the test, which then fails

                tg.start_soon(edit)
                await workers.running.wait()
                read = await Caller(pipeline, other).ok("Read", {"file_path": str(root / "small.txt")})
                assert "small" in read and not results, "the Read was answered while the worker was held"
                tg.cancel_scope.cancel()
    finally:
        await other.aclose()
    assert not results and len(workers.started) == 1
    assert workers.all_reaped(), "the cancelled call left its worker running or unreaped"
    assert path.read_bytes() == before


async def test_a_worker_that_takes_too_long_is_killed_and_the_call_refused(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_notebook(root / "nb.ipynb")
    before = path.read_bytes()
    await call.ok("Read", {"file_path": str(path)})
    workers = Workers(monkeypatch, HOLD)
    monkeypatch.setattr(notebook_worker, "WORKER_TIMEOUT_S", 0.5)
    with anyio.fail_after(30):
        out = await _edit(call, path)
    assert out.is_error and out.meta["errorCode"] == "execution_failed", out.text
    assert "took longer than" in out.text and "Nothing was written" in out.text
    assert workers.all_reaped() and path.read_bytes() == before


@pytest.mark.parametrize(
    ("program", "said"),
    [
        ("import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'x' * 100_000)", "gave more back"),
        ("import os, sys; sys.stderr.write('boom\\n'); os._exit(3)", "exited with 3 (boom)"),
        ("import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'\\0\\0\\0\\0\\0\\0\\1\\0{')", "whole answer"),
    ],
    ids=["too-much", "dies", "cut-short"],
)
async def test_a_worker_that_misbehaves_is_a_clear_refusal(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch, program: str, said: str
) -> None:
    path = write_notebook(root / "nb.ipynb")
    before = path.read_bytes()
    await call.ok("Read", {"file_path": str(path)})
    workers = Workers(monkeypatch, program)
    monkeypatch.setattr(notebook_worker, "answer_bound", lambda data, source: 1_000)
    with anyio.fail_after(30):
        out = await _edit(call, path)
    assert out.is_error and out.meta["errorCode"] == "execution_failed", out.text
    assert said in out.text and "Nothing was written" in out.text, out.text
    assert workers.all_reaped() and path.read_bytes() == before


async def test_the_worker_imports_nothing_from_the_working_folder_and_gets_no_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A planted `nbformat.py` in the working folder is not imported, and the server's secrets are not passed on."""
    marker = tmp_path / "planted-ran"
    (tmp_path / "nbformat.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCP_CODETOOLS_HTTP_TOKEN", "secret-token")
    path = write_notebook(tmp_path / "nb.ipynb")
    with anyio.fail_after(60):
        change = await notebook_worker.edit_in_worker(
            path.read_bytes(), path, cell=_first_cell(path), new_source="y = 2", cell_type=None, mode="replace"
        )
    assert change.index == 0 and b"y = 2" in change.data and not marker.exists()
    monkeypatch.setattr(
        notebook_worker,
        "worker_command",
        lambda: [
            sys.executable,
            "-I",
            "-c",
            "import os, sys; sys.stdout.write(os.environ.get('MCP_CODETOOLS_HTTP_TOKEN', '-'))",
        ],
    )
    process = await notebook_worker.open_worker()
    try:
        assert process.stdout is not None
        with anyio.fail_after(30):
            seen = b"".join([chunk async for chunk in process.stdout])
    finally:
        await finish(process)
    assert seen == b"-"
