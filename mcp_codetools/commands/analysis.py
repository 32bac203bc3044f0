"""One analysis per Bash call: the parse, the read-only verdict and the parts, built once off the event loop.

`BashTool.classify` builds a `CommandAnalysis` (in a worker thread unless the command is short and the
parser warm) and keeps it with the call's arguments; the dispatcher's safety decision, plan mode, the
policy engine (through `CallFacts.analysis`) and the call read that value, so a command is parsed once per
call. Nothing is remembered between calls: the value lives as long as the call.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_codetools.commands import classify, parts
from mcp_codetools.commands.classify import MAX_PARSED_CHARS, Analysis
from mcp_codetools.commands.parsing import parse
from mcp_codetools.commands.parts import CommandParts


@dataclass(frozen=True, slots=True)
class CommandAnalysis:
    """What the server knows about one command line, built once per call."""

    command: str
    verdict: Analysis
    """Read-only or not, why not, and the command whose status is the line's."""
    parts: CommandParts
    """Every simple command with what it runs through wrappers, and the files read and written (with where)."""

    @property
    def read_only(self) -> bool:
        """Whether every part only reads."""
        return self.verdict.read_only


def analyse(command: str) -> CommandAnalysis:
    """Parse `command` once and derive the verdict and the parts from that parse (slow: run it off the loop).

    An empty command and one over `MAX_PARSED_CHARS` are not parsed: both readers answer those without a tree.
    """
    parsed = parse(command) if command.strip() and len(command) <= MAX_PARSED_CHARS else None
    return CommandAnalysis(command, classify.analyze(command, parsed), parts.split_command(command, parsed))
