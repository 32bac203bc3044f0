"""rg's arguments for Grep and Glob, built so that model input is never read as an rg option.

The pattern always follows `-e`, paths follow `--`, globs and types are passed as `--flag=value`, and
config files (`RIPGREP_CONFIG_PATH`) are ignored, since they could add options such as `--pre`.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    """Whether rg would read `value` as an option if it were passed bare."""
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


_GLOB_MAGIC = frozenset("*?[]{}\\")


def rebase_globs(globs: Sequence[str], prefix: str) -> list[str] | None:
    """Globs written relative to the working directory, rewritten for rg running in the folder `prefix` names.

    rg matches a glob holding a `/` against the path below the folder it runs in; Grep's globs read from
    the working directory, and rg now runs in the searched folder itself. So `src/u*.py` with path `src`
    becomes `u*.py`. A name-only glob (`*.py`, `**/*.py`) needs nothing. An include glob whose folder part
    cannot lie under `prefix` is dropped (an exclusion too); None when every include glob was dropped, so
    nothing can match. A glob that cannot be rebased exactly (a `**` or a brace within the prefix part) is
    kept as written.
    """
    prefix_parts = [part for part in prefix.strip("/").split("/") if part]
    if not prefix_parts:
        return list(globs)
    rebased: list[str] = []
    includes = dropped_includes = 0
    for glob in globs:
        negated = glob.startswith("!")
        body = glob[1:] if negated else glob
        includes += not negated
        if "/" not in body.removeprefix("**/") or body.startswith("**/"):
            rebased.append(glob)
            continue
        parts = body.lstrip("/").split("/")
        head = parts[: len(prefix_parts)]
        if len(parts) <= len(prefix_parts) and parts[-1] != "**":
            verdict: bool | None = False  # names the folder or one above it: no file under it matches
        else:
            verdict = _parts_match(head, prefix_parts)
        if verdict is None:
            rebased.append(glob)
        elif verdict:
            rest = "/".join(parts[len(prefix_parts) :]) or "**"
            rebased.append(("!" if negated else "") + rest)
        elif not negated:
            dropped_includes += 1
    if includes and dropped_includes == includes:
        return None
    return rebased


def _parts_match(patterns: list[str], names: list[str]) -> bool | None:
    """Whether each glob component matches its folder name; None when that cannot be told exactly."""
    import fnmatch

    for pattern, name in zip(patterns, names, strict=False):
        if pattern == "**" or "{" in pattern or "\\" in pattern:
            return None
        if not _GLOB_MAGIC.intersection(pattern):
            if pattern != name:
                return False
        elif not fnmatch.fnmatchcase(name, pattern):
            return False
    return True
