"""A tool's output as the JSON of an MCP `CallToolResult`: text and images as content, details under META_KEY.

Plain values only (no SDK, no pydantic), so the calls answered before the SDK is imported
(`early_calls.py`) send what the SDK sends later for the same output (`server.to_call_result`, held equal to
this by a test).
"""

from __future__ import annotations

import base64
from typing import Any

from mcp_codetools.pipeline import META_KEY
from mcp_codetools.tools.base import ToolOutput

STATE_ARG = "state_id"
"""The argument that carries a 2026-07-28 HTTP client's state handle (see `state_handles`); here, SDK-free, as
the calls answered without the SDK drop it as `server.CodeToolsServer` does (on stdio it means nothing)."""


def call_result(output: ToolOutput) -> dict[str, Any]:
    """The result's fields under their wire names; whether it is an error was decided before."""
    content: list[dict[str, Any]] = [{"type": "text", "text": output.text}]
    for index, image in enumerate(output.images):
        data = base64.b64encode(image.data).decode("ascii")
        content.append({"type": "image", "data": data, "mimeType": image.mime_type})
        if index in output.trailing:
            content.append({"type": "text", "text": output.trailing[index]})
    return {"content": content, "isError": output.is_error, "_meta": {META_KEY: output.meta}}
