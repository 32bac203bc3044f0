"""
rg's arguments for Grep and Glob, built so that model input is never read as an rg option.

The pattern always follows `-e`, paths follow `--`, globs and types are passed as `--flag=value`, and
config files (`RIPGREP_CONFIG_PATH`) are ignored, since they could add options such as `--pre`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from mcp_codetools.errors import NotAFileError, os_errors
from mcp_codetools.files.paths import is_within

VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
"""Version-control folders: hidden files are searched, these never are."""

NAME_FILTER_TYPE = "codetoolsglob"
"""The file type defined on the fly for name globs (rg allows letters and digits only)."""


def base_args() -> list[str]:
    """Options every call starts with: no config file, no colour, hidden files searched."""
    return ["--no-config", "--color=never", "--hidden"]


def vcs_excludes() -> list[str]:
    """Exclusions for VCS folders. Put them last: a later glob wins over an earlier one in rg."""
    return [f"--glob=!{name}" for name in VCS_DIRS]


def name_glob(glob: str) -> str | None:
    """The file-name glob `glob` amounts to when it constrains only the name (`*.ts`, `**/*.ts`), else None."""
    name = glob.removeprefix("**/")
    if not name or "/" in name or ":" in name or name.startswith("!"):
        return None
    return name


def filter_args(globs: Sequence[str]) -> list[str]:
    """rg options that keep only files matching `globs`, without overriding .gitignore where possible.

    rg's `--glob` is an override: a file or folder it matches is taken even when .gitignore excludes it,
    so `--glob='**/*'` would list all of node_modules. A file type defined on the spot filters by file
    name *after* the ignore rules, and never pulls in a folder, so name-only globs become one. Globs
    about folders (`src/**/test_*.py`) stay overrides, with rg's semantics; exclusions (`!x`) always do.
    """
    include = [glob for glob in globs if not glob.startswith("!")]
    exclude = [f"--glob={glob}" for glob in globs if glob.startswith("!")]
    names = [name_glob(glob) for glob in include]
    if not include or None in names:
        return [f"--glob={glob}" for glob in globs]
    defined = [f"--type-add={NAME_FILTER_TYPE}:{name}" for name in names]
    return [*exclude, *defined, f"--type={NAME_FILTER_TYPE}"]


def is_option_like(value: str) -> bool:
    return value.startswith("-")


def unpassable(value: str) -> str | None:
    """Why `value` cannot be a program argument at all (a NUL byte, invalid Unicode), or None."""
    if "\x00" in value:
        return "contains a NUL byte, which no program argument can hold"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate, which is not valid Unicode"
    return None


def check_search_path(path: Path, cwd: Path, *, kind: str = "Path") -> os.stat_result:
    """The search path must exist and be a folder or a regular file: rg would block on a FIFO.

    Raises:
        FileStateError: missing, or neither a folder nor a regular file.
    """
    with os_errors(
        "search", path, missing=f"{kind} does not exist: {path}. Note: your current working directory is {cwd}."
    ):
        st = os.stat(path)
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise NotAFileError(f"Cannot search {path}: it is not a regular file or a folder.")
    return st


def target_args(target: Path, cwd: Path) -> list[str]:
    """How to name the search path to rg running in `cwd`, so it prints paths relative to `cwd`.

    The working directory itself is named by no path at all: rg then prints `src/a.py`, where `.`
    would give `./src/a.py`. stdin is /dev/null, so rg searches the folder, never stdin.
    """
    if target == cwd:
        return []
    if is_within(target, cwd):
        return [str(target.relative_to(cwd))]
    return [str(target)]


def display_prefix(base: Path, cwd: Path) -> str:
    """What to put before a path rg printed relative to `base`, to make it relative to `cwd`."""
    if base == cwd:
        return ""
    if is_within(base, cwd):
        return f"{base.relative_to(cwd)}/"
    return f"{base}/"
