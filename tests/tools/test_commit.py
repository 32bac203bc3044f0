"""The one commit sequence: every writing tool writes through `editing.commit_write`, and the file history
records a version only for a write that happened (not for one refused at the last look, nor a failed one)."""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest

from mcp_codetools.files import editing, writes
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import edit, multiedit, notebook_edit, write
from tests.conftest import Caller
from tests.tools.samples import write_notebook

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Case:
    """One writing tool: its module, a file for it, and the call that changes that file."""

    tool: str
    module: Any
    make: Callable[[Path], Path]
    arguments: Callable[[Path], dict[str, Any]]


def _text(root: Path) -> Path:
    path = root / "a.txt"
    path.write_text("v1\n", encoding="utf-8")
    return path


def _notebook(root: Path) -> Path:
    return write_notebook(root / "nb.ipynb")


def _first_cell(path: Path) -> str:
    return str(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["id"])


CASES = [
    Case("Edit", edit, _text, lambda p: {"file_path": str(p), "old_string": "v1", "new_string": "v2"}),
    Case("Write", write, _text, lambda p: {"file_path": str(p), "content": "v2\n"}),
    Case(
        "MultiEdit",
        multiedit,
        _text,
        lambda p: {"file_path": str(p), "edits": [{"old_string": "v1", "new_string": "v2"}]},
    ),
    Case(
        "NotebookEdit",
        notebook_edit,
        _notebook,
        lambda p: {"notebook_path": str(p), "cell_id": _first_cell(p), "new_source": "# changed"},
    ),
]
IDS = [case.tool for case in CASES]


def _tool_class(case: Case) -> type[Any]:
    return next(
        value
        for value in vars(case.module).values()
        if isinstance(value, type) and getattr(value, "name", None) == case.tool
    )


def _leftovers(folder: Path, *keep: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p not in keep)


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_call_refused_at_the_last_look_leaves_no_history_version(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch, case: Case
) -> None:
    path = case.make(root)
    await call.ok("Read", {"file_path": str(path)})
    arguments = case.arguments(path)
    cls = _tool_class(case)
    original = cls.validate_input
    behind_our_back = path.read_bytes() + b"\n"

    async def validate_then_someone_writes(self: object, args: object, ctx: object) -> object:
        checked = await original(self, args, ctx)
        path.write_bytes(behind_our_back)
        return checked

    monkeypatch.setattr(cls, "validate_input", validate_then_someone_writes)
    out = await call.fails(case.tool, arguments)
    assert out.text.startswith("File has been unexpectedly modified"), out.text
    assert path.read_bytes() == behind_our_back
    assert session.history.entries(path) == [], "a version was recorded for a write that never happened"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_failed_write_leaves_the_file_no_history_version_and_no_temp_file(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch, case: Case, code: int
) -> None:
    path = case.make(root)
    await call.ok("Read", {"file_path": str(path)})
    arguments = case.arguments(path)
    before = path.read_bytes()

    def failing_write(fd: int, data: bytes) -> None:
        raise OSError(code, "injected")

    monkeypatch.setattr(writes, "_write_all", failing_write)
    out = await call.fails(case.tool, arguments)
    assert "Cannot write" in out.text and "left unchanged" in out.text, out.text
    assert path.read_bytes() == before
    assert session.history.entries(path) == [], "a version was recorded for a write that failed"
    assert _leftovers(root, path) == [], "a temporary file was left behind"
    monkeypatch.undo()
    done = await call(case.tool, arguments)
    assert not done.is_error, done.text
    assert len(session.history.entries(path)) == 1, "the retried write is recorded once"


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_every_writing_tool_commits_through_the_one_function(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch, case: Case
) -> None:
    path = case.make(root)
    await call.ok("Read", {"file_path": str(path)})
    committed: list[tuple[str, Path]] = []
    written: list[Path] = []
    real_commit, real_write = editing.commit_write, writes.write_atomic

    def commit_spy(*args: Any, **kwargs: Any) -> Any:
        committed.append((kwargs["made_by"], args[0]))
        return real_commit(*args, **kwargs)

    def write_spy(target: Path, *args: Any) -> Any:
        written.append(target)
        return real_write(target, *args)

    # raising=True (the default): a tool module that does not import commit_write fails here.
    monkeypatch.setattr(case.module, "commit_write", commit_spy)
    # A tool that wrote by itself (writes.write_atomic) would change the file without passing this spy.
    monkeypatch.setattr(editing, "write_atomic", write_spy)
    before = path.read_bytes()
    await call.ok(case.tool, case.arguments(path))
    assert path.read_bytes() != before
    assert committed == [(case.tool, path)]
    assert written == [path]
    assert [e.replaced_by for e in session.history.entries(path)] == [case.tool]
    assert session.history.content(session.history.entries(path)[0]) == before


def test_no_writing_tool_writes_or_records_by_itself() -> None:
    """The write primitive and the history are reached only through commit_write."""
    for case in CASES:
        source = Path(case.module.__file__).read_text(encoding="utf-8")
        for name in ("write_atomic", "history.remember", "recheck_unchanged", "record_write"):
            assert name not in source, f"{case.tool} calls {name} itself instead of editing.commit_write"


async def test_a_create_that_fails_records_nothing(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = root / "new" / "b.txt"

    def failing_write(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "injected")

    monkeypatch.setattr(writes, "_write_all", failing_write)
    await call.fails("Write", {"file_path": str(path), "content": "x\n"})
    assert not path.exists() and session.history.entries(path) == []
    assert _leftovers(path.parent) == []


async def test_an_in_place_write_that_fails_keeps_the_version_before_it(
    pipeline: Pipeline, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file with other hard links is written in place: a failure part-way may have changed it, so undo stays."""
    path = _text(root)
    os.link(path, root / "link.txt")

    def half_write(fd: int, data: bytes) -> None:
        os.write(fd, data[:1])
        raise OSError(errno.EIO, "injected")

    session = CodeSession(Settings(roots=(root,), hard_links="write-through"))
    try:
        call = Caller(pipeline, session)
        await call.ok("Read", {"file_path": str(path)})
        monkeypatch.setattr(writes, "_write_all", half_write)
        await call.fails("Edit", {"file_path": str(path), "old_string": "v1", "new_string": "v2"})
        entries = session.history.entries(path)
        assert len(entries) == 1 and "failed part-way" in entries[0].replaced_by
        assert session.history.content(entries[0]) == b"v1\n"
    finally:
        await session.aclose()


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_the_write_runs_off_the_event_loop_while_another_session_is_served(
    pipeline: Pipeline, call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch, case: Case
) -> None:
    """Writing and syncing a large file takes ~90 ms: held in the commit, another session's Read is answered."""
    path = case.make(root)
    small = root / "small.txt"
    small.write_text("small\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    writing = anyio.Event()
    release = threading.Event()
    loop_thread = threading.get_ident()
    real_write = editing.write_atomic

    def held_write(target: Path, *args: Any) -> Any:
        assert threading.get_ident() != loop_thread, "the write ran on the event loop"
        anyio.from_thread.run_sync(writing.set)
        assert release.wait(timeout=20), "the test never released the write"
        return real_write(target, *args)

    monkeypatch.setattr(editing, "write_atomic", held_write)
    other = CodeSession(Settings(roots=(root,)))
    results: list[Any] = []
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def commit() -> None:
                    results.append(await call(case.tool, case.arguments(path)))
                    writing.set()  # a call that ended without reaching the write wakes the test, which then fails

                tg.start_soon(commit)
                await writing.wait()
                read = await Caller(pipeline, other).ok("Read", {"file_path": str(small)})
                assert "small" in read and not results, "the Read was answered while the write was held"
                assert session.history.entries(path) == [], "a version was recorded before the write returned"
                release.set()
    finally:
        release.set()
        await other.aclose()
    assert not results[0].is_error, results[0].text
    assert [e.replaced_by for e in session.history.entries(path)] == [case.tool]
