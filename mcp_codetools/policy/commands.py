"""A Bash command seen as permission rules see it: the simple commands it runs and the files it redirects to.

Every simple command anywhere in the parse tree counts (after `&&`, `||`, `;`, `|`, newlines, inside
subshells, `$(…)`, loops and functions), so `npm test && rm -rf /` is two commands, not one that starts
with `npm test`. Rules match a command's words joined by single spaces, quotes removed. For deny and ask
rules the command is also matched with `VAR=` prefixes and wrappers (`timeout 5`, `nice -n 10`, …)
stripped, so a wrapper cannot carry a denied command past its rule.

When the command cannot be parsed, `complete` is False: nothing may then be allowed on the strength of
its parts, and deny and ask rules are matched against the raw text as well.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp_codetools.shell.classify import MAX_PARSED_CHARS, scan_word

WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    # name: (options that take a value, positional arguments before the command)
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "nohup": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "command": (frozenset(), 0),
}
"""Commands that run the rest of their arguments as a command."""

_TIME_KEYWORD = re.compile(r"(^|[;&|(\n]\s*|[;&|(\n]\s*!\s*)time(?:\s+-p)?(?=\s)")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_WRITING_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: its words as bash would pass them, without leading assignments."""

    words: tuple[str, ...]
    assignments: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The words joined by spaces: what a `Bash(...)` rule's pattern is matched against."""
        return " ".join(self.words)

    def unwrapped(self) -> SimpleCommand:
        """The command a wrapper runs (`timeout 5 rm x` → `rm x`), repeatedly; itself when not wrapped."""
        if not self.words or self.words[0] not in WRAPPERS:
            return self
        return SimpleCommand(_unwrap(self.words))


@functools.lru_cache(maxsize=512)
def _unwrap(words_in: tuple[str, ...]) -> tuple[str, ...]:
    words = list(words_in)
    while words and words[0] in WRAPPERS:
        value_options, positionals = WRAPPERS[words[0]]
        i = 1
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            if words[i] == "--":
                i += 1
                break
            option = words[i].split("=", 1)[0]
            i += 2 if option in value_options and "=" not in words[i] and not _attached(words[i]) else 1
        i += positionals
        if i >= len(words):
            break
        words = words[i:]
    return tuple(words)


def _attached(word: str) -> bool:
    """`-n10` carries its value; `-n` takes the next word."""
    return len(word) > 2 and not word.startswith("--")


@dataclass(frozen=True, slots=True)
class CommandParts:
    """Everything a command line runs and writes, as far as the parse tells."""

    commands: tuple[SimpleCommand, ...]
    write_targets: tuple[str, ...]
    complete: bool
    """False when parts of the command could not be seen (a parse error, an expansion that names a command)."""
    notes: tuple[str, ...] = field(default=())


def split_command(command: str) -> CommandParts:
    """The simple commands and write targets of a command line; a huge one is not parsed and counts as incomplete."""
    if len(command) > MAX_PARSED_CHARS:  # not parsed, and not cached: the cache would keep it alive
        return _TOO_LONG
    return _split_command(command)


_TOO_LONG = CommandParts((), (), False, ("too long to analyse",))


@functools.lru_cache(maxsize=256)
def _split_command(command: str) -> CommandParts:
    if not command.strip():
        return CommandParts((), (), True)
    import bashlex

    # bashlex does not parse the `time` keyword; blanking it (same length, so positions hold) loses nothing
    source = _TIME_KEYWORD.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), command)
    try:
        trees = bashlex.parse(source)
    except Exception as exc:  # bashlex raises several kinds on input it does not handle
        return CommandParts((), (), False, (f"not parsed ({type(exc).__name__})",))
    walk = _Walk(source)
    for tree in trees:
        walk.visit(tree)
    return CommandParts(tuple(walk.commands), tuple(walk.targets), walk.complete, tuple(walk.notes))


class _Walk:
    def __init__(self, source: str) -> None:
        self.source = source
        self.commands: list[SimpleCommand] = []
        self.targets: list[str] = []
        self.complete = True
        self.notes: list[str] = []

    def visit(self, node: Any) -> None:
        kind = node.kind
        if kind == "command":
            self._command(node)
            return
        if kind == "redirect":
            self._redirect(node)
            return
        for child in _children(node):
            self.visit(child)

    def _command(self, node: Any) -> None:
        words: list[str] = []
        assignments: list[str] = []
        for part in node.parts:
            if part.kind == "assignment" and not words:
                assignments.append(self._text(part))
            elif part.kind == "word":
                word = scan_word(self._text(part))
                if not words and word.expands:
                    self.complete = False  # `$CMD args`: what runs is not in the text
                    self.notes.append("the command name is an expansion")
                words.append(word.text)
            elif part.kind == "redirect":
                self._redirect(part)
            for inner in _children(part):
                if part.kind != "redirect":
                    self.visit(inner)
        if not words:
            return
        simple = SimpleCommand(tuple(words), tuple(assignments))
        self.commands.append(simple)
        self._nested(simple.unwrapped().words)

    def _nested(self, words: tuple[str, ...]) -> None:
        """`bash -c '…'` and `eval …` run their argument as a command line: split it too."""
        script: str | None = None
        if words and words[0] == "eval":
            script = " ".join(words[1:])
        elif len(words) >= 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] == "-c":
            script = words[2]
        if script is None:
            return
        inner = split_command(script)
        self.commands.extend(inner.commands)
        self.targets.extend(inner.write_targets)
        if not inner.complete:
            self.complete = False
            self.notes.extend(inner.notes)

    def _redirect(self, node: Any) -> None:
        target = node.output
        if node.type in _WRITING_REDIRECTS and not isinstance(target, int | str):
            text = scan_word(self._text(target)).text
            if text != "/dev/null" and not text.isdigit() and text != "-":
                self.targets.append(text)
        if not isinstance(target, int | str):
            for inner in _children(target):
                self.visit(inner)

    def _text(self, node: Any) -> str:
        start, end = node.pos
        return self.source[start:end]


def _children(node: Any) -> Iterator[Any]:
    for name in ("parts", "list", "command"):
        child = getattr(node, name, None)
        if isinstance(child, list):
            yield from child
        elif child is not None and hasattr(child, "kind"):
            yield child
