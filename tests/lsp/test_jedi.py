"""The built-in Python server (jedi-language-server) on a small package the test writes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_codetools.lsp.servers import python_server
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from tests.conftest import Caller

pytestmark = pytest.mark.anyio


def test_the_python_server_is_installed() -> None:
    """jedi-language-server is a dependency: without it the LSP tool serves nothing, so this fails, not skips."""
    assert python_server() is not None, "jedi-language-server is missing: pip install -e . installs it"


@pytest.fixture
def package(root: Path) -> Path:
    pkg = root / "shapes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "geometry.py").write_text("def area(w, h):\n    return w * h\n", encoding="utf-8")
    (pkg / "use.py").write_text(
        "from shapes.geometry import area\n\n\ndef room():\n    return area(3, 4)\n", encoding="utf-8"
    )
    return pkg


async def test_definition_references_and_diagnostics_from_jedi(call: Caller, package: Path) -> None:
    use = package / "use.py"
    with anyio.fail_after(60):
        definition = await call.ok(
            "LSP", {"operation": "goToDefinition", "file_path": str(use), "line": 5, "character": 12}
        )
        references = await call.ok(
            "LSP", {"operation": "findReferences", "file_path": str(use), "line": 5, "character": 12}
        )
        await call.ok("Read", {"file_path": str(use)})
        broke = await call("Edit", {"file_path": str(use), "old_string": "area(3, 4)", "new_string": "area(3, 4"})
    assert "shapes/geometry.py:1:5" in definition and "def area(w, h):" in definition
    assert "shapes/use.py:1:" in references and "shapes/use.py:5:12" in references
    assert not broke.is_error, broke.text
    assert "syntax error" in broke.text
    assert "diagnostics" not in broke.meta  # jedi only repeats the syntax error, a second later


async def test_jedi_diagnostics_when_asked_for(pipeline: Pipeline, root: Path, package: Path) -> None:
    assert (spec := python_server()) is not None
    table = {"python": {"command": list(spec.command), "extensions": [".py"], "diagnostics": True}}
    session = CodeSession(Settings(roots=(root,), lsp_servers=table, lsp_first_call_s=60))  # type: ignore[arg-type]
    call = Caller(pipeline, session)
    use = package / "use.py"
    try:
        with anyio.fail_after(60):
            await call.ok("LSP", {"operation": "documentSymbol", "file_path": str(use)})
            await call.ok("Read", {"file_path": str(use)})
            broke = await call("Edit", {"file_path": str(use), "old_string": "area(3, 4)", "new_string": "area(3, 4"})
    finally:
        await session.aclose()
    assert not broke.is_error, broke.text
    assert broke.meta["diagnostics"]["answered"] is True
    assert broke.meta["diagnostics"]["new"] == 1
    assert "The python language server reports 1 new problem" in broke.text
