"""The LSP tool against a small scripted language server: every operation, confinement, faults, diagnostics."""

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
MODULE = """\
def helper(x):
    return x


def main():
    return helper(1) + outside


class Box:
    pass
"""


@pytest.fixture
def secret(outside: Path) -> Path:
    path = outside / "elsewhere.py"
    path.write_text("SECRET_CONTENT = 1\n", encoding="utf-8")
    return path


@pytest.fixture
def module(root: Path) -> Path:
    (root / "pkg").mkdir()
    path = root / "pkg" / "mod.py"
    path.write_text(MODULE, encoding="utf-8")
    return path


def _settings(root: Path, secret: Path, **overrides: object) -> Settings:
    servers = {"fake": {"command": [sys.executable, str(FAKE), str(secret)], "extensions": [".py"]}}
    return Settings(roots=(root,), lsp_servers=servers, **overrides)  # type: ignore[arg-type]


@pytest.fixture
async def lsp(pipeline: Pipeline, root: Path, secret: Path) -> AsyncIterator[Caller]:
    session = CodeSession(_settings(root, secret))
    try:
        yield Caller(pipeline, session)
    finally:
        await session.aclose()


async def test_definition_points_at_the_def_line_with_its_text(lsp: Caller, module: Path) -> None:
    with anyio.fail_after(20):
        text = await lsp.ok(
            "LSP", {"operation": "goToDefinition", "file_path": str(module), "line": 6, "character": 13}
        )
    assert "pkg/mod.py:1:5" in text
    assert "def helper(x):" in text


async def test_references_list_every_use_grouped_by_file(lsp: Caller, module: Path) -> None:
    with anyio.fail_after(20):
        text = await lsp.ok("LSP", {"operation": "findReferences", "file_path": str(module), "line": 1, "character": 5})
    assert "pkg/mod.py:1:5" in text and "pkg/mod.py:6:12" in text
    assert "return helper(1) + outside" in text


async def test_hover_and_implementation(lsp: Caller, module: Path) -> None:
    with anyio.fail_after(20):
        hover = await lsp.ok("LSP", {"operation": "hover", "file_path": str(module), "line": 1, "character": 6})
        impl = await lsp.ok(
            "LSP", {"operation": "goToImplementation", "file_path": str(module), "line": 9, "character": 7}
        )
    assert "word: helper" in hover
    assert "pkg/mod.py:9:7" in impl and "class Box:" in impl


async def test_document_and_workspace_symbols(lsp: Caller, module: Path) -> None:
    with anyio.fail_after(20):
        symbols = await lsp.ok("LSP", {"operation": "documentSymbol", "file_path": str(module)})
        found = await lsp.ok("LSP", {"operation": "workspaceSymbol", "file_path": str(module), "query": "bo"})
    for name in ("helper", "main", "Box"):
        assert name in symbols
    assert "Box" in found and "helper" not in found


async def test_call_hierarchy_both_ways(lsp: Caller, module: Path) -> None:
    with anyio.fail_after(20):
        item = await lsp.ok(
            "LSP", {"operation": "prepareCallHierarchy", "file_path": str(module), "line": 1, "character": 5}
        )
        incoming = await lsp.ok(
            "LSP", {"operation": "incomingCalls", "file_path": str(module), "line": 1, "character": 5}
        )
        outgoing = await lsp.ok(
            "LSP", {"operation": "outgoingCalls", "file_path": str(module), "line": 5, "character": 5}
        )
    assert "helper" in item
    assert "main at pkg/mod.py:5:5 (calls at line 6)" in incoming
    assert "helper" in outgoing


async def test_a_location_outside_the_roots_is_a_path_without_content(lsp: Caller, module: Path, secret: Path) -> None:
    with anyio.fail_after(20):
        text = await lsp.ok(
            "LSP", {"operation": "goToDefinition", "file_path": str(module), "line": 6, "character": 25}
        )
    assert str(secret) in text
    assert "SECRET_CONTENT" not in text


async def test_position_operations_need_a_position_and_workspace_symbol_a_query(lsp: Caller, module: Path) -> None:
    out = await lsp.fails("LSP", {"operation": "findReferences", "file_path": str(module)})
    assert "line and character" in out.text
    out = await lsp.fails("LSP", {"operation": "workspaceSymbol", "file_path": str(module)})
    assert "needs a query" in out.text


async def test_a_file_no_server_serves_is_refused_with_what_to_use(lsp: Caller, root: Path) -> None:
    other = root / "notes.txt"
    other.write_text("hello\n", encoding="utf-8")
    out = await lsp.fails("LSP", {"operation": "documentSymbol", "file_path": str(other)})
    assert "No language server is configured for .txt files" in out.text and "Grep" in out.text


async def test_a_crashed_server_is_started_again_on_the_next_call(lsp: Caller, module: Path, root: Path) -> None:
    crashing = root / "pkg" / "crash.py"
    crashing.write_text("CRASH = True\n", encoding="utf-8")
    with anyio.fail_after(20):
        first = await lsp.ok("LSP", {"operation": "documentSymbol", "file_path": str(module)})
        pid = lsp.session.language_servers.running(module, root)
        assert pid is not None
        out = await lsp.fails("LSP", {"operation": "hover", "file_path": str(crashing), "line": 1, "character": 1})
        assert "stopped" in out.text and "starts it again" in out.text
        again = await lsp.ok("LSP", {"operation": "documentSymbol", "file_path": str(module)})
    assert again == first
    assert lsp.session.language_servers.running(module, root) is not pid


async def test_a_server_that_does_not_answer_gives_a_clear_error(
    pipeline: Pipeline, root: Path, secret: Path, module: Path
) -> None:
    hanging = root / "pkg" / "hang.py"
    hanging.write_text("HANG = 1\n", encoding="utf-8")
    session = CodeSession(_settings(root, secret, lsp_timeout_s=0.3))
    try:
        with anyio.fail_after(20):
            await Caller(pipeline, session).ok("LSP", {"operation": "documentSymbol", "file_path": str(module)})
            out = await Caller(pipeline, session).fails(
                "LSP", {"operation": "hover", "file_path": str(hanging), "line": 1, "character": 1}
            )
    finally:
        await session.aclose()
    assert "did not answer hover within 0.3 s" in out.text


async def test_an_edit_lists_the_new_diagnostics_and_a_fix_clears_them(lsp: Caller, module: Path) -> None:
    with anyio.fail_after(30):
        await lsp.ok("Read", {"file_path": str(module)})
        await lsp.ok("LSP", {"operation": "documentSymbol", "file_path": str(module)})
        broke = await lsp("Edit", {"file_path": str(module), "old_string": "    pass", "new_string": "    BAD = 1"})
        assert not broke.is_error, broke.text
        assert "reports 1 new problem" in broke.text and "mod.py:10:5 error: BAD on line 10" in broke.text
        fixed = await lsp("Edit", {"file_path": str(module), "old_string": "    BAD = 1", "new_string": "    GOOD = 1"})
    assert not fixed.is_error, fixed.text
    assert "new problem" not in fixed.text
    assert fixed.meta["diagnostics"] == {"server": "fake", "answered": True, "new": 0, "all": 0}


async def test_diagnostics_already_there_before_the_edit_are_not_listed(lsp: Caller, root: Path) -> None:
    path = root / "old.py"
    path.write_text("BAD = 0\nx = 1\n", encoding="utf-8")
    with anyio.fail_after(30):
        await lsp.ok("Read", {"file_path": str(path)})
        await lsp.ok("LSP", {"operation": "documentSymbol", "file_path": str(path)})
        out = await lsp("Edit", {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 2"})
    assert not out.is_error, out.text
    assert "new problem" not in out.text
    assert out.meta["diagnostics"]["all"] == 1 and out.meta["diagnostics"]["new"] == 0


async def test_without_a_running_server_an_edit_waits_for_none(lsp: Caller, module: Path) -> None:
    await lsp.ok("Read", {"file_path": str(module)})
    out = await lsp("Edit", {"file_path": str(module), "old_string": "    pass", "new_string": "    BAD = 1"})
    assert not out.is_error, out.text
    assert "diagnostics" not in out.meta
    assert not lsp.session.language_servers_started


async def test_a_project_file_cannot_name_a_language_server(root: Path) -> None:
    from mcp_codetools.settings import PROJECT_FILE, load_settings

    (root / PROJECT_FILE).write_text('[lsp.servers.evil]\ncommand = ["sh"]\nextensions = [".py"]\n', encoding="utf-8")
    loaded = load_settings([root], environ={"XDG_CONFIG_HOME": str(root / "no-user-config")})
    assert loaded.settings.lsp_servers == {}


async def test_the_user_config_names_one(root: Path, tmp_path: Path) -> None:
    from mcp_codetools.settings import load_settings

    user = tmp_path / "cfg" / "mcp-codetools"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(
        '[lsp.servers.rust]\ncommand = ["rust-analyzer"]\nextensions = ["rs"]\n', encoding="utf-8"
    )
    loaded = load_settings([root], environ={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert loaded.settings.lsp_servers["rust"].command == ("rust-analyzer",)
