"""The checked-in tools/list payload matches the code, and stays within the model's budget."""

from __future__ import annotations

from mcp_codetools.manifest import MANIFEST, render, tools_payload


def test_manifest_is_up_to_date() -> None:
    assert MANIFEST.read_text(encoding="utf-8") == render(), "run: python -m mcp_codetools.manifest"


def test_tools_list_is_under_about_4000_tokens() -> None:
    import json

    compact = json.dumps(tools_payload(), separators=(",", ":"))
    assert len(compact) / 4 < 4000, f"about {len(compact) // 4} tokens"


def test_every_schema_is_flat_closed_and_described() -> None:
    for tool in tools_payload()["tools"]:
        schema = tool["inputSchema"]
        assert schema["additionalProperties"] is False
        assert "$defs" not in schema and "$ref" not in str(schema)
        assert all(prop.get("description") for prop in schema["properties"].values()), tool["name"]
        assert set(tool["annotations"]) >= {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
