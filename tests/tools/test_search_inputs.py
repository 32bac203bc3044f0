"""What Grep and Glob refuse alike: values that no program argument can hold (they run ripgrep)."""

from __future__ import annotations

import pytest

from mcp_codetools.tools import default_tools
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

SEARCH_TOOLS = {"Grep": {"pattern": "x"}, "Glob": {"pattern": "*"}}
"""Each search tool with the arguments of a call that would otherwise run."""
UNPASSABLE = [
    ("pattern", "a\x00b"),
    ("pattern", "*\x00"),
    ("glob", "*\x00"),
    ("path", "\x00"),
    ("path", "a\udc00\ud800"),
    ("path", "\udcff\ud800"),
]
"""A NUL byte ends a C string; a lone surrogate has no bytes at all."""


def cases() -> list[tuple[str, str, str]]:
    fields = {tool.name: set(tool.input_schema()["properties"]) for tool in default_tools()}
    return [(tool, field, value) for tool in SEARCH_TOOLS for field, value in UNPASSABLE if field in fields[tool]]


@pytest.mark.parametrize(("tool", "field", "value"), cases())
async def test_values_no_program_argument_can_hold_are_refused(call: Caller, tool: str, field: str, value: str) -> None:
    await call.refuses(tool, {**SEARCH_TOOLS[tool], field: value}, field)
