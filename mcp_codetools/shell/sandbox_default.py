"""Whether the Bash sandbox goes on when no setting of the user's turns it on or off, and the line that says so.

Where a backend lets ordinary work through (its workflow suite passes: new files, folders, a venv, git,
make at a root's top level) and shows a command the live folders, the sandbox is on by default: the file
system confined, the network open unless a config file closes it (a default that broke `pip install` or
`git fetch` would be a surprise; a closed network is the user's choice, and `--sandbox` keeps it closed).
It answers no permission question: only a sandbox the user chose stands in for the user's yes to a Bash
command (`answers_for_bash`). Where no such backend works, one line says so and Bash runs as before.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from mcp_codetools.settings import DEFAULT_SOURCE, LoadedSettings, SandboxSettings
from mcp_codetools.shell.sandbox import NONE_CAN_RUN, Backend, SandboxUnavailable, platform_backends, prepared

DEFAULT_ON_BACKENDS: tuple[Backend, ...] = ("bwrap", "landlock")
"""The backends whose workflow suite passes and whose running command sees the live folders: bubblewrap, whose
supervisor keeps missing protected names without hiding outside changes (shell/supervisor.py), and Landlock
where its launcher's supervisor runs (shell/landlock_guard.py; without it Landlock freezes a root's top level,
and stays off by default). `auto` tries them in the platform's order; the first that works is used."""
TURN_OFF = "--no-sandbox, MCP_CODETOOLS_SANDBOX=0 or `[sandbox] enabled = false` in the user's config turns it off"
DEFAULT_ON_SOURCE = f"default: on where the sandbox lets ordinary work through; {TURN_OFF}"
"""Where `sandbox.enabled` came from when it went on by itself (`mcp-codetools doctor` shows it)."""
DEFAULT_OFF_SOURCE = "default: off"
"""How `sandbox.enabled`'s source starts when it stayed off by itself; the reason follows."""


@dataclass(frozen=True)
class StartLine:
    """What the start-up says once about the default sandbox, and how loudly."""

    text: str
    level: int
    """WARNING when it went on, or a default-on backend cannot run here; INFO when nothing changed."""


def on_by_default_here() -> bool:
    """Whether this platform has a backend that is on by default (whether it works here is for the probe)."""
    return any(backend in DEFAULT_ON_BACKENDS for backend in platform_backends())


def by_default(settings: SandboxSettings, *, network: bool) -> tuple[SandboxSettings, str, bool]:
    """The sandbox to run with when no setting turns it on or off, and why: on, or off as before.

    `network`: what the default sandbox's network is (open unless a config file closed it). Each backend
    is probed once per process (`prepared`), so serving after this finds the same outcome. The flag: a
    default-on backend exists for these settings (when the sandbox stays off: it cannot run here).
    """
    candidates = [b for b in platform_backends() if b in DEFAULT_ON_BACKENDS and settings.backend in ("auto", b)]
    if not candidates:
        return settings, f"no backend {_here(settings)} is on by default yet (--sandbox turns one on)", False
    problems: list[str] = []
    for backend in candidates:
        wanted = replace(settings, enabled=True, backend=backend, network=network)
        try:
            found = prepared(wanted)
        except SandboxUnavailable as exc:
            problems.append(exc.reasons.removeprefix(f"{NONE_CAN_RUN}: "))  # said once, below
            continue
        assert found is not None
        if found.backend == "landlock" and not found.supervised:
            problems.append(
                "Landlock runs here only without its supervisor, which would freeze each root's top level "
                f"({'; '.join(found.notes) or 'no seccomp user notification'})"
            )
            continue
        return wanted, found.describe(), True
    return settings, f"{NONE_CAN_RUN}: {'; '.join(problems)} (so Bash runs unconfined, as without the sandbox)", True


def _here(settings: SandboxSettings) -> str:
    if settings.backend != "auto":
        return f"of the chosen one ({settings.backend})"
    kinds = platform_backends()
    return f"here ({', '.join(kinds)})" if kinds else "exists here"


def applied(loaded: LoadedSettings) -> tuple[LoadedSettings, StartLine | None]:
    """`loaded` with the sandbox on where no setting named it and a default-on backend works; the start line.

    The line is None when a setting turned the sandbox on or off: the start-up says that as before. A project
    file cannot turn the default sandbox off (its `enabled = false` is not taken), but may close its network.
    """
    sources = loaded.sources
    if sources.get("sandbox.enabled", DEFAULT_SOURCE) != DEFAULT_SOURCE:
        return loaded, None
    network_set = sources.get("sandbox.network", DEFAULT_SOURCE) != DEFAULT_SOURCE
    network_set = network_set or "sandbox.network" in loaded.from_project
    current = loaded.settings.sandbox
    wanted, why, default_on = by_default(current, network=current.network if network_set else True)
    if wanted.enabled:
        moved = [name for name in ("backend", "network") if getattr(current, name) != getattr(wanted, name)]
        changed = {f"sandbox.{name}": DEFAULT_ON_SOURCE for name in ("enabled", *moved)}
        text = f"Bash sandbox: on by default: {why}; {TURN_OFF}"
    else:
        changed = {"sandbox.enabled": f"{DEFAULT_OFF_SOURCE}: {why}"}
        text = f"Bash sandbox: off by default: {why}"
    settings = replace(loaded.settings, sandbox=wanted)
    line = StartLine(text, logging.WARNING if default_on else logging.INFO)
    return replace(loaded, settings=settings, sources={**sources, **changed}), line


def answers_for_bash(loaded: LoadedSettings) -> bool:
    """Whether the sandbox stands in for the user's yes to a Bash command no rule answers.

    Only one the user turned on does (a flag, a variable, the user's or `--config`'s file): one on by
    default is a second wall with the network open, and a project file, which the model can write, may
    tighten the sandbox but not loosen the permission step with it.
    """
    source = loaded.sources.get("sandbox.enabled", DEFAULT_SOURCE)
    chosen = not source.startswith(DEFAULT_SOURCE) and "sandbox.enabled" not in loaded.from_project
    return loaded.settings.sandbox.enabled and chosen
