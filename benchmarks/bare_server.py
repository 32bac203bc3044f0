"""A bare MCP SDK server: the floor that any Python MCP server starts from.

`python bare_server.py ROOT...` serves two tools over the SDK's default stdio (the roots are only there
to mirror our command line): `read(path)`, the least a numbered read can do, and `pdf(path, first, last)`,
pypdfium2's own text extraction of a page range under page markers. Both run with no checks as an
`async def` (no worker thread), so the gap to mcp-codetools is what our pipeline and transport cost.
"""

from __future__ import annotations

from mcp.server import MCPServer

server = MCPServer("bare")


@server.tool(structured_output=False)
async def read(path: str) -> str:
    """Return the file's lines numbered from 1."""
    with open(path, encoding="utf-8") as handle:
        return "".join(f"{number}\t{line}" for number, line in enumerate(handle, 1))


@server.tool(structured_output=False)
async def pdf(path: str, first: int, last: int) -> str:
    """Return the text of pages first..last (1-based), each under a page marker."""
    import pypdfium2 as pdfium  # here, so the cold-start benchmark's floor does not pay for it

    document = pdfium.PdfDocument(path)
    parts: list[str] = []
    try:
        for index in range(first - 1, last):
            page = document[index]
            textpage = page.get_textpage()
            parts.append(f"--- Page {index + 1} of {len(document)} ---\n{textpage.get_text_range()}")
            textpage.close()
            page.close()
    finally:
        document.close()
    return "\n\n".join(parts)


if __name__ == "__main__":
    server.run("stdio")
