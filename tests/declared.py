"""The tools as they declare themselves: the lists tests iterate, derived, never written out by hand."""

from __future__ import annotations

from typing import Any

from mcp_codetools.policy.rules import RuleFamilies
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import Tool, rule_families
from mcp_codetools.tools.lsp import LSPTool


def every_tool() -> list[Tool[Any]]:
    """Every tool of the server: `default_tools()`, and LSP where no language server runs here to list it."""
    tools = default_tools()
    if not any(isinstance(tool, LSPTool) for tool in tools):
        tools.append(LSPTool())
    return tools


FAMILIES: RuleFamilies = rule_families(every_tool())
"""The rule families of every tool, as a pipeline hands them to its policy."""
READERS = sorted(FAMILIES.read)
WRITERS = sorted(FAMILIES.edit)
