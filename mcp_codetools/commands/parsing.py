"""One bashlex parse per command line, shared by the read-only classifier and the permission rules.

bashlex does not parse two common forms, which are rewritten first at the same length (so every node's
position still points into the text the caller sees): the `time` keyword is blanked (it only times
what follows), and a quoted here-document delimiter (`<<'EOF'`) is unquoted, its position remembered
(a quoted delimiter means the body is not expanded).

A line of plain words (`echo hi`, `git status --short`: letters, digits and `_./,:@%+=-`, one space apart,
no reserved word first) has the tree bashlex would build, built here directly: bashlex's LR parser costs
about 0.3 ms even for two words, and these are most of a session's commands. `tests/test_parsing.py` holds
the two trees equal over generated lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mcp_codetools.commands.bashlex_load import load

_TIME_KEYWORD = re.compile(r"(^|[;&|(\n]\s*|[;&|(\n]\s*!\s*)time(?:\s+-p)?(?=\s)")
_QUOTED_HEREDOC = re.compile(r"(?<!<)<<(-?)[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\(\w+))")
_PLAIN_WORDS = re.compile(r"[A-Za-z0-9_./,:@%+-]+(?: [A-Za-z0-9_./,:@%+=-]+)*")
"""Words bash takes as they are: nothing quoted, expanded, globbed or redirected, and no `=` in the first
(an assignment there). A word in command position could still be a reserved word: see `_RESERVED`."""
_RESERVED = frozenset("if then else elif fi case esac for select while until do done in function time coproc".split())


@dataclass(frozen=True, slots=True)
class Parsed:
    """A command line's parse trees, or why it has none."""

    source: str
    """The text the trees' positions point into (the command, rewritten as above)."""
    trees: tuple[Any, ...]
    error: str | None
    """The exception's class name when bashlex could not parse it."""
    quoted_heredocs: frozenset[int]
    """Where a here-document with a quoted delimiter starts (the position of its `<<`)."""
    timed: bool = False
    """A `time` keyword was blanked."""


def parse(command: str) -> Parsed:
    """Parse `command` (once per call: `commands.analysis` shares the result between the classifier and the rules)."""
    bashlex = load()  # its tables read from this package (bashlex builds them, 0.25-0.35 s, when they do not fit)

    if _PLAIN_WORDS.fullmatch(command) and command.partition(" ")[0] not in _RESERVED:
        return Parsed(command, (_plain_command(command),), None, frozenset())
    source = _TIME_KEYWORD.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), command)
    quoted: set[int] = set()

    def unquote(match: re.Match[str]) -> str:
        quoted.add(match.start())
        text = f"<<{match.group(1)}{match.group(2) or match.group(3) or match.group(4)}"
        return text + " " * (len(match.group(0)) - len(text))

    timed = source != command
    source = _QUOTED_HEREDOC.sub(unquote, source)
    try:
        trees = tuple(bashlex.parse(source))
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError, AttributeError, ...
        return Parsed(source, (), type(exc).__name__, frozenset(quoted), timed)
    return Parsed(source, trees, None, frozenset(quoted), timed)


def _plain_command(command: str) -> Any:
    """The tree bashlex builds for a line of plain words: a command node holding one word node per word."""
    from bashlex import ast

    words = []
    start = 0
    for text in command.split(" "):
        words.append(ast.node(kind="word", word=text, pos=(start, start + len(text)), parts=[]))
        start += len(text) + 1
    return ast.node(kind="command", parts=words, pos=(0, len(command)))
