"""A reading of a command (what it runs, as rules see it) and how wrappers' options are read before the command.

`parse_options` reads a wrapper's options with its `Spec`: an option the spec does not know is read both as
a flag and as an option taking a value, so an unknown option cannot hide the command it runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_READINGS = 24
"""Readings kept for one simple command; past it the command counts as unknown (asked about)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """One way to read what a command runs: its words, and from which word on they are unknown."""

    words: tuple[str, ...]
    open_from: int | None = None
    """Index of the first word whose text is not known (an expansion, input xargs appends); None: all known."""
    chdir: str | None = ""
    """The folder it runs in, relative to the command's own ("" the same, None not known: `env -C $D`)."""

    @property
    def text(self) -> str:
        """The words joined by single spaces: what a `Bash(...)` pattern is matched against."""
        return " ".join(self.words)


@dataclass(slots=True)
class Readings:
    """Everything `readings` found for one simple command."""

    readings: list[Reading] = field(default_factory=list)
    scripts: list[str | None] = field(default_factory=list)
    """Command lines the command runs as text (None: a command line whose text is not known)."""
    program_config: list[str] = field(default_factory=list)
    """Why the command makes git run a program or change its config (`-c core.hooksPath=…`): asked about."""
    guesses: list[Reading] = field(default_factory=list)
    """What an unknown program may run (`prlimit git push`): each later word read as a command, open after it.

    Not what rules match (that would deny `mytool --name git push`), only what could make one apply: asked.
    """


@dataclass(frozen=True, slots=True)
class Spec:
    """How a wrapper reads its options before the command it runs."""

    values: frozenset[str] = frozenset()
    """Options whose value follows (`-n 5`, `-n5`, `--adjustment=5`, `--adjustment 5`)."""
    flags: frozenset[str] = frozenset()
    positionals: int = 0
    """Words between the options and the command (`timeout 5 cmd`, `flock FILE cmd`)."""
    scripts: frozenset[str] = frozenset()
    """Options whose value is a command line (`script -c '…'`, `su -c '…'`)."""
    chdir: frozenset[str] = frozenset()
    """Options whose value is the folder the command runs in (`env -C dir`, `sudo -D dir`)."""
    stops: frozenset[str] = frozenset()
    """Options after which nothing runs (`command -v`, `sudo -l`)."""
    assignments: bool = False
    """`NAME=value` words may stand before the command (env, sudo)."""
    joined: bool = False
    """The rest is joined into one command line and run by a shell (watch)."""
    numeric: bool = False
    """A word of digits after a dash is an option (`nice -10`)."""


def spec(
    values: str = "",
    flags: str = "",
    positionals: int = 0,
    scripts: str = "",
    chdir: str = "",
    stops: str = "",
    **kwargs: bool,
) -> Spec:
    """A `Spec` from space-separated option lists."""
    return Spec(
        frozenset(values.split()),
        frozenset(flags.split()),
        positionals,
        frozenset(scripts.split()),
        frozenset(chdir.split()),
        frozenset(stops.split()),
        **kwargs,
    )


NAME_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


Add = Callable[[Reading], None]


def basename(word: str) -> str:
    """The program a path names: `/usr/bin/git` and `./git` are `git`."""
    return word.rsplit("/", 1)[-1] if "/" in word else word


def open_from(known: tuple[bool, ...]) -> int | None:
    """Index of the first word whose text is not known, or None."""
    return next((i for i, k in enumerate(known) if not k), None)


def join(chdir: str | None, folder: str | None) -> str | None:
    """`folder` seen from `chdir` (None when either is not known)."""
    if chdir is None or folder is None:
        return None
    if not folder:
        return chdir
    if folder.startswith("/") or not chdir:
        return folder
    return f"{chdir}/{folder}"


def parse_options(
    spec: Spec, args: tuple[str, ...], known: tuple[bool, ...]
) -> list[tuple[int | None, list[str | None], str | None]]:
    """The readings of a wrapper's options: (index of the command or None, command lines, folder) each.

    An option the spec does not know is read both as a flag and as an option taking a value.
    """
    results: list[tuple[int | None, list[str | None], str | None]] = []

    def value_at(i: int) -> tuple[str | None, int]:
        if i >= len(args):
            return None, i
        return (args[i] if known[i] else None), i + 1

    def finish(i: int, scripts: list[str | None], folder: str | None) -> None:
        start = i
        if spec.assignments:
            while start < len(args) and known[start] and NAME_VALUE.match(args[start]):
                start += 1
        start += spec.positionals
        results.append((start if start < len(args) else None, scripts, folder))

    def walk(i: int, pos: int, scripts: list[str | None], folder: str | None) -> None:
        """Read from word `i`; `pos` > 0: from that letter of a short-option cluster."""
        while len(results) < MAX_READINGS:
            if i >= len(args):
                finish(i, scripts, folder)
                return
            word = args[i]
            if pos:
                if pos >= len(word):
                    i, pos = i + 1, 0
                    continue
                opt = "-" + word[pos]
                if opt in spec.stops:
                    results.append((None, scripts, folder))
                    return
                kind = option_kind(spec, opt)
                if kind == "flag":
                    pos += 1
                    continue
                if kind == "unknown":
                    walk(i, pos + 1, list(scripts), folder)  # read as a flag
                value, nxt = (word[pos + 1 :], i + 1) if pos + 1 < len(word) else value_at(i + 1)
                scripts, folder = option_taken(spec, opt, value, scripts, folder)
                i, pos = nxt, 0
                continue
            if not known[i]:
                results.append((i, scripts, folder))  # an unknown word: the reading is open from here
                return
            if word == "--":
                finish(i + 1, scripts, folder)
                return
            if spec.numeric and re.fullmatch(r"-\d+", word):
                i += 1
                continue
            if not word.startswith("-") or word == "-":
                finish(i, scripts, folder)
                return
            if not word.startswith("--"):
                pos = 1
                continue
            key, eq, attached = word.partition("=")
            if key in spec.stops:
                results.append((None, scripts, folder))
                return
            kind = option_kind(spec, key)
            if kind == "flag" or (kind == "unknown" and eq):
                i += 1
                continue
            if kind == "unknown":
                walk(i + 1, 0, list(scripts), folder)  # read as a flag
            value, nxt = (attached, i + 1) if eq else value_at(i + 1)
            scripts, folder = option_taken(spec, key, value, scripts, folder)
            i = nxt

    walk(0, 0, [], "")
    return results


def option_kind(spec: Spec, option: str) -> str:
    """How `spec` reads `option`: "flag", "value" or "unknown"."""
    if option in spec.flags:
        return "flag"
    if option in spec.values or option in spec.scripts or option in spec.chdir:
        return "value"
    return "unknown"


def option_taken(
    spec: Spec, option: str, value: str | None, scripts: list[str | None], folder: str | None
) -> tuple[list[str | None], str | None]:
    """The command lines and folder after `option` with `value` was read."""
    if option in spec.scripts:  # env -S 'cmd args' splits its string into words: read as a command line too
        scripts = [*scripts, value]
    elif option in spec.chdir:
        folder = None if value is None else join(folder, value)
    return scripts, folder
