"""The read-only list against the installed programs: every long option whose name says it may write or run
is refused by the program's check, or named here as one that only reads.

`<program> --help` lists the options this machine's version knows; a new version that grows one (`sort
--output`, `rg --pre`, `date --set`) fails here until the read-only list (`commands.read_only`) places it.
git's subcommands have their own check (tests/test_git_table.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_codetools.commands import archives, programs
from mcp_codetools.commands.analysis import analyse
from mcp_codetools.commands.classify import analyze

_LOOKS_ACTIVE = re.compile(r"out|file|exec|^--pre$|compress|command|write|delete|^--set$|kill|diag|hostname|preserve")
_LONG = re.compile(r"(?:^|[\s,\[])(--[a-z][-a-z0-9]*)")

ONLY_READ: dict[str, frozenset[str]] = {
    "sort": frozenset({"--files0-from"}),
    "file": frozenset({"--files-from", "--magic-file", "--uncompress", "--uncompress-noreport", "--special-files",
                       "--checking-printout"}),
    "date": frozenset({"--file"}),
    "xargs": frozenset({"--arg-file"}),
    "rg": frozenset({"--file", "--files", "--files-with-matches", "--files-without-match", "--ignore-file",
                     "--ignore-file-case-insensitive", "--ignore-files", "--max-filesize", "--no-filename",
                     "--no-ignore-file-case-insensitive", "--no-ignore-files", "--no-one-file-system", "--no-pre",
                     "--no-sort-files", "--one-file-system", "--sort-files", "--with-filename", "--pre-glob",
                     "--byte-offset", "--no-byte-offset", "--max-columns-preview", "--no-max-columns-preview"}),
    "tree": frozenset({"--fromfile", "--filelimit", "--filesfirst", "--infile"}),
    "fd": frozenset({"--ignore-file", "--exclude", "--no-ignore-vcs"}),
    "ss": frozenset({"--kill"}),  # refused by the entry: it changes sockets, it writes no file
    "uniq": frozenset(),
    "time": frozenset(),
    "strace": frozenset({"--output-append-mode", "--output-separately", "--seccomp-bpf"}),  # how -o's file is written
    "ltrace": frozenset(),
}  # fmt: skip
"""Per program, the options whose name looks active but that only read (or only choose what is printed)."""


def _program(name: str) -> str | None:
    return shutil.which(name, path=f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin")


@pytest.mark.parametrize("name", sorted(ONLY_READ))
def test_every_active_looking_option_is_refused_or_known_to_read(name: str) -> None:
    program = _program(name)
    if program is None:
        pytest.skip(f"{name} is not installed")
    done = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    listed = set(_LONG.findall(done.stdout + done.stderr))
    unplaced = sorted(
        option
        for option in listed
        if _LOOKS_ACTIVE.search(option)
        and option not in ONLY_READ[name]
        and analyze(f"{name} {option}=x a.txt").read_only
        and analyze(f"{name} {option} x a.txt").read_only
    )
    assert not unplaced, f"{name} --help lists options the read-only list lets through: {unplaced}"


def test_the_check_catches_an_option_the_list_lets_through() -> None:
    """The harness itself: an option the list has no rule for would be reported."""
    assert _LOOKS_ACTIVE.search("--output") and analyze("cat --output=x a.txt").read_only
    assert not analyze("sort --output=x a.txt").read_only and not analyze("file --preserve-date a.txt").read_only


_LOOKS_WRITING = re.compile(r"out|file|diag")
_WRITES_NONE = {"ss": frozenset(), "file": frozenset({"--compile"})}
"""Entries' options that look writing and are refused as changes, not writes (their file is not named)."""


@pytest.mark.parametrize("name", sorted(name for name in programs.PROGRAMS if name in ONLY_READ))
def test_every_writing_looking_option_is_a_write_of_the_entry(name: str) -> None:
    """What the program writes comes from its entry: each `--help` option that looks writing names a write."""
    program = _program(name)
    if program is None:
        pytest.skip(f"{name} is not installed")
    done = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    listed = set(_LONG.findall(done.stdout + done.stderr))
    unplaced = sorted(
        option
        for option in listed
        if _LOOKS_WRITING.search(option)
        and option not in ONLY_READ[name] | _WRITES_NONE.get(name, frozenset())
        and "x" not in analyse(f"{program} {option}=x a.txt").parts.write_targets  # a path: `time` is a keyword
    )
    assert not unplaced, f"{name} --help lists options its entry does not place as writes: {unplaced}"


_NAMES_A_PATH = re.compile(
    r"(--[a-z][-a-z0-9]*)(?:[ =]<(?:file|filename|dir|path)>|=(?:FILE|FILENAME|DIR|DIRECTORY|PREFIX)\b)"
)
_HELP = {"curl": ["--help", "all"], "wget": ["--help"]}


@pytest.mark.parametrize("name", sorted(archives.DOWNLOADERS))
def test_every_option_that_takes_a_path_is_in_the_downloaders_entry(name: str) -> None:
    """curl's and wget's entries against `--help`: an option whose value is a file or folder is placed."""
    program = _program(name)
    if program is None:
        pytest.skip(f"{name} is not installed")
    done = subprocess.run([program, *_HELP[name]], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    listed = set(_NAMES_A_PATH.findall(done.stdout + done.stderr))
    assert listed, f"{name} --help named no option with a file: the pattern no longer reads its help"
    unplaced = sorted(listed - archives.DOWNLOADERS[name].values)
    assert not unplaced, f"{name} --help lists options with a path its entry does not place: {unplaced}"
