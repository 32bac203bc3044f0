"""Where the policy comes from: built-in defaults, config files, the environment and flags, later wins.

Sources, in order:

1. built-in defaults (no rules, `default` mode, the protected paths);
2. `~/.config/mcp-codetools/config.toml` (`$XDG_CONFIG_HOME` when set);
3. `mcp-codetools.toml` at the first root;
4. the file given by `--config`;
5. the environment (`MCP_CODETOOLS_PERMISSION_MODE`);
6. flags (`--permission-mode`).

Rule lists from every source are added together (a deny anywhere holds); single values such as the
mode are taken from the last source that sets them. The `permissions` block of `.claude/settings.json`
and `.claude/settings.local.json` at each root is read too, after the user file and before the project
file, so a team keeps one policy: its `allow`, `deny`, `ask` and `defaultMode` are honoured, except that
`bypassPermissions` is accepted only from the server's own configuration.

Everything is read once, at start-up. Nothing a tool call sends can change it, and the files it was
read from are protected paths.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_codetools.config import PROJECT_FILE, ConfigError, config_files, read_toml, user_config_file
from mcp_codetools.policy.engine import MODES, PROTECTED_PATHS, Mode, Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.hooks import HookConfigError, Hooks, parse_hooks
from mcp_codetools.policy.rules import Behaviour, Rule, RuleSyntaxError, parse_rule

__all__ = [
    "PROJECT_FILE",
    "PolicyConfig",
    "PolicyConfigError",
    "check_policy_file",
    "load_gate",
    "load_policy_config",
    "user_config_file",
]

CLAUDE_FILES = (".claude/settings.json", ".claude/settings.local.json")
MODE_ENV = "MCP_CODETOOLS_PERMISSION_MODE"

_PERMISSION_KEYS = frozenset(
    {"allow", "deny", "ask", "default_mode", "ask_unmatched", "unanswered_ask", "protected_paths", "claude_settings"}
)


class PolicyConfigError(ValueError):
    """A config file or value the server refuses to start with; the message names the file and the key."""


@dataclass
class PolicyConfig:
    """The merged permission settings, before they become a `Policy`."""

    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    mode: Mode = "default"
    mode_source: str = "built-in default"
    ask_unmatched: bool = False
    unanswered_ask: Behaviour = "deny"
    """What an ask becomes when the client cannot be asked: refused ("deny") or allowed ("allow")."""
    protected: tuple[str, ...] = PROTECTED_PATHS
    claude_settings: bool = True
    files: list[Path] = field(default_factory=list)
    """Every config file read: protected from writes like the protected paths."""
    hooks: list[tuple[Path, Mapping[str, Any]]] = field(default_factory=list)
    """Raw `[hooks]` tables with the file they came from, for the hooks module to read."""
    claude_hooks: list[tuple[Path, Mapping[str, Any]]] = field(default_factory=list)
    hooks_from_claude_settings: bool = False
    """Run hooks found in `.claude/settings.json` too: off by default, since they are commands from a repository."""

    def hook_tables(self) -> list[tuple[Path, Mapping[str, Any]]]:
        """The hook tables to run: the server's own, and `.claude/settings.json`'s when allowed."""
        return self.hooks + (self.claude_hooks if self.hooks_from_claude_settings else [])

    def policy(self, roots: Sequence[Path]) -> Policy:
        """The `Policy` these settings make for `roots`."""
        return Policy(
            roots=tuple(roots),
            allow=tuple(self.allow),
            deny=tuple(self.deny),
            ask=tuple(self.ask),
            mode=self.mode,
            mode_source=self.mode_source,
            protected=self.protected,
            ask_unmatched=self.ask_unmatched,
            extra_protected_files=tuple(self.files) + (user_config_file(),),
        )


def load_policy_config(
    roots: Sequence[Path],
    *,
    config_file: Path | None = None,
    mode_flag: str | None = None,
    environ: Mapping[str, str] | None = None,
    read_user_file: bool = True,
) -> PolicyConfig:
    """Read every source in order.

    Raises:
        PolicyConfigError: a file cannot be read or parsed, or holds an unknown key, a bad rule or a bad mode.
    """
    env = os.environ if environ is None else environ
    config = PolicyConfig()
    # The same files, in the same order, read the same way as the server's settings (`config.config_files`).
    (user, _), *later = config_files(roots, config_file, env)
    if read_user_file:
        _apply_toml(config, user, required=False)
    tables = [(path, _read_toml(path, required=required)) for path, required in later]
    project_table = tables[0][1] if roots else None  # the project file comes first when there is a root
    claude_wanted = bool((project_table or {}).get("permissions", {}).get("claude_settings", config.claude_settings))
    if claude_wanted:
        for root in roots:
            for name in CLAUDE_FILES:
                _apply_claude(config, root / name)
    for path, table in tables:
        if table is not None:
            _apply_table(config, table, path)
    if env.get(MODE_ENV):
        config.mode = _mode(env[MODE_ENV], MODE_ENV)
        config.mode_source = f"environment variable {MODE_ENV}"
    if mode_flag:
        config.mode = _mode(mode_flag, "--permission-mode")
        config.mode_source = "--permission-mode flag"
    return config


def _read_toml(path: Path, *, required: bool) -> dict[str, Any] | None:
    try:
        return read_toml(path, required=required)
    except ConfigError as exc:
        raise PolicyConfigError(str(exc)) from None


def _apply_toml(config: PolicyConfig, path: Path, *, required: bool) -> None:
    table = _read_toml(path, required=required)
    if table is not None:
        _apply_table(config, table, path)


def _apply_table(config: PolicyConfig, table: Mapping[str, Any], path: Path) -> None:
    config.files.append(path)
    permissions = table.get("permissions", {})
    if not isinstance(permissions, dict):
        raise PolicyConfigError(f"{path}: [permissions] must be a table")
    unknown = set(permissions) - _PERMISSION_KEYS
    if unknown:
        raise PolicyConfigError(
            f"{path}: unknown key(s) in [permissions]: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(_PERMISSION_KEYS))})"
        )
    base = path.parent
    for behaviour in ("allow", "deny", "ask"):
        for text in _strings(permissions.get(behaviour, []), f"{path}: permissions.{behaviour}"):
            getattr(config, behaviour).append(_rule(text, behaviour, path, base))
    if "default_mode" in permissions:
        config.mode = _mode(permissions["default_mode"], f"{path}: permissions.default_mode")
        config.mode_source = str(path)
    if "ask_unmatched" in permissions:
        config.ask_unmatched = _bool(permissions["ask_unmatched"], f"{path}: permissions.ask_unmatched")
    if "unanswered_ask" in permissions:
        value = permissions["unanswered_ask"]
        if value not in ("deny", "allow"):
            raise PolicyConfigError(f'{path}: permissions.unanswered_ask must be "deny" or "allow", not {value!r}')
        config.unanswered_ask = value
    if "protected_paths" in permissions:
        config.protected = tuple(_strings(permissions["protected_paths"], f"{path}: permissions.protected_paths"))
    if "claude_settings" in permissions:
        config.claude_settings = _bool(permissions["claude_settings"], f"{path}: permissions.claude_settings")
    hooks = table.get("hooks")
    if hooks is not None:
        if not isinstance(hooks, dict):
            raise PolicyConfigError(f"{path}: [hooks] must be a table")
        flag = hooks.get("from_claude_settings")
        if flag is not None:
            config.hooks_from_claude_settings = _bool(flag, f"{path}: hooks.from_claude_settings")
        config.hooks.append((path, hooks))


def _apply_claude(config: PolicyConfig, path: Path) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        raise PolicyConfigError(f"{path} cannot be read as JSON: {exc}") from None
    permissions = data.get("permissions") if isinstance(data, dict) else None
    config.files.append(path)
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if isinstance(hooks, dict):
        config.claude_hooks.append((path, hooks))
    if not isinstance(permissions, dict):
        return
    base = path.parent.parent  # `/path` in a project's .claude settings is relative to the project
    for behaviour in ("allow", "deny", "ask"):
        for text in _strings(permissions.get(behaviour, []), f"{path}: permissions.{behaviour}"):
            getattr(config, behaviour).append(_rule(text, behaviour, path, base))
    mode = permissions.get("defaultMode")
    if mode is not None and mode != "bypassPermissions":
        config.mode = _mode(mode, f"{path}: permissions.defaultMode")
        config.mode_source = str(path)


def _rule(text: str, behaviour: Behaviour, path: Path, base: Path) -> Rule:
    try:
        return parse_rule(text, behaviour, source=str(path), base=base)
    except RuleSyntaxError as exc:
        raise PolicyConfigError(f"{path}: permissions.{behaviour}: {exc}") from None


def _mode(value: object, where: str) -> Mode:
    if value not in MODES:
        raise PolicyConfigError(f"{where}: {value!r} is not a permission mode (one of: {', '.join(MODES)})")
    return value


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise PolicyConfigError(f"{where} must be true or false, not {value!r}")
    return value


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise PolicyConfigError(f"{where} must be a list of strings")
    return list(value)


def load_gate(
    roots: Sequence[Path],
    *,
    config_file: Path | None = None,
    mode_flag: str | None = None,
    sandboxed_bash: bool = False,
    environ: Mapping[str, str] | None = None,
) -> PermissionGate:
    """The permission step the server runs, from every source.

    Raises:
        PolicyConfigError: a source is bad (the message names it); hook tables included.
    """
    config = load_policy_config(roots, config_file=config_file, mode_flag=mode_flag, environ=environ)
    try:
        groups = parse_hooks(config.hook_tables())
    except HookConfigError as exc:
        raise PolicyConfigError(str(exc)) from None
    return PermissionGate(
        config.policy(roots), Hooks(groups), unanswered=config.unanswered_ask, sandboxed_bash=sandboxed_bash
    )


def check_policy_file(path: Path) -> list[str]:
    """The problems in one config file's `[permissions]` and `[hooks]` tables (`mcp-codetools config --check`)."""
    config = PolicyConfig()
    try:
        _apply_toml(config, path, required=True)
        parse_hooks(config.hook_tables())
    except (PolicyConfigError, HookConfigError) as exc:
        return [str(exc)]
    return []
