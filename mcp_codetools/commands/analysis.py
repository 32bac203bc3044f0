"""One analysis per Bash call: the parse, the read-only verdict and the parts, built once off the event loop.

`BashTool.classify` builds a `CommandAnalysis` (in a worker thread unless the command is short and the
parser warm) and keeps it with the call's arguments; the dispatcher's safety decision, plan mode, the
policy engine (through `CallFacts.analysis`) and the call read that value, so a command is parsed once per
call. Between calls, the analyses of the last `CACHE_SIZE` short command lines are kept: the same text always
gets the same analysis, since it is a function of the text alone (bashlex's tables and ours are fixed at import;
no file, folder, environment or setting is read), and every part of it is frozen, so no call can change what
another reads. A session repeats its commands, and `echo hi` back to back paid 0.1-0.3 ms a call (by load) for
the same value (issue 38; issue 36 had removed the earlier caches of intermediate forms, parse trees included).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mcp_codetools.commands import classify, parts
from mcp_codetools.commands.classify import MAX_PARSED_CHARS, Analysis
from mcp_codetools.commands.parsing import parse
from mcp_codetools.commands.parts import CommandParts


@dataclass(frozen=True, slots=True)
class CommandAnalysis:
    """What the server knows about one command line: built once per line (kept for a repeat), read by every step."""

    command: str
    verdict: Analysis
    """Read-only or not, why not, and the command whose status is the line's."""
    parts: CommandParts
    """Every simple command with what it runs through wrappers, and the files read and written (with where)."""

    @property
    def read_only(self) -> bool:
        """Whether every part only reads."""
        return self.verdict.read_only


CACHE_SIZE = 256
CACHED_MAX_CHARS = 1024
"""Longer lines are analysed at every call: rarely repeated, and they would make the cache's memory unbounded."""


def analyse(command: str) -> CommandAnalysis:
    """Parse `command` once and derive the verdict and the parts from that parse (slow: run it off the loop).

    An empty command and one over `MAX_PARSED_CHARS` are not parsed: both readers answer those without a tree.
    A line of at most `CACHED_MAX_CHARS` analysed lately is not analysed again (module docstring).
    """
    if len(command) <= CACHED_MAX_CHARS and type(command) is str:  # a subclass could compare equal to another text
        return _kept(command)
    return _analysis(command)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _kept(command: str) -> CommandAnalysis:
    return _analysis(command)


def _analysis(command: str) -> CommandAnalysis:
    parsed = parse(command) if command.strip() and len(command) <= MAX_PARSED_CHARS else None
    return CommandAnalysis(command, classify.analyze(command, parsed), parts.split_command(command, parsed))
