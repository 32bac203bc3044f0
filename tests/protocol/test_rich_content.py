"""Images reach the client as MCP image content, between the text parts they belong with."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from mcp import Client

from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings
from tests.tools.samples import write_image, write_pdf

pytestmark = pytest.mark.anyio


async def test_an_image_read_is_text_then_image_content(root: Path) -> None:
    f = write_image(root / "a.png", "PNG", 20, 10)
    async with Client(CodeToolsServer(Settings(roots=(root,))).server, mode="legacy") as client:
        result = await client.call_tool("Read", {"file_path": str(f)})
    assert not result.is_error
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "image"]
    image = result.content[1]
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data) == f.read_bytes()


async def test_text_after_a_rendered_pdf_page_follows_its_image(root: Path) -> None:
    f = write_pdf(root / "scan.pdf", ["before", None, "after"])
    async with Client(CodeToolsServer(Settings(roots=(root,))).server, mode="legacy") as client:
        result = await client.call_tool("Read", {"file_path": str(f)})
    assert [block.type for block in result.content] == ["text", "image", "text"]
    assert "after" in result.content[2].text
