"""A cold language server through a real MCP client: the first call sends progress while it waits, and past its
budget it answers "still indexing" (not an error) and leaves the request running for the retry to collect."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_codetools.lsp import warming
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_server.py")


def _app(root: Path, budget_s: float) -> CodeToolsServer:
    servers = {"fake": {"command": [sys.executable, str(FAKE)], "extensions": [".py"]}}
    bounds = {"lsp_timeout_s": budget_s, "lsp_first_call_s": budget_s}
    settings = Settings(roots=(root,), lsp_servers=servers, **bounds)  # type: ignore[arg-type]
    return CodeToolsServer(settings, default_tools())


def _hover(path: Path) -> dict[str, Any]:
    return {"operation": "hover", "file_path": str(path), "line": 1, "character": 1}


@pytest.fixture
def files(root: Path) -> tuple[Path, Path]:
    """A file whose hover the fake server holds, and one whose opening makes it answer what it holds."""
    (root / "held.py").write_text("HELD = 'DEFER'\n", encoding="utf-8")
    (root / "release.py").write_text("GO = 'RELEASE'\n", encoding="utf-8")
    return root / "held.py", root / "release.py"


def _text(result: Any) -> str:
    return "".join(part.text for part in result.content if getattr(part, "text", None))


async def test_a_cold_call_sends_progress_while_it_waits_and_answers_once_the_server_does(
    root: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warming, "PROGRESS_EVERY_S", 0.01)
    held, release = files
    seen: list[str | None] = []
    waiting = anyio.Event()
    results: dict[str, Any] = {}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)
        if sum("indexing the project" in (m or "") for m in seen) >= 2:
            waiting.set()

    async def first_call(client: Client) -> None:
        results["held"] = await client.call_tool("LSP", _hover(held), progress_callback=on_progress)

    async with Client(_app(root, 60.0).server, mode="legacy") as client:  # the test, not the clock, ends the wait
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first_call, client)
                await waiting.wait()
                assert "held" not in results
                results["release"] = await client.call_tool("LSP", _hover(release))
    assert not results["held"].is_error and _text(results["held"]).startswith("word: HELD")
    assert "starting the language server" in seen
    assert not results["release"].is_error


async def test_past_its_budget_a_cold_call_says_indexing_and_the_retry_collects_the_answer(
    root: Path, files: tuple[Path, Path]
) -> None:
    held, release = files
    async with Client(_app(root, 0.3).server, mode="legacy") as client:
        with anyio.fail_after(20):
            first = await client.call_tool("LSP", _hover(held))
            await client.call_tool("LSP", _hover(release))  # the server answers what it held, then this
            # The fake server would hold a new request for ever: only the one left running can answer.
            again = await client.call_tool("LSP", _hover(held))
    text = _text(first)
    assert not first.is_error, text
    assert "is still indexing the project" in text and "has not answered hover yet" in text
    details = first.meta["codetools/result"]
    assert details["indexing"] is True and details["retryAfterS"] >= 2
    assert f"ask again in about {details['retryAfterS']} s" in text
    assert not again.is_error and _text(again).startswith("word: HELD"), _text(again)


@pytest.mark.parametrize(
    ("size", "since_s", "contention", "expected"),
    [
        (warming.BYTES_PER_S * 10, 4.0, 1.0, 6),  # from the project's size: 10 s in all, 4 gone
        (warming.BYTES_PER_S * 10, 4.0, 3.0, 26),  # three runnable processes per core: 30 s in all
        (warming.BYTES_PER_S * 10, 9.5, 1.0, 5),  # past the estimate: half the time so far
        (0, 0.3, 1.0, 2),  # never less than 2 s
    ],
)
def test_when_to_ask_again_comes_from_the_projects_size_and_the_load_then_from_the_time_so_far(
    size: int, since_s: float, contention: float, expected: int
) -> None:
    assert warming.retry_after(size, since_s, contention) == expected


def test_the_size_counts_the_servers_files_outside_hidden_and_build_folders(root: Path) -> None:
    files = {"a.py": 10, "pkg/b.py": 20, "pkg/c.txt": 40, ".venv/d.py": 80, "node_modules/e.py": 160}
    for name, size in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x" * size)
    assert warming.source_bytes(root, {".py"}) == 30
