"""One analysis per Bash call: the parse, the read-only verdict and the parts, built once off the event loop.

`BashTool.classify` builds a `CommandAnalysis` in a worker thread; the dispatcher's safety decision, plan
mode, the policy engine and the call read that value, so a command is parsed at most once per call; the
analyses of recent commands are remembered whole (one cache of frozen values, no parse trees). The engine
reads `CallFacts.command` as text: the Bash tool hands it an `AnalysedCommand`, the same text carrying its
analysis, and `split_command` here takes the parts from it instead of parsing again.
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
    """The analysis of `command` (slow on a first sight: run it off the loop)."""
    if len(command) > MAX_PARSED_CHARS:  # not parsed, and not remembered
        return CommandAnalysis(command, classify.analyze(command), parts.split_command(command))
    return _remembered(command)


@functools.lru_cache(maxsize=256)
def _remembered(command: str) -> CommandAnalysis:
    """Parse `command` once and derive the verdict and the parts from that parse.

    Remembered by text, as a whole: a session repeats its commands (`git status`, `echo hi` in the benchmark),
    and parsing again costs 1-2 ms a call (measured, busy machine). The value is frozen and holds no parse tree.
    """
    parsed = parse(command) if command.strip() else None
    return CommandAnalysis(command, classify.analyze(command, parsed), parts.split_command(command, parsed))


class AnalysedCommand(str):
    """A command's text that carries its analysis (for readers that take the text, such as `CallFacts`)."""

    analysis: CommandAnalysis

    def __new__(cls, analysis: CommandAnalysis) -> AnalysedCommand:  # noqa: D102
        text = super().__new__(cls, analysis.command)
        text.analysis = analysis
        return text


def split_command(command: str) -> CommandParts:
    """The parts of `command`: its analysis's when it carries one, else parsed now."""
    if isinstance(command, AnalysedCommand):
        return command.analysis.parts
    return parts.split_command(command)
