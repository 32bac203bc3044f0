"""mcp-codetools: code tools (Read, Grep, Glob, Edit, Write, Bash) served over MCP."""

__version__ = "0.1.0"

__all__ = ["__version__"]
