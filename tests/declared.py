"""The tools as they declare themselves: the lists tests iterate, derived, never written out by hand."""

from __future__ import annotations

from mcp_codetools.policy.rules import RuleFamilies
from mcp_codetools.tools import every_tool
from mcp_codetools.tools.base import rule_families

FAMILIES: RuleFamilies = rule_families(every_tool())
"""The rule families of every tool, as a pipeline hands them to its policy."""
READERS = sorted(FAMILIES.read)
WRITERS = sorted(FAMILIES.edit)

__all__ = ["FAMILIES", "READERS", "WRITERS", "every_tool"]
