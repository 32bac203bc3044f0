"""The checked-in tools/list payload matches the code, and stays within the model's budget."""

from __future__ import annotations

from scripts.manifest import MANIFEST, render, tools_payload


def test_manifest_is_up_to_date() -> None:
    assert MANIFEST.read_text(encoding="utf-8") == render(), "run: python -m scripts.manifest"


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


def test_each_quoted_setting_names_a_setting_and_is_filled() -> None:
    """A field naming no setting would stop the server; one left unfilled would put a template before the model."""
    import json
    import re

    from mcp_codetools.settings import PLACES
    from mcp_codetools.tools import default_tools

    field = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)?)(?::[^{}]*)?\}")
    quoted = []
    for tool in default_tools():
        names = field.findall(tool.description + json.dumps(tool.input_schema()))
        assert set(names) <= set(PLACES), f"{tool.name}: {sorted(set(names) - set(PLACES))} are not settings"
        quoted += names
        description, schema = tool.described()
        assert not field.search(description + json.dumps(schema)), tool.name
    assert len(quoted) >= 12


def test_a_field_naming_no_setting_is_refused_and_other_braces_stay() -> None:
    import pytest

    from mcp_codetools.settings import default_settings, fill

    assert fill('glob "*.{ts,tsx}", at most {glob_max_files:,}', default_settings()) == 'glob "*.{ts,tsx}", at most 100'
    with pytest.raises(KeyError, match="glob_max_file"):
        fill("{glob_max_file}", default_settings())


def test_a_configured_server_quotes_its_own_limits() -> None:
    from pathlib import Path

    from mcp_codetools.protocol.server import CodeToolsServer
    from mcp_codetools.settings import Settings

    settings = Settings(
        roots=(Path.cwd(),),
        read_default_lines=500,
        grep_head_limit=40,
        grep_max_result_chars=12_000,
        glob_max_files=30,
        bash_default_timeout_ms=60_000,
        bash_max_timeout_ms=900_000,
        bash_output_chars=8_000,
        bash_return_after_s=30,
        pdf_max_pages=5,
        pdf_pages_without_range=3,
    )
    listed = {t.name: t for t in CodeToolsServer(settings)._definitions}
    read, grep, glob, bash = (listed[n].model_dump_json() for n in ("Read", "Grep", "Glob", "Bash"))
    assert "up to 500 lines by default" in read and "(default 500)" in read and "2000 lines" not in read
    assert "(at most 5 a call)" in read and "over 3 pages" in read
    assert "(default 40, 0 = all)" in grep and "(default 40; 0 = no limit)" in grep and "12,000 characters" in grep
    assert "at most 30 with the total" in glob
    assert bash.count("default 60000, max 900000") == 2 and "Output over 8000 characters" in bash
    bash_output = listed["BashOutput"].model_dump_json()
    assert "(at most 30 s)" in bash_output and "after 30 s moves to the background" in bash
