"""Where settings are written: the config files every reader uses, and one file's or the environment's values.

Files, in order: `~/.config/mcp-codetools/config.toml` (`$XDG_CONFIG_HOME` when set), `mcp-codetools.toml`
at the first root, then the file given by `--config`. The policy (`policy/loading.py`) reads its
`[permissions]` and `[hooks]` tables from the same files, found and read here, so the two never
disagree about which files count or how a bad one is reported.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from mcp_codetools.settings.model import PLACES, SECTIONS, shape_of

PROJECT_FILE = "mcp-codetools.toml"
POLICY_SECTIONS = frozenset({"permissions", "hooks"})
"""Tables in the same files that `policy/loading.py` reads and checks."""

_BY_KEY = {(p.section, p.key): name for name, p in PLACES.items()}


class ConfigError(ValueError):
    """A setting or config file the server refuses to start with; the message names where it came from.

    `problems` holds each problem on its own (the message joins them), for `config --check`.
    """

    def __init__(self, message: str, problems: Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


def user_config_file(environ: Mapping[str, str] | None = None) -> Path:
    """The user's config file: `$XDG_CONFIG_HOME/mcp-codetools/config.toml`, by default under `~/.config`."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcp-codetools" / "config.toml"


def server_cache_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The server's own cache, `$XDG_CACHE_HOME/mcp-codetools` (an absolute one, else under `~/.cache`).

    The start snapshots are kept in it (`protocol/fast_start.py`, which finds it the same way without this
    package): what is there reaches the client at a later start, so it is kept like the config files.
    """
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcp-codetools"


def server_install_folders() -> tuple[Path, ...]:
    """Where the server's own code runs from, as real paths: its Python and this package.

    Its Python: the interpreter, the standard library and the installed packages, with `rg` and `bwrap`;
    this package: an editable install's source.

    The server imports modules on first use, runs the sandbox's launchers with this Python and starts rg,
    bwrap and the language servers from here. So when one lies in a root (a project's `.venv` serving it),
    what a tool call wrote there would run as the server, outside any sandbox: it is kept like the config
    files (asked about, and read-only to a sandboxed command).
    """
    package = Path(__file__).resolve().parents[1]
    found = [Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)]
    return tuple(dict.fromkeys([*found, package]))


class ConfigFile(NamedTuple):
    """One config file every reader uses: whether it must exist, and whether it is the project's."""

    path: Path
    required: bool
    project: bool
    """Inside a root the model can write: it may only do what `PROJECT_MAY` says (and the policy's own rules)."""


def config_files(
    roots: Sequence[Path], config_file: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[ConfigFile]:
    """The TOML files every reader uses, in order. `--config` is the user's: it is given where the server starts."""
    files = [ConfigFile(user_config_file(environ), False, False)]
    if roots:
        files.append(ConfigFile(roots[0] / PROJECT_FILE, False, True))
    if config_file is not None:
        files.append(ConfigFile(config_file, True, False))
    return files


def read_toml(path: Path, *, required: bool) -> dict[str, Any] | None:
    """One config file's tables; None when an optional file is absent.

    Raises:
        ConfigError: a required file is missing, or a file cannot be read or is not TOML.
    """
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file not found: {path}") from None
        return None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except IsADirectoryError:
        raise ConfigError(f"cannot read {path}: it is a directory") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None


def file_values(table: Mapping[str, Any], path: Path, problems: list[str] | None = None) -> dict[str, tuple[Any, str]]:
    """One file's settings with where each is written; a problem raises, or is added to `problems` when given."""

    def bad(message: str) -> None:
        if problems is None:
            raise ConfigError(message)
        problems.append(message)

    found: dict[str, tuple[Any, str]] = {}
    for section, body in table.items():
        if section in POLICY_SECTIONS:
            continue
        if section not in SECTIONS:
            known = ", ".join(f"[{s}]" for s in (*SECTIONS, *sorted(POLICY_SECTIONS)))
            bad(f"{path}: unknown table [{section}] (known: {known})")
            continue
        if not isinstance(body, dict):
            bad(f"{path}: [{section}] must be a table")
            continue
        for key, value in body.items():
            name = _BY_KEY.get((section, key))
            if name is None:
                known = ", ".join(p.key for p in PLACES.values() if p.section == section)
                bad(f"{path}: unknown key {key!r} in [{section}] (known: {known})")
                continue
            if shape_of(name) == "path" and isinstance(value, str):
                value = path.parent / Path(value).expanduser()
            found[name] = (value, f"{path} [{section}] {key}")
    return found


def env_values(env: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """The environment's settings (`MCP_CODETOOLS_*`), with the variable each came from."""
    found: dict[str, tuple[Any, str]] = {}
    for name, place in PLACES.items():
        raw = env.get(place.env)
        if raw is None or not raw.strip():
            continue
        value: Any = raw.strip()
        shape = shape_of(name)
        if shape == "list":
            value = tuple(part.strip() for part in raw.split(",") if part.strip())
        elif shape == "json":
            try:
                value = json.loads(raw)
            except ValueError as exc:
                raise ConfigError(f"environment variable {place.env}: not JSON ({exc})") from exc
        elif shape == "path":
            value = Path(value).expanduser()
        found[name] = (value, f"environment variable {place.env}")
    return found
