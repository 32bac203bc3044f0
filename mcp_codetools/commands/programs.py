"""xargs and find in one table each: what their options take, which only read, which run or write.

The read-only list, the wrapper reading ("what does it run?") and the operand table ("what does it write?")
all read these entries, so teaching the server an option of xargs or find is one edit here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a program that runs another."""

    takes: str
    """"value" (the rest of the word, else the next word), "optional" (only the rest of the word or after
    `=`: the next word is never its value) or "flag"."""
    read_only: bool = True
    """A command with it may still be read-only (it neither prompts nor changes what runs)."""


def _options(takes: str, names: str, *, read_only: bool = True) -> dict[str, Option]:
    return dict.fromkeys(names.split(), Option(takes, read_only))


XARGS: dict[str, Option] = {
    **_options("value", "-I -L -n -P -s -d -E -a --max-args --max-procs --max-chars --delimiter --arg-file"),
    **_options("value", "--process-slot-var", read_only=False),
    **_options("optional", "-i -l -e --replace --max-lines --eof"),  # `--replace rm x` runs rm
    **_options("flag", "-0 -r -t -x --null --no-run-if-empty --verbose --exit"),
    **_options("flag", "-p -o --interactive --open-tty --show-limits", read_only=False),
}
"""xargs's options (GNU). Long options are matched whole: an abbreviation is not known (it fails closed)."""

FIND_RUNS = ("-exec", "-execdir", "-ok", "-okdir")
"""find's actions that run a command (`-exec CMD {} ;`); `-execdir` and `-okdir` in each match's folder."""
FIND_WRITES = ("-fprint", "-fprint0", "-fprintf", "-fls")
"""find's actions that write the file named after them."""
FIND_DELETES = "-delete"
"""Removes what it finds under the start folders."""
FIND_ACTIONS = frozenset({*FIND_RUNS, *FIND_WRITES, FIND_DELETES})
"""find's actions that change files or run programs: never read-only. Matched whole (find takes no abbreviation)."""
