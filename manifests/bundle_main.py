"""Entry point of the MCP Bundle (packed as server/main.py by pack-bundle.sh).

The host passes the workspace folders the user picked as separate arguments; each becomes a `--root`.
"""

import sys

from mcp_codetools.cli import main

if __name__ == "__main__":
    folders = [arg for arg in sys.argv[1:] if arg]
    raise SystemExit(main([flag for folder in folders for flag in ("--root", folder)]))
