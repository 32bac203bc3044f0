"""Read's deny rules hold for the LSP tool: its own file is refused, and no answer names a denied file.

Locations in a denied file are left out of references, definitions, symbols and calls before counting, as
Grep and Glob leave such files out; a hover on a name defined there is refused, as it would show its text.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.loading import load_gate
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_server.py")
MODULE = "def helper(x):\n    return x\n\n\ndef main():\n    return helper(1) + outside\n"
PRIVATE = "from pkg.mod import helper\n\n\ndef hidden_fn():\n    return helper(2)\n"
USE = "from private.keys import hidden_fn\n\nhidden_fn()\n"
HIDDEN_WORDS = ("private/keys.py", "hidden_fn()", "def hidden_fn", "SECRET_CONTENT", "elsewhere.py")


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-user-config"
    empty.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(empty))


@pytest.fixture
def tree(root: Path, outside: Path) -> Path:
    for rel, text in {"pkg/mod.py": MODULE, "private/keys.py": PRIVATE, "pkg/use.py": USE}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (outside / "elsewhere.py").write_text("SECRET_CONTENT = 1\n", encoding="utf-8")
    deny = f'["Read(./private/**)", "Read(/{outside}/**)"]'
    (root / "mcp-codetools.toml").write_text(f"[permissions]\ndeny = {deny}\n", encoding="utf-8")
    return root


async def _callers(root: Path, outside: Path) -> AsyncIterator[tuple[Caller, Caller]]:
    """The same session's tools with the project's rules (gated) and without any (open)."""
    servers = {"fake": {"command": [sys.executable, str(FAKE), str(outside / "elsewhere.py")], "extensions": [".py"]}}
    session = CodeSession(Settings(roots=(root,), lsp_servers=servers))  # type: ignore[arg-type]
    gated = Pipeline(default_tools(), gate=load_gate((root,), environ={}))
    try:
        yield Caller(gated, session), Caller(Pipeline(default_tools()), session)
    finally:
        await session.aclose()


@pytest.fixture
async def callers(tree: Path, outside: Path) -> AsyncIterator[tuple[Caller, Caller]]:
    async for pair in _callers(tree, outside):
        yield pair


def _at(path: Path, line: int, character: int, operation: str, **more: Any) -> dict[str, Any]:
    return {"operation": operation, "file_path": str(path), "line": line, "character": character, **more}


@pytest.mark.parametrize(
    ("rel", "line", "character", "operation", "shown", "query"),
    [
        ("pkg/mod.py", 1, 5, "findReferences", "pkg/mod.py:6:12", None),
        ("pkg/use.py", 3, 1, "goToDefinition", "No definitions found", None),
        ("pkg/mod.py", 6, 25, "goToDefinition", "No definitions found", None),
        ("pkg/mod.py", 1, 5, "incomingCalls", "main at pkg/mod.py:5:5", None),
        ("pkg/mod.py", 1, 1, "workspaceSymbol", "No symbols match", "hidden"),
    ],
    ids=["references", "definition", "definition-outside-the-roots", "incoming-calls", "workspace-symbols"],
)
async def test_no_answer_names_a_file_read_may_not_see(
    callers: tuple[Caller, Caller],
    root: Path,
    rel: str,
    line: int,
    character: int,
    operation: str,
    shown: str,
    query: str | None,
) -> None:
    gated, open_ = callers
    args = _at(root / rel, line, character, operation, **({"query": query} if query else {}))
    with anyio.fail_after(20):
        unfiltered = await open_.ok("LSP", args)
        filtered = await gated.ok("LSP", args)
    assert any(word in unfiltered for word in HIDDEN_WORDS), unfiltered  # the rules are what keeps them out
    for word in HIDDEN_WORDS:
        assert word not in filtered, filtered
    assert shown in filtered


async def test_references_are_counted_without_the_denied_file(callers: tuple[Caller, Caller], root: Path) -> None:
    gated, _ = callers
    with anyio.fail_after(20):
        text = await gated.ok("LSP", _at(root / "pkg/mod.py", 1, 5, "findReferences"))
    assert text.startswith("2 references in 1 file:"), text


async def test_a_hover_on_a_name_defined_in_a_denied_file_is_refused(
    callers: tuple[Caller, Caller], root: Path
) -> None:
    gated, _ = callers
    with anyio.fail_after(20):
        refused = await gated.fails("LSP", _at(root / "pkg/use.py", 3, 1, "hover"))
        allowed = await gated.ok("LSP", _at(root / "pkg/mod.py", 6, 12, "hover"))
    assert refused.meta["errorCode"] == "permission_denied"
    assert "deny rule" in refused.text
    assert "word: helper" in allowed


@pytest.mark.parametrize("operation", ["documentSymbol", "hover", "findReferences"])
async def test_the_lsp_call_on_a_denied_file_is_refused_before_the_server_sees_it(
    callers: tuple[Caller, Caller], root: Path, operation: str
) -> None:
    gated, _ = callers
    with anyio.fail_after(20):
        out = await gated.fails("LSP", _at(root / "private/keys.py", 4, 5, operation))
    assert out.meta["errorCode"] == "permission_denied"
    assert "Read(./private/**)" in out.text
    assert not gated.session.language_servers.running(root / "private/keys.py", root)
