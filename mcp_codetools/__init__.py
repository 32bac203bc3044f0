"""mcp-codetools: code tools served over MCP.

The tools: Read, Edit, Write, MultiEdit, NotebookEdit, FileHistory, Grep, Glob, LSP, Bash, BashOutput and KillShell.

The package exports only its version. The entry points live in their modules
(`mcp_codetools.settings.Settings`, `mcp_codetools.protocol.server.CodeToolsServer`, `mcp_codetools.cli.main`),
so importing the package loads neither them nor the MCP SDK (pinned by tests/test_public_names.py).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
