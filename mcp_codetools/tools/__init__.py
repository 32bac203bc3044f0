"""The tools this server offers, in the order `tools/list` shows them."""

from __future__ import annotations

from typing import Any

from mcp_codetools.tools.base import Tool
from mcp_codetools.tools.bash import BashTool
from mcp_codetools.tools.edit import EditTool
from mcp_codetools.tools.file_history import FileHistoryTool
from mcp_codetools.tools.glob import GlobTool
from mcp_codetools.tools.grep import GrepTool
from mcp_codetools.tools.jobs import BashOutputTool, KillShellTool
from mcp_codetools.tools.lsp import LSPTool, language_servers_available
from mcp_codetools.tools.multiedit import MultiEditTool
from mcp_codetools.tools.notebook_edit import NotebookEditTool
from mcp_codetools.tools.read import ReadTool
from mcp_codetools.tools.write import WriteTool


def every_tool() -> list[Tool[Any]]:
    """One of each tool this server has, in the order tools/list shows them, LSP included wherever it can run."""
    return [
        ReadTool(),
        EditTool(),
        WriteTool(),
        GrepTool(),
        GlobTool(),
        BashTool(),
        BashOutputTool(),
        KillShellTool(),
        MultiEditTool(),
        NotebookEditTool(),
        FileHistoryTool(),
        LSPTool(),
    ]


def default_tools() -> list[Tool[Any]]:
    """The tools served: every tool, LSP only where a language server can run."""
    servers = language_servers_available()
    return [tool for tool in every_tool() if servers or not isinstance(tool, LSPTool)]


__all__ = ["Tool", "default_tools", "every_tool"]
