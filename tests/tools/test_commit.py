"""The one commit sequence: every writing tool writes through `editing.commit_write`, and the file history
records a version only for a write that happened (not for one refused at the last look, nor a failed one).

The writing tools are the tools that declare `writes_files`; a test fails when one has no case here."""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Awaitable, Callable
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
from mcp_codetools.tools import default_tools, edit, file_history, multiedit, notebook_edit, write
from tests.conftest import Caller
from tests.tools.notebook_here import edits_in_process
from tests.tools.samples import write_notebook

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Case:
    """One writing tool: its module, a file for it, and the call that changes that file."""

    tool: str
    module: Any
    make: Callable[[Path], Path]
    arguments: Callable[[Path], dict[str, Any]]
    prepare: Callable[[Caller, Path], Awaitable[None]] | None = None
    """What must happen after the Read for the call to have something to do (a version to restore)."""


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


async def _edit_to_v0(call: Caller, path: Path) -> None:
    await call.ok("Edit", {"file_path": str(path), "old_string": "v1", "new_string": "v0"})


CASES.append(
    Case(
        "FileHistory",
        file_history,
        _text,
        lambda p: {"action": "restore", "file_path": str(p), "version": 1},  # v1, which the Edit replaced
        _edit_to_v0,
    )
)
IDS = [case.tool for case in CASES]


@pytest.fixture(autouse=True)
def notebook_edits_here(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """NotebookEdit's change computed in this process (tests/tools/notebook_here.py), but where the commit through
    the one function is checked: there it goes through the worker process, as does the failed write's retry."""
    case = getattr(request.node, "callspec", None) and request.node.callspec.params.get("case")
    if case is not None and case.module is notebook_edit:
        if request.function is not test_every_writing_tool_commits_through_the_one_function:
            edits_in_process(monkeypatch)


def test_every_tool_that_writes_files_has_a_case() -> None:
    writers = {tool.name for tool in default_tools() if tool.writes_files}
    assert writers == set(IDS), "a writing tool without a case here is not checked to commit through commit_write"


async def _prepared(call: Caller, session: CodeSession, case: Case, path: Path) -> int:
    """Read the file and run the case's preparation; returns how many versions the history held then."""
    await call.ok("Read", {"file_path": str(path)})
    if case.prepare is not None:
        await case.prepare(call, path)
    return len(session.history.entries(path))


def _new_entries(session: CodeSession, path: Path, before: int) -> list[Any]:
    return session.history.entries(path)[before:]


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
    kept = await _prepared(call, session, case, path)
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
    assert _new_entries(session, path, kept) == [], "a version was recorded for a write that never happened"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_failed_write_leaves_the_file_no_history_version_and_no_temp_file(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch, case: Case, code: int
) -> None:
    path = case.make(root)
    kept = await _prepared(call, session, case, path)
    arguments = case.arguments(path)
    before = path.read_bytes()

    def failing_write(fd: int, data: bytes) -> None:
        raise OSError(code, "injected")

    monkeypatch.setattr(writes, "_write_all", failing_write)
    out = await call.fails(case.tool, arguments)
    assert "Cannot write" in out.text and "left unchanged" in out.text, out.text
    assert path.read_bytes() == before
    assert _new_entries(session, path, kept) == [], "a version was recorded for a write that failed"
    assert _leftovers(root, path) == [], "a temporary file was left behind"
    monkeypatch.undo()
    done = await call(case.tool, arguments)
    assert not done.is_error, done.text
    assert len(_new_entries(session, path, kept)) == 1, "the retried write is recorded once"


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_every_writing_tool_commits_through_the_one_function(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch, case: Case
) -> None:
    path = case.make(root)
    kept = await _prepared(call, session, case, path)
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
    assert [(made_by.split()[0], target) for made_by, target in committed] == [(case.tool, path)]
    assert written == [path]
    (entry,) = _new_entries(session, path, kept)
    assert entry.replaced_by.split()[0] == case.tool
    assert session.history.content(entry) == before


BY_ITSELF = ("write_atomic", "remove_file", "history.remember", "recheck_unchanged", "record_write", "COMMITS")
"""What only `editing.commit_write` may reach: the write primitives, the history, the ledger's record, the lock."""


def test_no_tool_writes_or_records_by_itself() -> None:
    """The write primitive and the history are reached only through commit_write, in every module of tools/."""
    modules = sorted((Path(edit.__file__).parent).glob("*.py"))
    assert {Path(case.module.__file__) for case in CASES} <= set(modules) and len(modules) > len(CASES)
    for module in modules:
        source = module.read_text(encoding="utf-8")
        for name in BY_ITSELF:
            assert name not in source, f"tools/{module.name} uses {name} itself instead of editing.commit_write"


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
    kept = await _prepared(call, session, case, path)
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
                assert _new_entries(session, path, kept) == [], "a version was recorded before the write returned"
                release.set()
    finally:
        release.set()
        await other.aclose()
    assert not results[0].is_error, results[0].text
    assert [e.replaced_by.split()[0] for e in _new_entries(session, path, kept)] == [case.tool]
