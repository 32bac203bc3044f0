"""What one command reads and writes, as the operand tables collect it, and the word-level helpers they share."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(slots=True)
class Files:
    """Paths as the command names them (relative to its folder, `~` not expanded)."""

    reads: list[str] = field(default_factory=list)
    trees: list[str] = field(default_factory=list)
    """Folders read with everything under them (`grep -r`, `rg`, `cp -r`, `tar -c`)."""
    writes: list[str] = field(default_factory=list)
    unknown_writes: list[str | None] = field(default_factory=list)
    """Folders under which the command writes files it does not name (None: anywhere)."""
    unknown_reads: list[str | None] = field(default_factory=list)
    config: list[str] = field(default_factory=list)
    """Why the command changes git's configuration (a protected write)."""
    glob_reads: list[str] = field(default_factory=list)
    """Operands bash replaces with the file names they match (`cat .en*`): read, matched on disk."""
    glob_writes: list[str] = field(default_factory=list)
    visible_trees: list[str] = field(default_factory=list)
    """Folders read whole except for hidden names (`rg`, `ag` without `--hidden`)."""
    unseen_writes: list[str] = field(default_factory=list)
    """Why the command may write files it does not name anywhere (`git checkout BRANCH`, `git pull`)."""
    top_writes: list[tuple[str, str]] = field(default_factory=list)
    """(folder, name): `name` written relative to the repository's top, which is that folder or one above it."""


def option_values(
    words: Sequence[str], values: frozenset[str] = frozenset()
) -> tuple[list[str], list[tuple[str, str]]]:
    """Plain operands, and (option, value) pairs (`--file=x` or `-f x` when `-f` is in `values`).

    A long option of `values` counts by any prefix (`--outp=F` is `--output=F`).
    """
    found: list[str] = []
    options: list[tuple[str, str]] = []
    i = 0
    ended = False
    while i < len(words):
        word = words[i]
        if ended or word == "-" or not word.startswith("-"):
            found.append(word)
        elif word == "--":
            ended = True
        elif word.startswith("--") and "=" in word:
            key, _, value = word.partition("=")
            options.extend((name, value) for name in _spelled(key, values) or [key])
        elif word in values:
            if i + 1 < len(words):
                options.append((word, words[i + 1]))
            i += 1
        elif word.startswith("--") and _spelled(word, values):
            if i + 1 < len(words):  # a prefix (`--outp F`): its value, and an operand too if it was a flag
                options.extend((name, words[i + 1]) for name in _spelled(word, values))
        elif not word.startswith("--"):
            for pos in range(1, len(word)):  # a cluster: `-qc CMD`, `-n5`
                if "-" + word[pos] in values:
                    if pos + 1 < len(word):
                        options.append(("-" + word[pos], word[pos + 1 :]))
                    elif i + 1 < len(words):
                        options.append(("-" + word[pos], words[i + 1]))
                        i += 1
                    break
        i += 1
    return found, options


def _spelled(key: str, values: frozenset[str]) -> list[str]:
    """The long options of `values` that `key` spells out: itself, or every one it is a prefix of.

    getopt_long takes an unambiguous prefix; an ambiguous one counts as each, which only counts more files.
    """
    if key in values:
        return [key]
    if len(key) < 3:
        return []
    return sorted(name for name in values if name.startswith("--") and name.startswith(key))


def option_letters(words: Sequence[str]) -> set[str]:
    """Short option letters given (clusters split); long options as they are."""
    found: set[str] = set()
    for word in words:
        if word.startswith("--"):
            found.add(word.partition("=")[0])
        elif word.startswith("-") and len(word) > 1:
            found.update("-" + c for c in word[1:])
    return found


def literal_folder(word: str) -> str | None:
    """The folder a word whose text is not known certainly lies under: `src/$X` is under `src`; `$D/a` anywhere."""
    if re.match(r"~[+-]|~\d", word):
        return None  # `~+/src`: the current folder, or one on the stack
    cut = min((word.find(c) for c in "$`*?[{" if c in word), default=len(word))
    prefix = word[:cut]
    if "/" not in prefix:
        return None if cut == 0 or prefix.startswith("~") else ""
    return prefix.rsplit("/", 1)[0] or "/"


def strip_level(options: list[tuple[str, str]]) -> int | None:
    """The `-p`/`--strip` level given (None: not given, or not a number: every level counts)."""
    value = next((value for key, value in reversed(options) if key in ("-p", "--strip")), None)
    return int(value) if value is not None and value.isdigit() else None  # None: every level counts


def joined(folder: str, path: str) -> str:
    """`path` under `folder`, unless it is absolute or under `~`."""
    return path if not folder or path.startswith(("/", "~")) else f"{folder.rstrip('/')}/{path}"


def url_name(url: str) -> str:
    """The file name a download of `url` gets (its last path part)."""
    path = url.split("://", 1)[1].split("?", 1)[0].split("#", 1)[0].partition("/")[2]
    return path.rstrip("/").rsplit("/", 1)[-1] or "index.html"
