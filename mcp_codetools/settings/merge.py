"""Settings from every source, later wins, each value checked where it comes from.

1. built-in defaults (the field defaults);
2. the user's config file, then the project's (`sources.config_files`);
3. the file given by `--config`;
4. the environment (`MCP_CODETOOLS_*`, one variable per setting);
5. flags.

A project file may only tighten the settings that confine the model (`tightening.py`). The later
sources (`--config`, the environment, flags) are the user's own, given where the server is started.
A bad value stops the server with a message naming the file and key, the variable or the flag, never
falls back to a default.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcp_codetools.settings.model import PLACES, LoadedSettings, Settings, setting_value
from mcp_codetools.settings.printing import shown
from mcp_codetools.settings.sources import ConfigError, config_files, env_values, file_values, read_toml
from mcp_codetools.settings.tightening import TIGHTENING, project_may_set

logger = logging.getLogger(__name__)

DEFAULT_SOURCE = "default"


def load_settings(
    roots: Sequence[str | Path] | None = None,
    *,
    config_file: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    read_files: bool = True,
) -> LoadedSettings:
    """Every source in order, each value checked against the model where it comes from.

    `flags` maps field names to values given on the command line (None = not given).

    Raises:
        ConfigError: a file is bad (unknown table or key, bad value) or a variable or flag holds a bad value.
    """
    env = os.environ if environ is None else environ
    root_paths = tuple(Path(r) for r in roots) if roots else None
    base = Settings() if root_paths is None else _validated(Settings(), {"roots": root_paths}, {"roots": "--root flag"})
    values: dict[str, Any] = {}
    sources = {"roots": DEFAULT_SOURCE} | dict.fromkeys(PLACES, DEFAULT_SOURCE)
    if root_paths is not None:
        sources["roots"] = "--root flag"
    files: list[Path] = []
    ignored: list[str] = []
    from_project: set[str] = set()
    if read_files:
        for path, required, project in config_files(base.roots, config_file, env):
            table = read_toml(path, required=required)
            if table is not None:
                files.append(path)
                found = file_values(table, path)
                if project:
                    for name in [name for name in found if not project_may_set(name)]:
                        where = found.pop(name)[1]
                        ignored.append(
                            f"{where} ignored: it names a program or an image to run, so only the user's config sets it"
                        )
                    found = _tightened_only(base, values, sources, found, ignored, held=from_project)
                else:
                    from_project -= found.keys()
                _take(base, values, sources, found)
    for note in ignored:
        logger.warning("%s", note)
    from_env = env_values(env)
    _take(base, values, sources, from_env)
    given = {name: value for name, value in (flags or {}).items() if value is not None}
    _take(base, values, sources, {name: (value, _flag_source(name, value)) for name, value in given.items()})
    settings = _with(base, values)
    _check_together(settings, sources)
    from_project -= from_env.keys() | given.keys()
    return LoadedSettings(settings, sources, tuple(files), tuple(ignored), frozenset(from_project))


def _flag_source(name: str, value: Any) -> str:
    flag = str(PLACES[name].flag)
    return f"--no-{flag[2:]} flag" if value is False else f"{flag} flag"


def check_file(path: Path) -> list[str]:
    """Every problem in one config file's server settings (not its [permissions] and [hooks])."""
    try:
        table = read_toml(path, required=True)
    except ConfigError as exc:
        return exc.problems
    assert table is not None
    problems: list[str] = []
    found = file_values(table, path, problems)
    base = Settings()
    values: dict[str, Any] = {}
    sources: dict[str, str] = dict.fromkeys(PLACES, DEFAULT_SOURCE)
    for name, value in found.items():  # one at a time: a bad value must not hide the next one
        try:
            _take(base, values, sources, {name: value})
        except ConfigError as exc:
            problems += exc.problems
    try:
        _check_together(_with(base, values), sources)
    except ConfigError as exc:
        problems += exc.problems
    return problems


def _take(base: Settings, values: dict[str, Any], sources: dict[str, str], found: dict[str, tuple[Any, str]]) -> None:
    """Check one source's values on their own (so an error names that source), then let them win."""
    if not found:
        return
    where = {name: source for name, (_, source) in found.items()}
    checked = _validated(base, {name: value for name, (value, _) in found.items()}, where)
    for name in found:
        values[name] = setting_value(checked, name)
        sources[name] = where[name]


def _with(base: Settings, values: Mapping[str, Any]) -> Settings:
    """`base` with `values` (dotted names reach into nested settings such as `sandbox.enabled`), validated.

    Raises:
        ValidationError: a value is bad; its `loc` is the dotted name.
    """
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        outer, _, inner = name.partition(".")
        if inner:
            nested.setdefault(outer, {})[inner] = value
        else:
            top[name] = value
    for outer, inner_values in nested.items():
        top[outer] = replace(getattr(base, outer), **inner_values)
    return replace(base, **top)


def _validated(base: Settings, values: Mapping[str, Any], sources: Mapping[str, str]) -> Settings:
    """`base` with `values`, refusing a bad one with the source it came from."""
    try:
        return _with(base, values)
    except ValidationError as exc:
        problems = []
        prefix = {name.partition(".")[2]: name for name in values if "." in name}
        for err in exc.errors(include_url=False):
            loc = err.get("loc") or ("",)
            name = str(loc[0])
            name = name if name in sources else prefix.get(name, name)
            source = sources.get(name, name)
            message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if str(err.get("type", "")).startswith("bool_"):
                message = "not an on/off value; use true or false (1/0, yes/no, on/off)"
            problems.append(f"{source}: {message} (got {err.get('input')!r})")
        raise ConfigError("; ".join(problems), problems) from None


def _check_together(settings: Settings, sources: Mapping[str, str]) -> None:
    """Rules between settings, judged once every source has been taken (a later one may fix an earlier one)."""
    if settings.bash_default_timeout_ms > settings.bash_max_timeout_ms:
        raise ConfigError(
            f"bash_default_timeout_ms ({settings.bash_default_timeout_ms}, from {sources['bash_default_timeout_ms']}) "
            f"is above bash_max_timeout_ms ({settings.bash_max_timeout_ms}, from {sources['bash_max_timeout_ms']})"
        )


def _tightened_only(
    base: Settings,
    values: Mapping[str, Any],
    sources: dict[str, str],
    found: dict[str, tuple[Any, str]],
    ignored: list[str],
    held: set[str],
) -> dict[str, tuple[Any, str]]:
    """A project file's values, each security setting moved only the tight way from what came before.

    The names whose value is now the project's, moved by it or a default it repeats, are added to `held`.
    """
    values_found = {name: value for name, (value, _) in found.items()}
    checked = _validated(base, values_found, {name: where for name, (_, where) in found.items()})
    kept: dict[str, tuple[Any, str]] = {}
    for name, (raw, where) in found.items():
        if name not in TIGHTENING:
            kept[name] = (raw, where)
            held.add(name)
            continue
        current = values.get(name, setting_value(base, name))
        proposed = setting_value(checked, name)
        try:
            value, why = TIGHTENING[name](current, proposed, base.roots)
        except (TypeError, ValueError) as exc:  # cannot tell whether it is tighter: not the project's to set
            value, why = current, f"it cannot be compared with {shown(current)}: {exc}"
        if why is not None:
            ignored.append(
                f"{where} = {shown(proposed)} ignored ({why}): a project file may only tighten this setting; "
                f"it is {shown(value)}, from {sources[name] if value == current else f'{sources[name]} + {where}'}"
            )
        if value != current:
            kept[name] = (value, where if value == proposed else f"{sources[name]} + {where}")
        if why is None and value == proposed and (value != current or sources[name] == DEFAULT_SOURCE):
            held.add(name)
    return kept


def settings_from_env(roots: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults and the environment only (no files, no flags).

    Raises:
        ConfigError: a variable holds a bad value.
    """
    return load_settings(roots, environ=environ, read_files=False).settings
