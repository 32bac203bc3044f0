"""
Deciding one call: deny rules, then the mode, then ask rules and protected paths, then allow rules.

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

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcp_codetools.policy.commands import SimpleCommand, split_command
from mcp_codetools.policy.rules import EDIT_TOOLS, Behaviour, Rule

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
    behaviour: Behaviour
    reason: str
    """Names the rule or mode that decided, and where it came from (for the model and the log)."""
    rule: Rule | None = None
    subject: str = ""
    """What the decision is about: the path or command, for a question to the user."""


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

    def decide(self, facts: CallFacts) -> Decision:
        writes = list(facts.write_paths)
        commands: Sequence[SimpleCommand] = ()
        complete = True
        if facts.command is not None:
            parts = split_command(facts.command)
            commands, complete = parts.commands, parts.complete
            writes += [self._bash_path(t, facts.cwd) for t in parts.write_targets]
            writes += [self._bash_path(t, facts.cwd) for c in commands for t in _written_operands(c.unwrapped())]
        reads = list(facts.read_paths)

        denied = self._first_match(self.deny, facts, reads, writes, commands, complete)
        if denied is not None:
            return Decision("deny", f"denied by the rule `{denied[0]}` in {denied[0].source}", denied[0], denied[1])
        if self.mode == "plan" and not facts.read_only:
            return Decision(
                "deny",
                f"the server is in plan mode ({self.mode_source}): only read-only calls run. "
                "Describe the change instead of making it.",
            )
        if self.mode == "bypassPermissions":
            return Decision("allow", f"bypassPermissions mode ({self.mode_source})")
        asked = self._first_match(self.ask, facts, reads, writes, commands, complete)
        if asked is not None and not self._accepted_edit(asked[0], facts):
            return Decision("ask", f"the rule `{asked[0]}` in {asked[0].source} asks", asked[0], asked[1])
        protected = self._protected(writes, commands)
        if protected is not None:
            return Decision(
                "ask", f"{protected} is a protected path (writes there are confirmed first)", None, str(protected)
            )
        allowed = self._all_allowed(facts, reads, writes, commands, complete)
        if allowed or facts.read_only or not self.ask_unmatched:
            return Decision("allow", "allowed")
        if self.mode == "acceptEdits" and facts.tool in EDIT_TOOLS and self._inside_roots(writes):
            return Decision("allow", f"acceptEdits mode ({self.mode_source})")
        subject = facts.command if facts.command is not None else ", ".join(str(p) for p in writes)
        return Decision("ask", f"no rule allows it ({self.mode} mode, {self.mode_source})", None, subject)

    # -- matching ---------------------------------------------------------------------------------

    def _first_match(
        self,
        rules: Iterable[Rule],
        facts: CallFacts,
        reads: list[Path],
        writes: list[Path],
        commands: Sequence[SimpleCommand],
        complete: bool,
    ) -> tuple[Rule, str] | None:
        for rule in rules:
            hit = self._rule_hits(rule, facts, reads, writes, commands, complete)
            if hit is not None:
                return rule, hit
        return None

    def _rule_hits(
        self,
        rule: Rule,
        facts: CallFacts,
        reads: list[Path],
        writes: list[Path],
        commands: Sequence[SimpleCommand],
        complete: bool,
    ) -> str | None:
        """What part of the call a deny or ask rule matches ("" for the whole call), or None."""
        if rule.specifier is None:
            return "" if rule.covers_tool(facts.tool) else None
        if rule.tool == "Bash":
            if facts.command is None:
                return None
            for command in commands:
                for text in (command.text, command.unwrapped().text):
                    if rule.matches_command(text):
                        return text
            if not complete and rule.matches_command(" ".join(facts.command.split())):
                return facts.command
            return None
        if not rule.is_path_rule:
            return None
        candidates = reads + writes if rule.covers_tool(facts.tool) else []
        if rule.tool in ("Read", "Edit"):
            candidates += writes  # a Read deny guards the file against writes too; Bash's writes are Edits
        for path in candidates:
            if rule.matches_path(path, self.roots):
                return str(path)
        return None

    def _all_allowed(
        self,
        facts: CallFacts,
        reads: list[Path],
        writes: list[Path],
        commands: Sequence[SimpleCommand],
        complete: bool,
    ) -> bool:
        if facts.command is not None:
            if not complete or not commands:
                return False
            bash_rules = [r for r in self.allow if r.tool == "Bash"]
            if not all(any(r.matches_command(c.text) for r in bash_rules) for c in commands):
                return False
            return all(self._path_allowed("Edit", p) for p in writes)
        if any(r.covers_tool(facts.tool) and r.specifier is None for r in self.allow):
            return True
        paths = reads + writes
        return bool(paths) and all(self._path_allowed(facts.tool, p) for p in paths)

    def _path_allowed(self, tool: str, path: Path) -> bool:
        return any(r.covers_tool(tool) and r.matches_path(path, self.roots) for r in self.allow)

    def _accepted_edit(self, rule: Rule, facts: CallFacts) -> bool:
        """acceptEdits answers ask rules about file edits inside the roots (not protected paths)."""
        return (
            self.mode == "acceptEdits"
            and facts.tool in EDIT_TOOLS
            and rule.tool != "Bash"
            and self._inside_roots(list(facts.write_paths))
        )

    def _protected(self, writes: list[Path], commands: Sequence[SimpleCommand]) -> Path | None:
        for path in writes:
            if path in self.extra_protected_files:
                return path
            for root in self.roots:
                if not path.is_relative_to(root):
                    continue
                rel = path.relative_to(root).as_posix()
                if any(rel == p or rel.startswith(p + "/") for p in self.protected):
                    return path
            home = Path(os.path.expanduser("~"))
            if path.is_relative_to(home):
                rel = path.relative_to(home).as_posix()
                if any(rel == p or rel.startswith(p + "/") for p in self.protected if not p.startswith(".git")):
                    return path
        return None

    def _inside_roots(self, paths: list[Path]) -> bool:
        return bool(paths) and all(any(p.is_relative_to(r) for r in self.roots) for p in paths)

    @staticmethod
    def _bash_path(target: str, cwd: Path | None) -> Path:
        expanded = os.path.expanduser(target)
        base = cwd if cwd is not None else Path.cwd()
        return Path(os.path.normpath(os.path.join(base, expanded)))


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
