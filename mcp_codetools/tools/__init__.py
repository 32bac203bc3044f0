"""The tools this server offers, in the order `tools/list` shows them.

Each tool's module is imported only when the tool is wanted: a start from the snapshot answers its first
Read, Glob or Grep before Bash's command analysis, the editing checks or the language servers are loaded
(`tools_named`); the server then builds every tool (`every_tool`, `default_tools`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mcp_codetools.tools.base import Tool


def _read() -> Tool[Any]:
    from mcp_codetools.tools.read import ReadTool

    return ReadTool()


def _edit() -> Tool[Any]:
    from mcp_codetools.tools.edit import EditTool

    return EditTool()


def _write() -> Tool[Any]:
    from mcp_codetools.tools.write import WriteTool

    return WriteTool()


def _grep() -> Tool[Any]:
    from mcp_codetools.tools.grep import GrepTool

    return GrepTool()


def _glob() -> Tool[Any]:
    from mcp_codetools.tools.glob import GlobTool

    return GlobTool()


def _bash() -> Tool[Any]:
    from mcp_codetools.tools.bash import BashTool

    return BashTool()


def _bash_output() -> Tool[Any]:
    from mcp_codetools.tools.jobs import BashOutputTool

    return BashOutputTool()


def _kill_shell() -> Tool[Any]:
    from mcp_codetools.tools.jobs import KillShellTool

    return KillShellTool()


def _multiedit() -> Tool[Any]:
    from mcp_codetools.tools.multiedit import MultiEditTool

    return MultiEditTool()


def _notebook_edit() -> Tool[Any]:
    from mcp_codetools.tools.notebook_edit import NotebookEditTool

    return NotebookEditTool()


def _file_history() -> Tool[Any]:
    from mcp_codetools.tools.file_history import FileHistoryTool

    return FileHistoryTool()


def _lsp() -> Tool[Any]:
    from mcp_codetools.tools.lsp import LSPTool

    return LSPTool()


_MAKERS: dict[str, Callable[[], Tool[Any]]] = {
    "Read": _read,
    "Edit": _edit,
    "Write": _write,
    "Grep": _grep,
    "Glob": _glob,
    "Bash": _bash,
    "BashOutput": _bash_output,
    "KillShell": _kill_shell,
    "MultiEdit": _multiedit,
    "NotebookEdit": _notebook_edit,
    "FileHistory": _file_history,
    "LSP": _lsp,
}
"""Each tool by the name it declares, in tools/list order (a test holds the names to the tools' own)."""


def every_tool() -> list[Tool[Any]]:
    """One of each tool this server has, in the order tools/list shows them, LSP included wherever it can run."""
    return [make() for make in _MAKERS.values()]


def default_tools() -> list[Tool[Any]]:
    """The tools served: every tool, LSP only where a language server can run."""
    from mcp_codetools.tools.lsp import LSPTool, language_servers_available

    servers = language_servers_available()
    return [tool for tool in every_tool() if servers or not isinstance(tool, LSPTool)]


def tools_named(names: Iterable[str]) -> list[Tool[Any]]:
    """The named tools only, in tools/list order, importing no other tool's module.

    Raises:
        KeyError: a name no tool has.
    """
    wanted = set(names)
    unknown = wanted - set(_MAKERS)
    if unknown:
        raise KeyError(f"no such tool: {', '.join(sorted(unknown))}")
    return [make() for name, make in _MAKERS.items() if name in wanted]


__all__ = ["Tool", "default_tools", "every_tool", "tools_named"]
