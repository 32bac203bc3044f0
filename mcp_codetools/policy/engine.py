"""Deciding one call: deny rules, then the mode, then ask rules and protected paths, then allow rules.

Deny wins over ask, ask over allow. A `Read(...)` deny also blocks writing that path (there is no point
hiding a file that can be overwritten). Bash is matched per simple command: a compound command is
allowed only if every part is, and denied or asked about if any part is; files it redirects to, or that
a recognised file-writing command names, are checked as Edits of those paths.

Calls that no rule matches are allowed unless `ask_unmatched` is set: an MCP client already asks its
user before each tool call, so asking again for every edit would ask twice. With `ask_unmatched`, the
modes behave as Claude Code's: `default` asks for edits and commands that are not read-only,
`acceptEdits` only for those commands.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcp_codetools.policy.commands import SimpleCommand, split_command
from mcp_codetools.policy.rules import EDIT_TOOLS, RULE_FAMILIES, Behaviour, Rule, command_regex, path_regex, relative
from mcp_codetools.shell.classify import MAX_PARSED_CHARS

Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
MODES: tuple[Mode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")

PROTECTED_PATHS: tuple[str, ...] = (
    ".git",
    ".claude",
    ".vscode",
    ".idea",
    ".mcp.json",
    "mcp-codetools.toml",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".config/fish",
)
"""Writes here change how tools, editors or shells behave later: asked about by default (denied in plan mode)."""

_WRITING_COMMANDS: dict[str, str] = {
    # name: which operands are written ("all" or "last")
    "tee": "all",
    "rm": "all",
    "rmdir": "all",
    "touch": "all",
    "mkdir": "all",
    "truncate": "all",
    "shred": "all",
    "chmod": "all",
    "chown": "all",
    "cp": "last",
    "mv": "last",
    "install": "last",
    "ln": "last",
}


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the policy needs to know about one call."""

    tool: str
    read_only: bool
    read_paths: tuple[Path, ...] = ()
    write_paths: tuple[Path, ...] = ()
    command: str | None = None
    cwd: Path | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy says about one call: allow, deny or ask, and why."""

    behaviour: Behaviour
    reason: str
    """Names the rule or mode that decided, and where it came from (for the model and the log)."""
    rule: Rule | None = None
    subject: str = ""
    """What the decision is about: the path or command, for a question to the user."""
    unmatched: bool = False
    """Asked only because no rule allows the call: the one question the Bash sandbox may answer itself."""


class _RuleIndex:
    """One behaviour's rules, grouped so a call is matched with a few combined regexes rather than rule by rule."""

    def __init__(self, rules: Sequence[Rule], roots: Sequence[str]) -> None:
        self.whole = [r for r in rules if r.specifier is None]
        bash = [r for r in rules if r.command_body is not None and r.tool == "Bash"]
        self.bash_rules = bash
        self.bash = command_regex([r.command_body for r in bash if r.command_body]) if bash else None
        groups: dict[tuple[str, tuple[str, ...]], list[Rule]] = {}
        for rule in rules:
            if rule.path_body is not None:
                groups.setdefault((rule.tool, tuple(rule.bases(roots))), []).append(rule)
        self.paths = [
            (tool, bases, path_regex([r.path_body for r in group if r.path_body]), group)
            for (tool, bases), group in groups.items()
        ]

    def hit(
        self, tool: str, reads: list[str], writes: list[str], commands: Sequence[SimpleCommand], raw: str | None
    ) -> tuple[Rule, str] | None:
        """The first rule that matches some part of the call, with that part ("" for the whole call)."""
        for rule in self.whole:
            if rule.covers_tool(tool):
                return rule, ""
        if raw is not None and self.bash is not None:
            for command in commands:
                for text in (command.text, command.unwrapped().text):
                    if self.bash.match(text):
                        return next(r for r in self.bash_rules if r.matches_command(text)), text
            if raw and self.bash.match(raw):
                return next(r for r in self.bash_rules if r.matches_command(raw)), raw
        for rule_tool, bases, pattern, group in self.paths:
            covers = tool == rule_tool or tool in RULE_FAMILIES.get(rule_tool, ())
            # A Read or Edit rule also guards the files any other tool writes (Bash's redirections are Edits).
            candidates = (reads + writes) if covers else writes if rule_tool in ("Read", "Edit") else ()
            for path in candidates:
                for base in bases:
                    rel = relative(path, base)
                    if rel is not None and pattern.match(rel):
                        return next(r for r in group if _matches_under(r, path, base)), path
        return None

    def hit_path(self, tool: str, path: str) -> Rule | None:
        """The first path rule covering a read of `path` by `tool` (rules without a path are not asked)."""
        for rule_tool, bases, pattern, group in self.paths:
            if tool == rule_tool or tool in RULE_FAMILIES.get(rule_tool, ()):
                for base in bases:
                    rel = relative(path, base)
                    if rel is not None and pattern.match(rel):
                        return next(r for r in group if _matches_under(r, path, base))
        return None

    def allows_commands(self, commands: Sequence[SimpleCommand]) -> bool:
        return self.bash is not None and all(self.bash.match(c.text) for c in commands)

    def allows_path(self, tool: str, path: str) -> bool:
        if any(r.covers_tool(tool) for r in self.whole):
            return True
        for rule_tool, bases, pattern, _ in self.paths:
            if tool == rule_tool or tool in RULE_FAMILIES.get(rule_tool, ()):
                for base in bases:
                    rel = relative(path, base)
                    if rel is not None and pattern.match(rel):
                        return True
        return False


def _matches_under(rule: Rule, path: str, base: str) -> bool:
    rel = relative(path, base)
    return rel is not None and rule.path_body is not None and path_regex([rule.path_body]).match(rel) is not None


@dataclass(frozen=True)
class Policy:
    """Rules from every source, the mode, and the protected paths. Nothing a tool call sends changes it."""

    roots: tuple[Path, ...]
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    mode: Mode = "default"
    mode_source: str = "built-in default"
    protected: tuple[str, ...] = PROTECTED_PATHS
    ask_unmatched: bool = False
    extra_protected_files: tuple[Path, ...] = field(default=())
    """Config files the policy was read from: writing them is asked about like a protected path."""

    def with_roots(self, roots: tuple[Path, ...]) -> Policy:
        """The same policy for a session serving `roots` (the configured ones and any the client added).

        Root-relative rules (`./path`, `src/**`, bare names such as `.env`) and the protected paths then
        hold in every folder the session serves, not only in the folders the server was started with.
        """
        return self if roots == self.roots else dataclasses.replace(self, roots=roots)

    @functools.cached_property
    def _index(self) -> tuple[_RuleIndex, _RuleIndex, _RuleIndex]:
        roots = [str(r) for r in self.roots]
        return _RuleIndex(self.deny, roots), _RuleIndex(self.ask, roots), _RuleIndex(self.allow, roots)

    @functools.cached_property
    def _protected_pattern(self) -> re.Pattern[str]:
        home = os.path.expanduser("~")
        prefixes = [f"{root}/{p}" for root in self.roots for p in self.protected]
        prefixes += [f"{home}/{p}" for p in self.protected if not p.startswith(".git")]
        alternatives = "|".join(re.escape(p) for p in prefixes) or "(?!)"
        files = "|".join(re.escape(str(p)) for p in self.extra_protected_files) or "(?!)"
        return re.compile(f"^(?:(?:{alternatives})(?:/.*)?|{files})$", re.S)

    def decide(self, facts: CallFacts) -> Decision:
        """Decide one call: deny rules first, then the mode, ask rules, protected paths, allow rules.

        A call no rule allows is asked about unless the mode lets it through.
        """
        writes = [str(p) for p in facts.write_paths]
        reads = [str(p) for p in facts.read_paths]
        commands: Sequence[SimpleCommand] = ()
        complete = True
        raw: str | None = None
        if facts.command is not None:
            parts = split_command(facts.command)
            commands, complete = parts.commands, parts.complete
            # Unparsed: rules see the raw text too (a huge one as it is, not copied into words and back).
            raw = "" if complete else _normalized(facts.command)
            targets = [*parts.write_targets, *(t for c in commands for t in _written_operands(c.unwrapped()))]
            writes += [_bash_path(t, facts.cwd) for t in targets]
        deny, ask, allow = self._index

        denied = deny.hit(facts.tool, reads, writes, commands, raw)
        if denied is not None:
            rule, subject = denied
            return Decision("deny", f"denied by the rule `{rule}` in {rule.source}", rule, subject)
        if self.mode == "plan" and not facts.read_only:
            return Decision(
                "deny",
                f"the server is in plan mode ({self.mode_source}): only read-only calls run. "
                "Describe the change instead of making it.",
            )
        if self.mode == "bypassPermissions":
            return Decision("allow", f"bypassPermissions mode ({self.mode_source})")
        asked = ask.hit(facts.tool, reads, writes, commands, raw)
        if asked is not None and not self._accepted_edit(asked[0], facts.tool, writes):
            rule, subject = asked
            return Decision("ask", f"the rule `{rule}` in {rule.source} asks", rule, subject)
        protected = self._protected(writes)
        if protected is not None:
            return Decision(
                "ask", f"{protected} is a protected path (writes there are confirmed first)", None, protected
            )
        if facts.read_only or not self.ask_unmatched:
            return Decision("allow", "allowed")
        if facts.command is not None:
            if complete and commands and allow.allows_commands(commands):
                if all(allow.allows_path("Edit", p) for p in writes):
                    return Decision("allow", "allowed by rules")
        elif (reads or writes) and all(allow.allows_path(facts.tool, p) for p in reads + writes):
            return Decision("allow", "allowed by rules")
        elif any(r.covers_tool(facts.tool) for r in allow.whole):
            return Decision("allow", "allowed by rules")
        if self.mode == "acceptEdits" and facts.tool in EDIT_TOOLS and self._inside_roots(writes):
            return Decision("allow", f"acceptEdits mode ({self.mode_source})")
        subject = facts.command if facts.command is not None else ", ".join(writes)
        return Decision(
            "ask", f"no rule allows it ({self.mode} mode, {self.mode_source})", None, subject, unmatched=True
        )

    def hides(self, tool: str, path: str) -> bool:
        """Whether a deny rule covers reading `path` (absolute, real) with `tool`: Grep and Glob leave it out."""
        deny = self._index[0]
        return deny.hit_path(tool, path) is not None

    def _accepted_edit(self, rule: Rule, tool: str, writes: list[str]) -> bool:
        """acceptEdits answers ask rules about file edits inside the roots (not protected paths)."""
        return self.mode == "acceptEdits" and tool in EDIT_TOOLS and rule.tool != "Bash" and self._inside_roots(writes)

    def _protected(self, writes: list[str]) -> str | None:
        pattern = self._protected_pattern
        return next((path for path in writes if pattern.match(path)), None)

    def _inside_roots(self, paths: list[str]) -> bool:
        roots = [str(r) for r in self.roots]
        return bool(paths) and all(any(relative(p, r) is not None for r in roots) for p in paths)


def _normalized(command: str) -> str:
    return command if len(command) > MAX_PARSED_CHARS else " ".join(command.split())


def _bash_path(target: str, cwd: Path | None) -> str:
    expanded = os.path.expanduser(target)
    base = str(cwd) if cwd is not None else os.getcwd()
    return os.path.normpath(os.path.join(base, expanded))


def _written_operands(command: SimpleCommand) -> list[str]:
    """Paths a recognised file-writing command writes (`sed -i`, `tee`, `cp A B`, …)."""
    if not command.words:
        return []
    name = command.words[0].rsplit("/", 1)[-1]
    operands = [w for w in command.words[1:] if not w.startswith("-")]
    if name == "sed" and any(w == "-i" or w.startswith(("-i", "--in-place")) for w in command.words[1:]):
        return operands[1:]  # the first operand is the script
    which = _WRITING_COMMANDS.get(name)
    if which == "all":
        return operands
    if which == "last" and len(operands) >= 2:
        return operands[-1:]
    return []
