"""Which folders the server serves: the `--root` folders, or the current one, with the checks the server makes."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_codetools.files.paths import Workspace
from mcp_codetools.settings import LoadedSettings, load_settings


def loaded_settings_from(
    roots: list[str] | None, *, config_file: Path | None = None, flags: Mapping[str, Any] | None = None
) -> LoadedSettings:
    """The settings the server runs with, from every source, and where each value came from.

    Without `--root` the current directory is the workspace, except `/` (the whole disk, almost never
    meant: refused) and the home folder (allowed, with a warning). An explicit `--root /` is honoured.

    Raises:
        ValueError: the roots or a setting are refused (`ConfigError` names the source); the message to show.
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
    loaded = load_settings(roots, config_file=config_file, flags=flags)
    Workspace(loaded.settings.roots)  # the check the server makes at start, with its message
    return loaded
