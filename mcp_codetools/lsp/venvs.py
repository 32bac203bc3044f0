"""A Python virtual environment's packages, found by reading its folder, never by running its interpreter.

jedi learns an environment's import path by running its `bin/python`. A project's `.venv/bin/python` is a
program the project supplies (a sandboxed command can even replace it), and a language call must not run
it: not in plan mode, not outside the sandbox, not without the permission a Bash command would need. The
layout is fixed enough to read instead: `pyvenv.cfg` marks a venv, and its packages sit in
`lib/pythonX.Y/site-packages` (`Lib/site-packages` on Windows). The folders found are handed to the
server as extra paths, which it only parses.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

PROJECT_VENVS = (".venv", "venv")
"""Where a project keeps its environment, looked for at each root."""
ACTIVE_VARIABLES = ("VIRTUAL_ENV", "CONDA_PREFIX")
"""The variables through which jedi would run an activated environment's interpreter."""
PATH_VARIABLE = "PYTHONPATH"
"""Folders that jedi's helper process would import from (running a package's `__init__.py` to reach an
extension module in it): handed to the server as paths it only parses instead."""
UNSEEN = (*ACTIVE_VARIABLES, PATH_VARIABLE)
"""What a Python language server's environment leaves out."""


def _version(config: Path) -> str | None:
    """`X.Y` from `pyvenv.cfg`'s `version` (or `version_info`) line; None when it has none."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines()[:50]:
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() in ("version", "version_info"):
            parts = value.strip().split(".")
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                return f"{parts[0]}.{parts[1]}"
    return None


def site_packages(env: Path, *, marked: bool = True) -> list[Path]:
    """The site-packages folders of the environment at `env` (`marked`: only a folder with `pyvenv.cfg`)."""
    config = env / "pyvenv.cfg"
    if marked and not config.is_file():
        return []
    version = _version(config)
    candidates = [env / "Lib" / "site-packages"]
    if version is not None:
        candidates.append(env / "lib" / f"python{version}" / "site-packages")
    try:
        candidates += sorted((env / "lib").glob("python3*/site-packages"))
    except OSError:
        pass
    found: list[Path] = []
    for folder in candidates:
        if folder.is_dir() and folder not in found:
            found.append(folder)
    return found


def extra_paths(root: Path, environ: Mapping[str, str] | None = None) -> list[str]:
    """The folders of PYTHONPATH, and the package folders of the root's venv and of an activated one, as strings."""
    environ = os.environ if environ is None else environ
    paths = [Path(p) for p in environ.get(PATH_VARIABLE, "").split(os.pathsep) if os.path.isabs(p) and os.path.isdir(p)]
    for name in PROJECT_VENVS:
        paths += site_packages(root / name)
    for variable in ACTIVE_VARIABLES:
        value = environ.get(variable)
        if value and os.path.realpath(value) != os.path.realpath(sys.prefix):
            paths += site_packages(Path(value), marked=variable == "VIRTUAL_ENV")
    return list(dict.fromkeys(str(path) for path in paths))
