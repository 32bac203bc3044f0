"""Roots from the client, through the SDK client on both eras: added to the configured roots, followed when
they change, never shrinking the configured set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]


class Roots:
    """What the client says its roots are; tests change it between calls."""

    def __init__(self, *folders: Path) -> None:
        self.uris = [f.as_uri() for f in folders]
        self.asked = 0

    async def __call__(self, context: Any) -> types.ListRootsResult:
        self.asked += 1
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in self.uris])  # type: ignore[arg-type]


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.fixture
def other(tmp_path: Path) -> Path:
    folder = tmp_path / "client-project"
    folder.mkdir()
    (folder / "notes.txt").write_text("from the client's root\n")
    return folder


@pytest.mark.parametrize("mode", MODES)
async def test_the_clients_roots_are_served_beside_the_configured_ones(root: Path, other: Path, mode: str) -> None:
    app = CodeToolsServer(Settings(roots=(root,)))
    (root / "own.txt").write_text("configured\n")
    roots = Roots(other)
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode, list_roots_callback=roots) as client:  # type: ignore[arg-type]
            theirs = await client.call_tool("Read", {"file_path": str(other / "notes.txt")})
            ours = await client.call_tool("Read", {"file_path": str(root / "own.txt")})
            again = await client.call_tool("Read", {"file_path": str(other / "notes.txt")})
    assert not theirs.is_error and "from the client's root" in text(theirs)
    assert not ours.is_error and "configured" in text(ours)
    assert not again.is_error
    assert roots.asked == 1, "the roots are asked for once, not before every call"


async def test_a_roots_change_is_followed(root: Path, other: Path, tmp_path: Path) -> None:
    third = tmp_path / "third"
    third.mkdir()
    (third / "t.txt").write_text("third\n")
    app = CodeToolsServer(Settings(roots=(root,)))
    roots = Roots(other)
    with anyio.fail_after(20):
        async with Client(app.server, mode="legacy", list_roots_callback=roots) as client:
            first = await client.call_tool("Read", {"file_path": str(third / "t.txt")})
            roots.uris = [third.as_uri()]
            with pytest.warns(MCPDeprecationWarning):  # roots are deprecated from 2026-07-28, not in this era
                await client.send_roots_list_changed()
            second = await client.call_tool("Read", {"file_path": str(third / "t.txt")})
            gone = await client.call_tool("Read", {"file_path": str(other / "notes.txt")})
    assert first.is_error and "outside the workspace roots" in text(first)
    assert not second.is_error, text(second)
    assert gone.is_error, "a root the client no longer lists is not served"


@pytest.mark.parametrize("mode", MODES)
async def test_an_empty_or_unusable_list_keeps_the_configured_roots(root: Path, tmp_path: Path, mode: str) -> None:
    (root / "own.txt").write_text("configured\n")
    app = CodeToolsServer(Settings(roots=(root,)))
    roots = Roots(tmp_path / "does-not-exist")
    with anyio.fail_after(20):
        async with Client(app.server, mode=mode, list_roots_callback=roots) as client:  # type: ignore[arg-type]
            ours = await client.call_tool("Read", {"file_path": str(root / "own.txt")})
    assert not ours.is_error, text(ours)


async def test_a_client_without_roots_is_not_asked(root: Path) -> None:
    (root / "own.txt").write_text("configured\n")
    app = CodeToolsServer(Settings(roots=(root,)))
    with anyio.fail_after(20):
        async with Client(app.server, mode="auto") as client:
            ours = await client.call_tool("Read", {"file_path": str(root / "own.txt")})
    assert not ours.is_error


async def test_root_relative_rules_and_protected_paths_hold_in_the_clients_roots(root: Path, other: Path) -> None:
    """`Read(.env)` means every `.env` the session serves, and `.git` is protected in every root."""
    (other / ".env").write_text("TOKEN=from-the-client-root\n")
    (other / "app.py").write_text("TOKEN = 'visible'\n")
    (other / ".git").mkdir()
    deny = (parse_rule("Read(.env)", "deny", source="test rules", base=root),)
    app = CodeToolsServer(Settings(roots=(root,)), gate=PermissionGate(Policy(roots=(root,), deny=deny)))
    with anyio.fail_after(20):
        async with Client(app.server, mode="legacy", list_roots_callback=Roots(other)) as client:
            read = await client.call_tool("Read", {"file_path": str(other / ".env")})
            grep = await client.call_tool("Grep", {"pattern": "TOKEN", "path": str(other), "output_mode": "content"})
            write = await client.call_tool("Write", {"file_path": str(other / ".git" / "config"), "content": "x\n"})
            plain = await client.call_tool("Write", {"file_path": str(other / "new.txt"), "content": "x\n"})
    assert read.is_error and "Read(.env)" in text(read), text(read)
    assert not grep.is_error and "visible" in text(grep) and "from-the-client-root" not in text(grep), text(grep)
    assert write.is_error and "protected path" in text(write), text(write)
    assert not (other / ".git" / "config").exists()
    assert not plain.is_error, text(plain)
