"""A bare MCP SDK server with one tool: the floor that any Python MCP server starts from.

`python bare_server.py ROOT...` serves `read(path)` over the SDK's default stdio (the roots are only
there to mirror our command line). The tool does the least a numbered read can do, with no checks, as
an `async def` (no worker thread), so the gap to mcp-codetools is what our pipeline and transport cost.
"""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("bare")


@server.tool(structured_output=False)
async def read(path: str) -> str:
    """Return the file's lines numbered from 1."""
    with open(path, encoding="utf-8") as handle:
        return "".join(f"{number}\t{line}" for number, line in enumerate(handle, 1))


if __name__ == "__main__":
    server.run("stdio")
