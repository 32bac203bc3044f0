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
file, so a team keeps one policy: its `allow`, `deny`, `ask` and `defaultMode` are honoured.

The project's sources (`.claude/settings*.json` and `mcp-codetools.toml`) sit inside a root the model
can write, so they may only tighten what the defaults and the user's file said: a stricter mode
(`plan` > `default` > `acceptEdits` > `bypassPermissions`), `ask_unmatched` on, `unanswered_ask` "deny",
more protected paths. A looser value is ignored and logged. Their allow rules cannot lift a deny or an
ask (the engine checks those first); they can only answer the questions `ask_unmatched` raises, so when
the user's own files turned that on, the project's allow rules are ignored too. Their hooks run only
when the user's own configuration says `[hooks] from_project = true` (`from_claude_settings`, its
older name, means the same).

Claude Code names this server's tools `mcp__<server>__<Tool>`, so a rule written that way for one of the
names this server goes by (`permissions.server_names`, the names the README's client configs use, and the
names Claude Code's own configs give a server that runs `mcp-codetools`) is read as the `<Tool>` rule; a
rule for another server is left alone. A rule that can match nothing here (a misspelt tool, a specifier on
a tool matched by name only) is logged once at start and shown by `config` and `doctor`; in
`.claude/settings*.json` only names close to this server's tools are, since Claude Code's own and other
servers' tools belong there.

Everything is read once, at start-up. Nothing a tool call sends can change it, and the files it was
read from are protected paths.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_codetools.policy.engine import MODES, PROTECTED_PATHS, Mode, Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.hooks import HookConfigError, Hooks, parse_hooks
from mcp_codetools.policy.rules import PATHLESS_TOOLS, TOOL_NAMES, Behaviour, Rule, RuleSyntaxError, parse_rule
from mcp_codetools.settings import PROJECT_FILE, ConfigError, config_files, read_toml, user_config_file
from mcp_codetools.settings.sources import server_cache_folder, server_install_folders

__all__ = [
    "PROJECT_FILE",
    "PolicyConfig",
    "PolicyConfigError",
    "check_policy_file",
    "load_gate",
    "load_policy_config",
    "user_config_file",
]

logger = logging.getLogger(__name__)

CLAUDE_FILES = (".claude/settings.json", ".claude/settings.local.json")
MODE_RANK: dict[Mode, int] = {"bypassPermissions": 0, "acceptEdits": 1, "default": 2, "plan": 3}
"""How strict each mode is: a project source may only move the mode up."""
HOOK_OPT_INS = ("from_project", "from_claude_settings")
"""`[hooks]` keys, honoured only in the user's own files, that let the project's hooks run."""
MODE_ENV = "MCP_CODETOOLS_PERMISSION_MODE"

_PERMISSION_KEYS = frozenset(
    {
        "allow",
        "deny",
        "ask",
        "default_mode",
        "ask_unmatched",
        "unanswered_ask",
        "protected_paths",
        "claude_settings",
        "server_names",
    }
)
DEFAULT_SERVER_NAMES = ("codetools", "mcp-codetools")
"""The names the README's client configs and the bundle give this server, so `mcp__codetools__Bash(...)` works."""
CLAUDE_CODE_TOOLS = frozenset(
    {
        "Agent", "Task", "TaskOutput", "TaskStop", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList", "TodoWrite",
        "TodoRead", "WebFetch", "WebSearch", "Skill", "SlashCommand", "ExitPlanMode", "EnterPlanMode", "LS",
        "NotebookRead", "KillBash", "ListMcpResourcesTool", "ReadMcpResourceTool", "EnterWorktree", "ExitWorktree",
        "SendMessage", "Workflow", "CronCreate", "CronDelete", "CronList", "ScheduleWakeup", "ToolSearch",
        "ReportFindings",
    }
)  # fmt: skip
"""Claude Code's own tools: normal in a shared `.claude/settings.json`, never warned about."""
_MCP_RULE = re.compile(r"^\s*mcp__([^()\s]+?)(?:__([A-Za-z0-9*]+))?\s*(\(.*\))?\s*$", re.S)


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
    """Raw `[hooks]` tables of the user's own files, with the file they came from, for the hooks module."""
    project_hooks: list[tuple[Path, Mapping[str, Any]]] = field(default_factory=list)
    """Hook tables from the project's sources (`mcp-codetools.toml`, `.claude/settings*.json`)."""
    hooks_from_project: bool = False
    """Run the project's hooks too: off unless the user's own configuration says so (they are a repository's)."""
    ignored: list[str] = field(default_factory=list)
    """Project values that would have loosened the policy, each with why it was ignored."""
    problems: list[str] = field(default_factory=list)
    """What was wrong with the files read (collected so that `config --check` shows every one)."""
    project_allow: list[Rule] = field(default_factory=list)
    """The project's allow rules, kept apart until it is known whether the user's `ask_unmatched` holds."""
    user_asks_unmatched: bool = False
    """The user's own files turned `ask_unmatched` on: then the project's allow rules cannot answer those asks."""
    server_names: frozenset[str] = frozenset(DEFAULT_SERVER_NAMES)
    """The names a client may give this server, as `mcp__<name>__<Tool>` rules spell them."""
    warnings: list[str] = field(default_factory=list)
    """Rules that can match nothing here: logged at start, shown by `config` and `doctor`."""

    def hook_tables(self) -> list[tuple[Path, Mapping[str, Any]]]:
        """The hook tables to run: the user's own, and the project's when the user allowed them."""
        return self.hooks + (self.project_hooks if self.hooks_from_project else [])

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
            extra_protected_files=(*self.files, user_config_file(), server_cache_folder(), *server_install_folders()),
        )

    def _ignore(self, where: str, value: object, now: object, why: str) -> None:
        note = f"{where} = {value!r} ignored: a project file may only tighten it ({why}); it stays {now!r}"
        self.ignored.append(note)
        logger.warning("%s", note)


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
        PolicyConfigError: a file cannot be read or parsed, or holds an unknown key, a bad rule or a bad mode
            (every problem found, one a line).
    """
    env = os.environ if environ is None else environ
    config = PolicyConfig()
    # The same files, in the same order, read the same way as the server's settings (`config.config_files`).
    user, *later = config_files(roots, config_file, env)
    user_table = _read_toml(user.path, required=False) if read_user_file else None
    tables = [(f, _read_toml(f.path, required=f.required)) for f in later]
    config.server_names = _server_names(config, [t for t in (user_table, *(t for _, t in tables)) if t], roots, env)
    if user_table is not None:
        _apply_table(config, user_table, user.path, project=False)
    # Whether to read `.claude/`: the user's files decide; the project file may only turn it off.
    for f, table in [(user, user_table), *tables]:
        permissions = (table or {}).get("permissions", {})
        wanted = permissions.get("claude_settings") if isinstance(permissions, dict) else None
        if isinstance(wanted, bool) and (not f.project or not wanted):
            config.claude_settings = wanted
    if config.claude_settings:
        for root in roots:
            for name in CLAUDE_FILES:
                _apply_claude(config, root / name)
    for f, table in tables:
        if table is not None:
            _apply_table(config, table, f.path, project=f.project)
    _settle_project_allows(config)
    if config.problems:
        raise PolicyConfigError("\n".join(config.problems))
    for warning in config.warnings:
        logger.warning("%s", warning)
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


def _checked(config: PolicyConfig, check: Any, *args: Any) -> Any:
    """`check(*args)`, its problem recorded instead of raised (None then)."""
    try:
        return check(*args)
    except PolicyConfigError as exc:
        config.problems.append(str(exc))
        return None


def _apply_table(config: PolicyConfig, table: Mapping[str, Any], path: Path, *, project: bool) -> None:
    config.files.append(path)
    permissions = table.get("permissions", {})
    if not isinstance(permissions, dict):
        config.problems.append(f"{path}: [permissions] must be a table")
        permissions = {}
    unknown = set(permissions) - _PERMISSION_KEYS
    if unknown:
        config.problems.append(
            f"{path}: unknown key(s) in [permissions]: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(_PERMISSION_KEYS))})"
        )
    _add_rules(config, permissions, path, path.parent, project=project)
    if "default_mode" in permissions:
        mode = _checked(config, _mode, permissions["default_mode"], f"{path}: permissions.default_mode")
        if mode is not None:
            _set_mode(config, mode, str(path), f"{path}: permissions.default_mode", project=project)
    if "ask_unmatched" in permissions:
        value = _checked(config, _bool, permissions["ask_unmatched"], f"{path}: permissions.ask_unmatched")
        if value is not None:
            if project and config.ask_unmatched and not value:
                config._ignore(f"{path}: permissions.ask_unmatched", value, True, "true asks more")
            else:
                config.ask_unmatched = value
                if not project:
                    config.user_asks_unmatched = value
    if "unanswered_ask" in permissions:
        value = permissions["unanswered_ask"]
        if value not in ("deny", "allow"):
            config.problems.append(f'{path}: permissions.unanswered_ask must be "deny" or "allow", not {value!r}')
        elif project and value == "allow" and config.unanswered_ask == "deny":
            config._ignore(f"{path}: permissions.unanswered_ask", value, "deny", '"deny" refuses what cannot be asked')
        else:
            config.unanswered_ask = value
    if "protected_paths" in permissions:
        paths = _checked(config, _strings, permissions["protected_paths"], f"{path}: permissions.protected_paths")
        if paths is not None:
            if project:  # the project's list adds to the protected paths, never drops one
                paths = [*config.protected, *(p for p in paths if p not in config.protected)]
            config.protected = tuple(paths)
    if "claude_settings" in permissions:
        _checked(config, _bool, permissions["claude_settings"], f"{path}: permissions.claude_settings")
    hooks = table.get("hooks")
    if hooks is not None:
        if not isinstance(hooks, dict):
            config.problems.append(f"{path}: [hooks] must be a table")
            return
        for key in HOOK_OPT_INS:
            flag = hooks.get(key)
            if flag is None:
                continue
            value = _checked(config, _bool, flag, f"{path}: hooks.{key}")
            if value is None:
                continue
            if project and value:
                config._ignore(f"{path}: hooks.{key}", value, config.hooks_from_project, "only the user opts in")
            else:
                config.hooks_from_project = value
        (config.project_hooks if project else config.hooks).append((path, hooks))


def _add_rules(
    config: PolicyConfig,
    permissions: Mapping[str, Any],
    path: Path,
    base: Path,
    *,
    project: bool,
    shared: bool = False,
) -> None:
    """Parse and keep each rule; `shared`: a Claude Code file, where other tools' rules are normal."""
    for behaviour in ("allow", "deny", "ask"):
        texts = _checked(config, _strings, permissions.get(behaviour, []), f"{path}: permissions.{behaviour}") or []
        for text in texts:
            for own in own_rule_texts(text, config.server_names):
                rule = _checked(config, _rule, own, behaviour, path, base)
                if rule is None:
                    continue
                if own != text:
                    rule = dataclasses.replace(rule, text=text.strip())  # refusals quote the rule as written
                warning = unmatchable(rule, shared=shared and own == text)
                if warning is not None:
                    config.warnings.append(f"{path}: permissions.{behaviour}: {warning}")
                getattr(config, "project_allow" if project and behaviour == "allow" else behaviour).append(rule)


def _normal_name(name: str) -> str:
    """A server name as Claude Code spells it in tool names (other characters become `_`)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def own_rule_texts(text: str, server_names: frozenset[str]) -> list[str]:
    """The rules `text` makes for this server.

    Itself; for `mcp__<server>__<Tool>(...)`, `<Tool>(...)` when `<server>` is one of `server_names`
    (`mcp__<server>` alone: every tool), and nothing for another server.
    """
    found = _MCP_RULE.match(text)
    if found is None:
        return [text]
    server, tool, spec = found.group(1), found.group(2), found.group(3) or ""
    if _normal_name(server) not in {_normal_name(name) for name in server_names}:
        return []  # another server's tool: that server's business
    if tool is None or tool == "*":
        return list(TOOL_NAMES) if not spec else [f"{tool or server}{spec}"]  # `mcp__x(...)` cannot match: warned
    return [f"{tool}{spec}"]


def unmatchable(rule: Rule, *, shared: bool = False) -> str | None:
    """Why `rule` can match no call of this server, or None when it can.

    `shared`: the rule is in a file other tools read too (`.claude/settings.json`), so a name that is not
    close to one of this server's tools is someone else's and not reported.
    """
    if rule.tool not in TOOL_NAMES:
        import difflib  # here: only a rule naming no tool of ours needs it, and the start-up is on the way to a call

        close = difflib.get_close_matches(rule.tool, TOOL_NAMES, n=1, cutoff=0.75 if shared else 0.6)
        if shared and (not close or rule.tool in CLAUDE_CODE_TOOLS):
            return None
        hint = f"did you mean {close[0]}?" if close else f"the tools are {', '.join(TOOL_NAMES)}"
        return f"`{rule.text}` names no tool of this server, so it matches nothing ({hint})"
    if rule.specifier is not None and rule.tool in PATHLESS_TOOLS:
        return (
            f"`{rule.text}` matches nothing: {rule.tool} rules match the tool by name only, "
            f"so write `{rule.tool}` for the whole tool"
        )
    return None


def _server_names(
    config: PolicyConfig, tables: Sequence[Mapping[str, Any]], roots: Sequence[Path], env: Mapping[str, str]
) -> frozenset[str]:
    """The defaults, every `permissions.server_names`, and what Claude Code's configs call this server."""
    names = set(DEFAULT_SERVER_NAMES)
    for table in tables:
        permissions = table.get("permissions")
        if isinstance(permissions, dict) and "server_names" in permissions:
            names.update(_checked(config, _strings, permissions["server_names"], "permissions.server_names") or ())
    names.update(client_server_names(roots, env))
    return frozenset(names)


def client_server_names(roots: Sequence[Path], env: Mapping[str, str]) -> set[str]:
    """The names Claude Code's configs give a server that runs mcp-codetools.

    Read from the project's `.mcp.json` at each root and `~/.claude.json` (user scope, and local scope
    for the roots); an unreadable file is skipped.
    """
    home = env.get("CLAUDE_CONFIG_DIR") or env.get("HOME")
    user_file = Path(home) / ".claude.json" if home else None
    tables: list[object] = []
    for path in [*(root / ".mcp.json" for root in roots), *([user_file] if user_file else [])]:
        try:
            if path.stat().st_size > _CLIENT_CONFIG_LIMIT:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        tables.append(data.get("mcpServers"))
        projects = data.get("projects")
        if isinstance(projects, dict):
            local = [projects.get(str(root)) for root in roots]
            tables += [entry.get("mcpServers") for entry in local if isinstance(entry, dict)]
    names = set()
    for servers in tables:
        if not isinstance(servers, dict):
            continue
        for name, entry in servers.items():
            if isinstance(entry, dict) and _runs_this_server(entry):
                names.add(str(name))
    return names


_CLIENT_CONFIG_LIMIT = 8 << 20
"""`~/.claude.json` grows with history; a bigger one is not read at start."""


def _runs_this_server(entry: Mapping[str, Any]) -> bool:
    words = [entry.get("command"), *(entry.get("args") or [])]
    return any(isinstance(word, str) and ("mcp-codetools" in word or "mcp_codetools" in word) for word in words)


def _settle_project_allows(config: PolicyConfig) -> None:
    """Add the project's allow rules, unless the user's own `ask_unmatched` would be answered by them.

    Deny and ask rules are checked before allow rules, so an allow can only ever answer the questions
    `ask_unmatched` raises. When the user turned that on, those questions are the user's: the project's
    allow rules are then ignored (and listed), whatever they name.
    """
    if config.user_asks_unmatched:
        for rule in config.project_allow:
            config._ignore(f"{rule.source}: permissions.allow", rule.text, "asked about", "the user's ask_unmatched")
    else:
        config.allow.extend(config.project_allow)
    config.project_allow = []


def _set_mode(config: PolicyConfig, mode: Mode, source: str, where: str, *, project: bool) -> None:
    if project and MODE_RANK[mode] < MODE_RANK[config.mode]:
        config._ignore(where, mode, config.mode, "plan > default > acceptEdits > bypassPermissions")
        return
    config.mode = mode
    config.mode_source = source


def _apply_claude(config: PolicyConfig, path: Path) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        config.problems.append(f"{path} cannot be read as JSON: {exc}")
        return
    permissions = data.get("permissions") if isinstance(data, dict) else None
    config.files.append(path)
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if isinstance(hooks, dict):
        config.project_hooks.append((path, hooks))
    if not isinstance(permissions, dict):
        return
    # `/path` there is relative to the project
    _add_rules(config, permissions, path, path.parent.parent, project=True, shared=True)
    mode = permissions.get("defaultMode")
    if mode is not None:
        checked = _checked(config, _mode, mode, f"{path}: permissions.defaultMode")
        if checked is not None:
            _set_mode(config, checked, str(path), f"{path}: permissions.defaultMode", project=True)


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
    """Every problem in one config file's `[permissions]` and `[hooks]` tables (`mcp-codetools config --check`).

    A `.json` file is read as Claude Code's settings (`.claude/settings.json`). A rule that can match
    nothing here protects nothing, so it is a problem too.
    """
    config = PolicyConfig()
    if path.suffix == ".json":
        if not path.is_file():
            return [f"{path}: no such file"]
        _apply_claude(config, path)
    else:
        try:
            table = _read_toml(path, required=True)
        except PolicyConfigError as exc:
            return [str(exc)]
        if table is not None:
            config.server_names = _server_names(config, [table], (), {})
            _apply_table(config, table, path, project=False)
    problems = [*config.problems, *config.warnings]
    parse_hooks(config.hooks + config.project_hooks, problems=problems)
    return problems
