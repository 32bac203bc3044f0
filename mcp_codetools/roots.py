"""Which folders the server serves: the `--root` folders, or the current one, with the checks the server makes."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp_codetools.config import Settings
from mcp_codetools.files.paths import Workspace


def settings_from(roots: list[str] | None) -> Settings:
    """The settings the server runs with; raises ValueError with the message to show.

    Without `--root` the current directory is the workspace, except `/` (the whole disk, almost never
    meant: refused) and the home folder (allowed, with a warning). An explicit `--root /` is honoured.
    """
    if not roots:
        cwd = Path.cwd().resolve()
        if cwd == Path(cwd.anchor):
            raise ValueError(
                f"started in {cwd} without --root: that would make the whole disk the workspace. "
                "Pass --root DIR with the project folder (or --root / if you really mean the whole disk)."
            )
        if cwd == Path.home().resolve():
            print(
                f"mcp-codetools: warning: no --root given, so your whole home folder ({cwd}) is the workspace; "
                "pass --root DIR to confine the tools to a project",
                file=sys.stderr,
            )
    settings = Settings.from_env(roots)
    Workspace(settings.roots)  # the check the server makes at start, with its message
    return settings
