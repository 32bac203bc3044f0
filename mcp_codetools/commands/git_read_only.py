"""Is `git …` read-only? Read from git's table (`commands.git`): global options, then the subcommand's entry."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_codetools.commands import git
from mcp_codetools.commands.checks import (
    Check,
    both,
    first_operand_in,
    operands,
    option_hit,
    subcommands,
    texts,
    without,
)
from mcp_codetools.commands.words import Word


def global_end(args: Sequence[str]) -> int:
    """Index of the subcommand, or -1 for a global option that could change what git runs (`-c`, `--exec-path`).

    git matches its global options whole, so these are compared whole too.
    """
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            return i
        key, equals, _ = arg.partition("=")
        option = git.GLOBALS.get(key if key.startswith("--") else arg)
        if option is None or not option.read_only:
            return -1
        i += 2 if option.value and not equals else 1
    return i


def _listing(forbidden: Check) -> Check:
    """git branch/tag: operands create things unless a listing option is present (then they are patterns)."""

    def rule(args: Sequence[Word]) -> str:
        problem = forbidden(args)
        if problem:
            return problem
        words = texts(args)
        if operands(words) and not any(a.split("=", 1)[0] in git.LIST_MODE for a in words):
            return "a name without --list creates it"
        return ""

    return rule


def _config(args: Sequence[Word]) -> str:
    words = texts(args)
    if any(arg.glob for arg in args):
        return "a glob may shift git config's arguments"
    writes = any(a in git.CONFIG_VERBS or option_hit(a, git.CONFIG_WRITING, "e", "") for a in words)
    if writes or not any(a in git.CONFIG_READING for a in words):
        return "git config without --get/--list may write"
    return ""


def _rule(sub: str, entry: git.Subcommand) -> Check:
    """The check one entry gives: no option that writes, runs or changes; a read-only verb; a listing."""
    check = without(
        *entry.writes,
        *entry.runs,
        *entry.changes,
        short=entry.runs_short + entry.changes_short,
        short_values=entry.short_values,
    )
    if entry.listing:
        check = _listing(check)
    if entry.verbs is not None:
        check = both(check, first_operand_in(*entry.verbs, default_ok=entry.bare))
    if sub == "config":
        check = both(check, _config)
    return check


GIT: Check = subcommands({sub: _rule(sub, entry) for sub, entry in git.READ_ONLY.items()}, global_check=global_end)
"""The read-only check of `git ARGS`."""
