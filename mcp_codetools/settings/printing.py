"""`mcp-codetools config`: the effective settings with their sources, and the README's reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_codetools.settings.model import PLACES, LoadedSettings, Settings, field_info, setting_value


def shown(value: Any) -> str:
    """A value as TOML would spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (frozenset, tuple, list)):
        return "[" + ", ".join(shown(v) for v in sorted(value, key=str)) + "]"
    if isinstance(value, (str, Path)):
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "(unset)"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {shown(v)}" for k, v in value.items()) + "}"
    return str(value)


def describe(loaded: LoadedSettings) -> list[str]:
    """The effective settings, one per line, each with where its value came from."""
    lines = [f"roots = {shown(loaded.settings.roots)}  # {loaded.sources['roots']}"]
    for name, place in PLACES.items():
        value = shown(setting_value(loaded.settings, name))
        lines.append(f"{place.section}.{place.key} = {value}  # {loaded.sources[name]}")
    lines += [f"# ignored: {note}" for note in loaded.ignored]
    return lines


def markdown_reference() -> str:
    """The README's configuration reference, generated from the model."""
    out = [
        "| Setting (TOML) | Environment variable | Flag | Default | Meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    defaults = Settings(roots=(Path("."),))
    for name, place in PLACES.items():
        info = field_info(name)
        default = shown(setting_value(defaults, name))
        flag = f"`{place.flag}`" if place.flag else ""
        out.append(f"| `[{place.section}] {place.key}` | `{place.env}` | {flag} | `{default}` | {info.description} |")
    return "\n".join(out) + "\n"
