"""manifests/server.json, the MCP registry entry, is valid against the registry's published schema and agrees
with the project and the README's `mcp-name:` line (which the registry checks on the PyPI page).

schemas/server.schema.2025-12-11.json is the schema published at SCHEMA_URL, byte for byte (its SHA-256 is
pinned below, and matches the digest others recorded from the live file); it is vendored because tests reach
no network.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.ecosystem.support import MANIFESTS, REPO, project_version

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
SCHEMA_FILE = Path(__file__).parent / "schemas" / "server.schema.2025-12-11.json"
SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"


def schema() -> dict[str, Any]:
    raw = SCHEMA_FILE.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256, "the vendored schema is not the published one"
    data = dict(json.loads(raw))
    assert data["$id"] == SCHEMA_URL
    return data


def server_json() -> dict[str, Any]:
    return dict(json.loads((MANIFESTS / "server.json").read_text(encoding="utf-8")))


def errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(schema(), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '/'}: {e.message}" for e in validator.iter_errors(document)]


def test_server_json_is_valid_against_the_published_schema() -> None:
    document = server_json()
    assert document["$schema"] == SCHEMA_URL
    assert errors(document) == []


@pytest.mark.parametrize(
    "breakage",
    [
        lambda d: d.pop("version"),
        lambda d: d.update(description="x" * 101),
        lambda d: d.update(name="no-namespace"),
        lambda d: d["packages"][0].update(version="latest"),
    ],
    ids=["no-version", "long-description", "bad-name", "version-latest"],
)
def test_the_schema_check_is_live(breakage: Any) -> None:
    document = copy.deepcopy(server_json())
    breakage(document)
    assert errors(document), "a broken entry must be refused"


def test_server_json_agrees_with_the_project_and_the_readme() -> None:
    document = server_json()
    version = project_version()
    assert document["version"] == version
    [package] = document["packages"]
    assert (package["registryType"], package["identifier"], package["version"]) == ("pypi", "mcp-codetools", version)
    assert package["runtimeHint"] == "uvx" and package["transport"] == {"type": "stdio"}
    names = re.findall(r"mcp-name: (\S+)", (REPO / "README.md").read_text(encoding="utf-8"))
    assert names == [document["name"]], "the registry finds this line in the PyPI description (the README)"
