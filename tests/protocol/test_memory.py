"""The whole server through the official MCP client, in memory, with the handshake real clients use."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from opentelemetry import trace

from mcp_codetools.pipeline import META_KEY
from mcp_codetools.protocol.server import OTEL_MIDDLEWARE, CodeToolsServer
from mcp_codetools.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client]:
    app = CodeToolsServer(Settings(roots=(root,)))
    async with Client(app.server, mode="legacy") as connected:
        yield connected


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_tools_are_listed_with_flat_described_schemas_and_hints(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"Read", "Edit", "Write"} <= set(tools)
    for tool in tools.values():
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert schema.get("additionalProperties") is False, tool.name
        assert "$ref" not in str(schema) and "$defs" not in schema, tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        hints = tool.annotations
        assert hints is not None
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
        assert tool.description and tool.title
    assert tools["Read"].annotations.read_only_hint is True
    assert tools["Edit"].annotations.destructive_hint is True
    assert tools["Read"].input_schema["required"] == ["file_path"]


async def test_seed_scenario_over_mcp(client: Client, root: Path) -> None:
    app = root / "app.ts"
    app.write_text("export const value = 1", encoding="utf-8")
    edit = {"file_path": str(app), "old_string": "export const value = 1", "new_string": "export const value = 2"}
    refused = await client.call_tool("Edit", edit)
    assert refused.is_error and text_of(refused) == "File has not been read yet. Read it first before writing to it."
    read = await client.call_tool("Read", {"file_path": str(app)})
    assert not read.is_error and text_of(read) == "1\texport const value = 1"
    done = await client.call_tool("Edit", edit)
    assert not done.is_error, text_of(done)
    assert app.read_text(encoding="utf-8") == "export const value = 2"


async def test_results_are_text_with_details_in_meta(client: Client, root: Path) -> None:
    f = root / "m.txt"
    f.write_text("a\nb\n", encoding="utf-8")
    result = await client.call_tool("Read", {"file_path": str(f)})
    assert result.structured_content is None
    assert result.meta is not None
    details = result.meta[META_KEY]
    assert details["totalLines"] == 2 and details["timing"]["seq"] >= 1


async def test_unknown_tool_and_bad_arguments_are_error_results(client: Client) -> None:
    unknown = await client.call_tool("Nope", {})
    assert unknown.is_error and text_of(unknown) == "No such tool available: Nope"
    missing = await client.call_tool("Read", None)
    assert missing.is_error and "The required parameter `file_path` is missing." in text_of(missing)
    wrong = await client.call_tool("Read", {"file_path": "x", "limit": "many"})
    assert wrong.is_error and "`limit` must be an integer" in text_of(wrong)


async def test_outside_root_is_refused_over_mcp(client: Client, outside: Path) -> None:
    result = await client.call_tool("Read", {"file_path": str(outside / "secret.txt")})
    assert result.is_error and "outside the workspace roots" in text_of(result)
    assert result.meta is not None and result.meta[META_KEY]["errorCode"] == "permission_denied"


async def test_modern_protocol_era_works_too(root: Path) -> None:
    f = root / "x.txt"
    f.write_text("x\n", encoding="utf-8")
    app = CodeToolsServer(Settings(roots=(root,)))
    async with Client(app.server) as modern:
        result = await modern.call_tool("Read", {"file_path": str(f)})
    assert not result.is_error and text_of(result) == "1\tx"


async def test_tools_list_stays_small(client: Client) -> None:
    listed = (await client.list_tools()).model_dump_json(by_alias=True, exclude_none=True)
    assert len(listed) / 4 < 4000, f"tools/list is about {len(listed) // 4} tokens"


async def test_the_sdk_opentelemetry_middleware_runs_only_when_a_tracer_provider_is_installed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = CodeToolsServer(Settings(roots=(root,))).server
    assert OTEL_MIDDLEWARE not in [type(m).__name__ for m in plain.middleware]

    class Installed(trace.TracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
            return trace.NoOpTracer()

    monkeypatch.setattr(trace, "get_tracer_provider", Installed)
    traced = CodeToolsServer(Settings(roots=(root,))).server
    assert [type(m).__name__ for m in traced.middleware].count(OTEL_MIDDLEWARE) == 1
    (root / "t.txt").write_text("x\n", encoding="utf-8")
    async with Client(traced, mode="legacy") as connected:
        read = await connected.call_tool("Read", {"file_path": str(root / "t.txt")})
    assert text_of(read) == "1\tx"
