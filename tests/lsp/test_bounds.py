"""The LSP tool within its bounds: a late answer is cancelled, a server that keeps missing is restarted, and an
edit's diagnostics wait, sending included, ends on time and says so."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.lsp import warming
from mcp_codetools.lsp.workspace import Client
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import edit_checks
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_server.py")


def _session(root: Path, **overrides: object) -> CodeSession:
    servers = {"fake": {"command": [sys.executable, str(FAKE)], "extensions": [".py"]}}
    return CodeSession(Settings(roots=(root,), lsp_servers=servers, **overrides))  # type: ignore[arg-type]


@pytest.fixture
async def quick(pipeline: Pipeline, root: Path) -> AsyncIterator[Caller]:
    """The fake server with short bounds: 0.3 s for an answer, 0.5 s for an edit's diagnostics."""
    session = _session(root, lsp_timeout_s=0.3, lsp_diagnostics_wait_s=0.5)
    try:
        yield Caller(pipeline, session)
    finally:
        await session.aclose()


async def test_an_edits_diagnostics_wait_ends_on_time_even_when_the_server_stops_reading(
    quick: Caller, root: Path
) -> None:
    path = root / "big.py"
    path.write_text("x = 1\n", encoding="utf-8")
    await quick.ok("Read", {"file_path": str(path)})
    with anyio.fail_after(10):
        await quick.ok("LSP", {"operation": "documentSymbol", "file_path": str(path)})
        busy = await quick("Edit", {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 1  # SLOW"})
        # The server reads nothing now: a large text fills the pipe to it, and sending must not wait for that.
        large = "# " + "y" * 2_000_000 + "\n"
        bigger = await quick("Edit", {"file_path": str(path), "old_string": "x = 1", "new_string": large + "x = 2"})
    for out in (busy, bigger):
        assert not out.is_error, out.text
        assert "Diagnostics were not ready" in out.text and "within 0.5 s" in out.text
        assert out.meta["diagnostics"] == {"server": "fake", "answered": False}


async def test_an_edits_waits_leave_part_of_the_setting_for_writing_the_result(
    quick: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    plain = Client.diagnostics_for

    async def recorded(self: Client, path: Path, version: int, wait_s: float) -> list[dict[str, Any]] | None:
        waits.append(wait_s)
        return await plain(self, path, version, wait_s)

    monkeypatch.setattr(Client, "diagnostics_for", recorded)
    path = root / "mod.py"
    path.write_text("x = 1\n", encoding="utf-8")
    await quick.ok("Read", {"file_path": str(path)})
    with anyio.fail_after(10):
        await quick.ok("LSP", {"operation": "documentSymbol", "file_path": str(path)})
        out = await quick("Edit", {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 1  # SLOW"})
    assert "Diagnostics were not ready" in out.text and "within 0.5 s" in out.text
    # A loaded machine wakes a waiter late: the waits end early enough for the result to be written in time.
    assert waits and max(waits) <= 0.5 - min(edit_checks.RESULT_RESERVE_S, 0.05)


def _hover(path: Path) -> dict[str, object]:
    return {"operation": "hover", "file_path": str(path), "line": 1, "character": 1}


@pytest.fixture
def files(root: Path) -> tuple[Path, Path]:
    """A file whose hover never comes, and one whose hover does."""
    (root / "hang.py").write_text("HANG = 1\n", encoding="utf-8")
    (root / "fine.py").write_text("FINE = 1\n", encoding="utf-8")
    return root / "hang.py", root / "fine.py"


async def test_a_request_that_timed_out_is_cancelled(quick: Caller, files: tuple[Path, Path]) -> None:
    hang, fine = files
    with anyio.fail_after(20):
        await quick.ok("LSP", _hover(fine))
        late = await quick.fails("LSP", _hover(hang))
        answer = await quick.ok("LSP", _hover(fine))
    assert "did not answer hover within 0.3 s. Try again" in late.text
    assert "cancelled: [" in answer  # the fake server lists the ids it was told to cancel


async def test_a_server_that_misses_twice_in_a_row_is_started_afresh(
    quick: Caller, root: Path, files: tuple[Path, Path]
) -> None:
    hang, fine = files
    servers = quick.session.language_servers
    with anyio.fail_after(20):
        await quick.ok("LSP", _hover(fine))
        await quick.fails("LSP", _hover(hang))
        first = servers.running(fine, root)
        second = await quick.fails("LSP", _hover(hang))
        assert servers.running(fine, root) is None  # stopped at once, not at the next call
        answer = await quick.ok("LSP", _hover(fine))
    assert first is not None
    assert "twice in a row: it was stopped, and the next call starts it afresh" in second.text
    assert "word: FINE" in answer and "cancelled" not in answer  # a new server, told nothing yet
    assert servers.running(fine, root) not in (None, first)


async def test_an_answer_between_two_misses_keeps_the_server(
    quick: Caller, root: Path, files: tuple[Path, Path]
) -> None:
    hang, fine = files
    with anyio.fail_after(20):
        await quick.ok("LSP", _hover(fine))
        await quick.fails("LSP", _hover(hang))
        server = quick.session.language_servers.running(fine, root)
        await quick.ok("LSP", _hover(fine))
        again = await quick.fails("LSP", _hover(hang))
    assert "twice in a row" not in again.text
    assert quick.session.language_servers.running(fine, root) is server


@pytest.fixture
async def lsp(pipeline: Pipeline, root: Path) -> AsyncIterator[Caller]:
    session = _session(root)
    try:
        yield Caller(pipeline, session)
    finally:
        await session.aclose()


@pytest.fixture
def used(root: Path) -> Path:
    """`helper` defined once and used 150 times in two files, 151 references in all; 120 functions `fn_NNN`."""
    (root / "a.py").write_text("def helper():\n    pass\n" + "helper()\n" * 100, encoding="utf-8")
    (root / "b.py").write_text(
        "helper()\n" * 50 + "".join(f"def fn_{n:03}():\n    pass\n" for n in range(120)), encoding="utf-8"
    )
    return root / "a.py"


def _located(text: str) -> list[str]:
    return [line for line in text.splitlines()[1:] if line]


async def test_find_references_pages_with_offset_and_says_how_many_more(lsp: Caller, used: Path) -> None:
    at = {"operation": "findReferences", "file_path": str(used), "line": 1, "character": 5}
    with anyio.fail_after(20):
        first = await lsp.ok("LSP", at)
        rest = await lsp.ok("LSP", {**at, "offset": 100})
        narrow = await lsp.ok("LSP", {**at, "offset": 140, "limit": 10})
        past = await lsp.ok("LSP", {**at, "offset": 500})
    assert first.startswith("151 references in 2 files (1-100 shown; 51 more with offset=100):"), first[:200]
    assert rest.startswith("151 references in 2 files (101-151 shown):"), rest[:200]
    assert len(_located(first)) == 100 and len(_located(rest)) == 51
    assert len(set(_located(first)) | set(_located(rest))) == 151
    assert narrow.startswith("151 references in 2 files (141-150 shown; 1 more with offset=150):")
    assert len(_located(narrow)) == 10
    assert past == "151 references in 2 files (none from offset 500: there are 151):"


async def test_workspace_symbols_page_too(lsp: Caller, used: Path) -> None:
    ask = {"operation": "workspaceSymbol", "file_path": str(used), "query": "fn_"}
    with anyio.fail_after(20):
        first = await lsp.ok("LSP", ask)
        rest = await lsp.ok("LSP", {**ask, "offset": 100})
    assert first.startswith("120 symbols match 'fn_' (1-100 shown; 20 more with offset=100):"), first[:200]
    assert len(_located(first)) == 100
    assert rest.startswith("120 symbols match 'fn_' (101-120 shown):") and len(_located(rest)) == 20
    assert "fn_119" in rest and "fn_119" not in first


async def test_a_page_larger_than_the_most_one_answer_shows_is_refused(lsp: Caller, used: Path) -> None:
    out = await lsp.refuses(
        "LSP",
        {"operation": "findReferences", "file_path": str(used), "line": 1, "character": 5, "limit": 10_000},
        "limit",
    )
    assert "500" in out.text


async def test_a_cold_server_that_has_answered_nothing_yet_is_left_to_finish_indexing(
    pipeline: Pipeline, root: Path, files: tuple[Path, Path]
) -> None:
    hang, fine = files
    session = _session(root, lsp_timeout_s=0.3, lsp_first_call_s=0.3)
    cold = Caller(pipeline, session)
    try:
        with anyio.fail_after(20):
            first = await cold("LSP", _hover(hang))
            server = session.language_servers.running(fine, root)
            again = await cold("LSP", _hover(hang))
            answer = await cold.ok("LSP", _hover(fine))
            later = session.language_servers.running(fine, root)
    finally:
        await session.aclose()
    for out in (first, again):
        assert not out.is_error and "is still indexing the project" in out.text, out.text
    assert server is not None and later is server
    assert "cancelled" not in answer  # the question was left running, not cancelled


async def test_a_question_left_running_too_long_is_given_up(
    pipeline: Pipeline, root: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    hang, fine = files
    session = _session(root, lsp_timeout_s=0.3, lsp_first_call_s=0.3)
    cold = Caller(pipeline, session)
    try:
        with anyio.fail_after(20):
            await cold.ok("LSP", _hover(hang))  # "still indexing": the hover is left running
            monkeypatch.setattr(warming, "GIVE_UP_S", 0.0)
            answer = await cold.ok("LSP", _hover(fine))
    finally:
        await session.aclose()
    assert "cancelled: [2]" in answer  # request 1 was initialize, 2 the hover left running
