"""Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`.

A specifier is a path pattern for every tool but Bash, whose specifier is a command pattern. Path
specifiers are gitignore-style globs with anchors:

- `//abs/path`: an absolute path on this machine;
- `~/path`: under the home folder;
- `/path`: relative to the base of the settings file the rule came from;
- `./path` or `path`: relative to a workspace root; a bare name without a slash matches at any depth
  (`Read(.env)` is `Read(**/.env)`), as in .gitignore.

A pattern that matches a folder covers everything under it. Bash specifiers match a simple command's
words joined by single spaces: `*` matches any text, a trailing ` *` also matches the bare command
(`Bash(ls *)` matches `ls` and `ls -la`, not `lsof`), and the legacy `Bash(npm run test:*)` means
`Bash(npm run test *)`. A rule without a specifier matches the whole tool.

A `Read(...)` rule covers every tool that reads the files its path fields name, an `Edit(...)` rule every tool
that writes them (`RuleFamilies`). Which tools those are, each tool declares (`tools/base.py`); the policy sits
below the tools, so the families are handed to it: the pipeline, where tools and the permission step meet,
gives the policy the families of the tools it runs.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Behaviour = Literal["allow", "deny", "ask"]
Anchor = Literal["absolute", "home", "settings", "root"]

TOOL_NAMES: tuple[str, ...] = (
    "Read",
    "Edit",
    "Write",
    "Grep",
    "Glob",
    "Bash",
    "BashOutput",
    "KillShell",
    "MultiEdit",
    "NotebookEdit",
    "FileHistory",
    "LSP",
)
"""Every tool a rule may name. Rules are checked (and `mcp__<server>__*` expanded) when they are loaded, at
start-up before any tool is imported, so the policy keeps the names; a test holds them equal to
`tools.every_tool()`."""
COMMAND_TOOL = "Bash"
"""The tool whose rules name commands, not paths."""
PATHLESS_TOOLS = frozenset({"BashOutput", "KillShell"})
"""The tools with no path field, whose rules can only name the whole tool. Rules are checked when they are
loaded, before any tool is imported (start-up cost), so the policy keeps this; a test holds it equal to what
the tools declare (`path_fields`)."""


@dataclass(frozen=True, slots=True)
class RuleFamilies:
    """The tools a `Read(...)` and an `Edit(...)` rule cover besides their namesakes, as the tools declare them.

    The default knows no tool but the namesakes: a policy judges other tools' calls only once it is given
    their families (`tools.base.rule_families`, handed over by the pipeline).
    """

    read: frozenset[str] = frozenset({"Read"})
    """Tools that read the files their path fields name."""
    edit: frozenset[str] = frozenset({"Edit"})
    """Tools that write the files their path fields name."""

    def covers(self, rule_tool: str, tool: str) -> bool:
        """Whether a rule naming `rule_tool` applies to a call of `tool` (`Edit` covers Write, `Read` covers Grep)."""
        if tool == rule_tool:
            return True
        return tool in (self.read if rule_tool == "Read" else self.edit if rule_tool == "Edit" else ())


_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


class RuleSyntaxError(ValueError):
    """A rule string that is not `Tool` or `Tool(specifier)`."""


@dataclass(frozen=True)
class Rule:
    """One rule as written, where it came from, and its compiled matcher."""

    text: str
    behaviour: Behaviour
    tool: str
    specifier: str | None
    source: str
    """The file (or `--flag`, environment variable) the rule came from, named in refusals."""
    base: Path
    """What a `/path` specifier is relative to: the folder of the settings file."""
    path_body: str | None = field(default=None, repr=False, compare=False)
    """The path pattern as a regex body (no anchors), matched against the path relative to its anchor."""
    anchor: Anchor = field(default="root", repr=False, compare=False)
    command_body: str | None = field(default=None, repr=False, compare=False)
    """The Bash pattern as a regex body, matched against one simple command."""

    @property
    def is_path_rule(self) -> bool:
        """Whether the rule names paths (`Edit(src/**)`) rather than a command or a whole tool."""
        return self.path_body is not None

    def covers_tool(self, tool_name: str, families: RuleFamilies) -> bool:
        """Whether the rule applies to `tool_name`, directly or through its family (`Edit` covers Write)."""
        return families.covers(self.tool, tool_name)

    def bases(self, roots: Iterable[str]) -> list[str]:
        """The folders (as strings) this rule's path pattern is relative to."""
        if self.anchor == "absolute":
            return ["/"]
        if self.anchor == "home":
            return [os.path.expanduser("~")]
        if self.anchor == "settings":
            return [str(self.base)]
        return list(roots)

    def matches_command(self, text: str) -> bool:
        """Whether one simple command (words joined by single spaces) matches (no specifier: always)."""
        if self.command_body is None:
            return self.specifier is None
        return command_regex([self.command_body]).match(text) is not None

    def __str__(self) -> str:
        return self.text


def relative(path: str, base: str) -> str | None:
    """`path` relative to `base` ("" for the base itself), or None when it is not under it; strings, for speed."""
    if base == "/":
        return path[1:]
    if path == base:
        return ""
    if path.startswith(base) and path[len(base) : len(base) + 1] == "/":
        return path[len(base) + 1 :]
    return None


@functools.lru_cache(maxsize=1024)
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source, re.S)


def path_regex(bodies: Sequence[str]) -> re.Pattern[str]:
    """One regex for several path patterns; a pattern that matches a folder matches what is under it."""
    return _compiled("^(?:" + "|".join(f"(?:{b})" for b in bodies) + ")(?:/.*)?$")


def command_regex(bodies: Sequence[str]) -> re.Pattern[str]:
    """One regex for several command patterns, each matching the whole command text."""
    return _compiled("^(?:" + "|".join(f"(?:{b})" for b in bodies) + ")$")


def parse_rule(text: str, behaviour: Behaviour, *, source: str, base: Path) -> Rule:
    """Parse one rule string.

    Raises:
        RuleSyntaxError: not `Tool` or `Tool(specifier)`, or an empty specifier.
    """
    found = _RULE.match(text)
    if found is None:
        raise RuleSyntaxError(f"{text!r} is not a rule: write `Tool` or `Tool(specifier)`, e.g. `Bash(npm test *)`")
    tool, spec = found.group(1), found.group(2)
    if spec is not None:
        spec = spec.strip()
        if spec in ("", "*", "**"):
            spec = None  # `Bash(*)`, `Read(**)`: the whole tool
    shown = text.strip()
    if spec is None:
        return Rule(shown, behaviour, tool, None, source, base)
    if tool != COMMAND_TOOL:
        anchor, pattern = _anchor_of(spec)
        body = _glob_body(pattern)
        try:  # here, not at the first call: a pattern that cannot compile would fail every decision
            path_regex([body])
        except re.error as exc:
            raise RuleSyntaxError(
                f"{text.strip()!r} is not a valid path pattern ({exc}): check its [...] ranges"
            ) from None
        return Rule(shown, behaviour, tool, spec, source, base, path_body=body, anchor=anchor)
    return Rule(shown, behaviour, tool, spec, source, base, command_body=_command_body(spec))


def _anchor_of(spec: str) -> tuple[Anchor, str]:
    if spec.startswith("//"):
        return "absolute", spec[2:]
    if spec.startswith("~/"):
        return "home", spec[2:]
    if spec.startswith("/"):
        return "settings", spec[1:]
    if spec.startswith("./"):
        return "root", spec[2:]
    body = spec.rstrip("/")
    if "/" not in body:
        return "root", "**/" + spec  # a bare name matches at any depth
    return "root", spec


def _glob_body(pattern: str) -> str:
    parts = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment(part) + ("" if last else "/"))
    return "".join(out) or ".*"


def _segment(part: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(part):
        c = part[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = part.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = part[i + 1 : end]
                negate = inner.startswith(("!", "^"))
                inner = inner[1:] if negate else inner
                out.append("[" + ("^" if negate else "") + inner.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < len(part):
            out.append(re.escape(part[i + 1]))
            i += 1
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _command_body(spec: str) -> str:
    spec = " ".join(spec.split())
    if spec.endswith(":*"):
        spec = spec[:-2].rstrip() + " *"
    bare_too = spec.endswith(" *")
    if bare_too:
        spec = spec[:-2]
    body = ".*".join(re.escape(piece) for piece in spec.split("*"))
    if bare_too:
        body += "(?: .*)?"
    return body


def literal_prefix(rule: Rule, roots: Iterable[str]) -> list[str]:
    """The folders (absolute) below which every path `rule` matches lies: `src/**/*.py` at each root is `<root>/src`."""
    if rule.specifier is None or rule.path_body is None:
        return ["/"]
    _, pattern = _anchor_of(rule.specifier)
    literal: list[str] = []
    for part in pattern.strip("/").split("/"):
        if part in ("", "."):
            continue
        if any(c in part for c in "*?[\\"):
            break
        literal.append(part)
    tail = "/".join(literal)
    return [os.path.normpath(f"{base}/{tail}") if tail else base for base in rule.bases(roots)]
