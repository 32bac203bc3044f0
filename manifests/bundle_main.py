"""Entry point of the MCP Bundle (packed as server/main.py by pack-bundle.sh).

The host passes the bundle's settings as `--sandbox=<true|false>` and `--permission-mode=<mode>`, then
the workspace folders the user picked as separate arguments; each folder becomes a `--root`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping, Sequence

SANDBOX = "--sandbox="
MODE = "--permission-mode="


def server_argv(argv: Sequence[str], environ: MutableMapping[str, str]) -> list[str]:
    """The server's arguments for what the host passed (a sandbox switched off is said in `environ`).

    "false" sets MCP_CODETOOLS_SANDBOX=0, which turns the sandbox off even where a config file or the
    platform's default turns it on. "true" is the platform's default where a backend is on by default
    (network open, no question answered by it), else `--sandbox` as asked. The mode `default` is left to
    the config files, so a project's stricter mode still holds.
    """
    from mcp_codetools.shell.sandbox_default import on_by_default_here

    out: list[str] = []
    for arg in argv:
        if arg.startswith(SANDBOX):
            if arg[len(SANDBOX) :].strip().lower() != "true":
                environ["MCP_CODETOOLS_SANDBOX"] = "0"
            elif not on_by_default_here():
                out.append("--sandbox")
        elif arg.startswith(MODE):
            mode = arg[len(MODE) :].strip()
            if mode and mode != "default":
                out += ["--permission-mode", mode]
        elif arg:
            out += ["--root", arg]
    return out


if __name__ == "__main__":
    from mcp_codetools.cli import main

    raise SystemExit(main(server_argv(sys.argv[1:], os.environ)))
