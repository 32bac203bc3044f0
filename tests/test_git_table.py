"""git's table against the installed git: every option that may write or name a file is placed in the table.

For each subcommand the read-only list allows, `git <sub> -h` and git's own completion list
(`--git-completion-helper`) give the options this git knows. One whose name says it writes or names a file
(`--output`, `--file`, `-o`, ...) must be in the table's entry, as a writer, a runner, a file read or a name
that only looks like one; a new git that grows such an option fails here until someone places it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mcp_codetools.commands import git
from mcp_codetools.commands.classify import analyze

VERBS = {"stash": ("list", "show"), "reflog": ("show",), "worktree": ("list",), "remote": ("show", "get-url")}
"""Subcommands read-only only with a verb: their options are the verb's."""
_LOOKS_WRITING = re.compile(r"^(?:--[\w-]*(?:out|file)[\w-]*|-[oO])$")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][-A-Za-z0-9]*)")


def _listed(git: str, words: list[str], cwd: Path) -> set[str]:
    """The options `git WORDS -h` and the completion list name (descriptions left out)."""
    found: set[str] = set()
    for extra in ("-h", "--git-completion-helper"):
        done = subprocess.run([git, *words, extra], cwd=cwd, capture_output=True, text=True, timeout=30)
        for line in done.stdout.splitlines() + done.stderr.splitlines():
            head = re.split(r"\S\s{2,}", line.strip(), maxsplit=1)[0] if extra == "-h" else line
            found.update(_OPTION.findall(head))
    return found


def _known(entry: git.Subcommand) -> set[str]:
    short = {f"-{letter}" for letter in entry.runs_short}
    return {*entry.writes, *entry.runs, *entry.reads, *entry.inert, *short}


def _invocations() -> list[tuple[str, tuple[str, ...]]]:
    return [
        (sub, (sub, *verb)) for sub in git.READ_ONLY for verb in ([(v,) for v in VERBS[sub]] if sub in VERBS else [()])
    ]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    found = shutil.which("git")
    if found is None:
        pytest.skip("git is not installed")
    repo = tmp_path_factory.mktemp("repo")
    subprocess.run([found, "init", "-q"], cwd=repo, check=True, timeout=30)
    return found, repo


@pytest.mark.parametrize(("sub", "words"), _invocations(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_every_option_that_may_write_is_in_the_table(
    installed: tuple[str, Path], sub: str, words: tuple[str, ...]
) -> None:
    program, repo = installed
    listed = _listed(program, list(words), repo)
    known = _known(git.READ_ONLY[sub])
    unplaced = sorted(
        option
        for option in listed
        if _LOOKS_WRITING.match(option) and option not in known and option.replace("--no-", "--", 1) not in known
    )
    assert not unplaced, f"git {' '.join(words)} has options git.py does not place: {unplaced}"


@pytest.mark.parametrize(("sub", "words"), _invocations(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_each_writer_or_runner_in_the_table_makes_the_command_not_read_only(sub: str, words: tuple[str, ...]) -> None:
    entry = git.READ_ONLY[sub]
    for option in (*entry.writes, *entry.runs):
        command = f"git {' '.join(words)} {option}=x"
        assert not analyze(command).read_only, command
    for letter in entry.runs_short:
        assert not analyze(f"git {' '.join(words)} -{letter}x").read_only


def test_the_listing_is_read(installed: tuple[str, Path]) -> None:
    """`-h` and the completion list are parsed: blame's file options and diff's `--output` are found."""
    program, repo = installed
    assert {"--contents", "--ignore-revs-file"} <= _listed(program, ["blame"], repo)
    assert "--output" in _listed(program, ["diff"], repo)


def test_the_check_finds_an_option_the_table_does_not_place() -> None:
    assert _LOOKS_WRITING.match("--output-file") and _LOOKS_WRITING.match("-o") and not _LOOKS_WRITING.match("-p")


def test_the_table_names_the_file_an_option_writes() -> None:
    assert git.written_files("rev-list", ["--output=a", "HEAD"]) == ["a"]
    assert git.written_files("blame", ["--outp", "b", "f"]) == ["b"]
    assert git.written_files("archive", ["-oc.tar", "HEAD"]) == ["c.tar"]
    assert git.written_files("log", ["--", "--output=x"]) == []
    assert git.written_files("status", ["--output=x"]) == []
    assert git.written_folders("format-patch", ["-o", "out", "HEAD~1"]) == ["out"]
