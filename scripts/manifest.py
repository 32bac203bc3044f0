"""`python -m scripts.manifest`: write `manifests/tools.json`, the tools/list payload clients see.

A developer script, kept out of the wheel: it writes into the repository.

The file is checked in so a change to any description or schema shows up in review, and a test fails
when it falls out of date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp_codetools.protocol.server import tool_definition
from mcp_codetools.tools import default_tools

MANIFEST = Path(__file__).resolve().parents[1] / "manifests" / "tools.json"


def tools_payload() -> dict[str, Any]:
    """The tools/list payload, as a client receives it."""
    tools = [tool_definition(tool).model_dump(by_alias=True, exclude_none=True) for tool in default_tools()]
    return {"tools": tools}


def render() -> str:
    """The payload as the manifest file holds it: indented JSON with a final newline."""
    return json.dumps(tools_payload(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    """Rewrite the manifest file."""
    MANIFEST.write_text(render(), encoding="utf-8")
    print(f"wrote {MANIFEST} ({len(render())} characters)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
