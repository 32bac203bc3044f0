"""
Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`.

Path specifiers (Read, Edit and the tools they cover) are gitignore-style globs with anchors:

- `//abs/path`: an absolute path on this machine;
- `~/path`: under the home folder;
- `/path`: relative to the base of the settings file the rule came from;
- `./path` or `path`: relative to a workspace root; a bare name without a slash matches at any depth
  (`Read(.env)` is `Read(**/.env)`), as in .gitignore.

A pattern that matches a folder covers everything under it. Bash specifiers match a simple command's
words joined by single spaces: `*` matches any text, a trailing ` *` also matches the bare command
(`Bash(ls *)` matches `ls` and `ls -la`, not `lsof`), and the legacy `Bash(npm run test:*)` means
`Bash(npm run test *)`. Any other tool matches by name only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Behaviour = Literal["allow", "deny", "ask"]

READ_TOOLS = frozenset({"Read", "Grep", "Glob"})
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "FileHistory"})
RULE_FAMILIES: dict[str, frozenset[str]] = {"Read": READ_TOOLS, "Edit": EDIT_TOOLS}
"""A `Read(...)` rule covers every tool that reads files; an `Edit(...)` rule every tool that writes them."""

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
    _path: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    _anchor: str = field(default="root", repr=False, compare=False)
    _command: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @property
    def is_path_rule(self) -> bool:
        return self._path is not None

    def covers_tool(self, tool_name: str) -> bool:
        return tool_name == self.tool or tool_name in RULE_FAMILIES.get(self.tool, ())

    def matches_path(self, path: Path, roots: Iterable[Path]) -> bool:
        """Whether an absolute, normalised `path` falls under this rule's pattern (no specifier: always)."""
        if self._path is None:
            return self.specifier is None
        for base in self._bases(roots):
            if path == base:
                rel = ""
            elif path.is_relative_to(base):
                rel = path.relative_to(base).as_posix()
            else:
                continue
            if self._path.match(rel):
                return True
        return False

    def matches_command(self, text: str) -> bool:
        """Whether one simple command (words joined by single spaces) matches (no specifier: always)."""
        if self._command is None:
            return self.specifier is None
        return self._command.match(text) is not None

    def _bases(self, roots: Iterable[Path]) -> list[Path]:
        if self._anchor == "absolute":
            return [Path("/")]
        if self._anchor == "home":
            return [Path(os.path.expanduser("~"))]
        if self._anchor == "settings":
            return [self.base]
        return list(roots)

    def __str__(self) -> str:
        return self.text


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
    if tool in RULE_FAMILIES or tool in READ_TOOLS or tool in EDIT_TOOLS:
        anchor, pattern = _anchor_of(spec)
        return Rule(shown, behaviour, tool, spec, source, base, _path=_glob_regex(pattern), _anchor=anchor)
    if tool == "Bash":
        return Rule(shown, behaviour, tool, spec, source, base, _command=_command_regex(spec))
    return Rule(shown, behaviour, tool, spec, source, base, _command=_command_regex(spec))


def _anchor_of(spec: str) -> tuple[str, str]:
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


def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment(part) + ("" if last else "/"))
    body = "".join(out)
    return re.compile(f"^{body}(?:/.*)?$" if body else "^.*$", re.S)


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


def _command_regex(spec: str) -> re.Pattern[str]:
    spec = " ".join(spec.split())
    if spec.endswith(":*"):
        spec = spec[:-2].rstrip() + " *"
    bare_too = spec.endswith(" *")
    if bare_too:
        spec = spec[:-2]
    body = ".*".join(re.escape(piece) for piece in spec.split("*"))
    if bare_too:
        body += "(?: .*)?"
    return re.compile(f"^{body}$", re.S)
