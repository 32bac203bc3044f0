"""The LSP tool within its bounds: a late answer is cancelled, a server that keeps missing is restarted, and an
edit's diagnostics wait, sending included, ends on time and says so."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
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
