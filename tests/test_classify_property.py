"""
Properties of the read-only classifier, checked by running what it accepts.

1. A command classified read-only never changes the tree: commands are generated from a grammar of the
   commands and options the classifier knows (writing options, abbreviations, globs, redirections,
   pipes), and each one classified read-only runs with `bash -c` in a scratch copy of a small tree that
   holds files named like options (`-delete`, `--output=out`); the tree (names, kinds, modes, contents)
   must be the same afterwards.
2. A sed script the reader accepts holds no command GNU sed reads as w, e or r: `sed --sandbox`
   refuses exactly those while compiling, so it serves as the oracle.

Few examples by default (a few seconds); many more with --run-slow.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_codetools.commands import sed
from mcp_codetools.commands.classify import analyze
from mcp_codetools.shell.git_env import read_only_git

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

RUN_TIMEOUT = 10.0
"""Seconds one generated command may run; none of the grammar waits on anything."""

# Words per command. Quoted words reach the command as one argument; unquoted `*?[` words are globs.
GRAMMAR: dict[str, list[str]] = {
    "find": [".", "src", "-name", "'*.py'", "T", "*.py", "-type f", "-print", "-de*", "-[d]elete", '"-"de*']
    + ["-delete", "-fprint out", "-exec touch ran-exec {} +", "s*", "-newer a.txt", "-ok"],
    "sort": ["a.txt", "b.txt", "-u", "-r", "-k2", "--check", "--reverse", "src/*", "*", "-o*"]
    + ["-o out", "-oout", "-ro out", "--output=out", "--output out", "--compress-program=./mark"],
    "uniq": ["a.txt", "b.txt", "-c", "out", "src/*", "*.txt", "-f 1", "--skip-fields=1"],
    "sed": ["-n", "p", "'1p'", "'s/a/b/'", "'$='", "-e p", "--expression=p", "a.txt", "src/*", "1*", "-s"]
    + ["'s/[/]/;/w out'", "'w out'", "'s/a/b/w out'", "'1e touch ran-e'", "'s/a/b/ w out'", "-e 'w out'", "-i"]
    + ["'/[/]/w out'", "'s/a/b/e'", "-l 5*"],
    "xargs": ["-0", "-n 1", "-r", "--max-lines", "--replace", "--eof", "-i", "-l", "--max-args=1"]
    + ["touch", "rm", "cat", "echo", "ls", "./mark", "r*", "wc"],
    "git": ["status", "log", "diff", "grep a", "grep -O", "--open-files-in-pager=./mark", "--output=out"]
    + [
        "-Oout",
        "--ext-diff",
        "branch",
        "branch new",
        "tag",
        "tag v1",
        "show",
        "-C src",
        "--no-pager",
        "config --get user.name",
    ]
    + ["config user.name x", "stash", "stash list", "HEAD", "--", "a.txt", "*.txt"]
    + ["rev-list", "blame", "shortlog", "reflog", "stash show", "--output out", "--all"],
    "file": ["a.txt", "*", "-C", "-m magic", "--compile", "--mime-type", "-b"],
    "rg": ["a", "-l", "--files", "--pre=./mark", "--pre ./mark", "--hostname-bin=./mark", "--hidden", "*"],
    "bash": ["version", "--version", "-v", "script.sh"],
    "sh": ["version", "--version"],
    "python3": ["version", "--version", "-V", "-v", "script.py", '-c \'open("ran-py","w")\''],
    "node": ["version", "--version", "-v"],
    "cat": ["a.txt", "*", "-n", "src/*"],
    "ls": ["-la", "*", "src", "-R"],
    "grep": ["-rn", "a", ".", "*", "-l"],
    "wc": ["-l", "a.txt", "*"],
    "echo": ["a.txt", "b.txt", "hi", "*"],
    "head": ["-n 1", "a.txt", "*"],
    "touch": ["new"],
    "rm": ["a.txt", "-f"],
    "tee": ["out"],
}
REDIRECTS = ["", "", "", "> out", ">> a.txt", "2>/dev/null", "> /dev/null 2>&1", "< a.txt", ">| out", "&> out"]
JOINS = [" | ", " ; ", " && ", " || "]


def _abbreviate(word: str, cut: int) -> str:
    """`--output=out` cut to `--outp=out`: getopt reads a prefix as the option."""
    key, equals, value = word.partition("=")
    return key[: max(3, min(cut, len(key)))] + equals + value


def _globbed(word: str, position: int, char: str) -> str:
    """Replace one character of an unquoted word by a glob character."""
    if not word or "'" in word or '"' in word:
        return word
    i = position % len(word)
    return word[:i] + char + word[i + 1 :]


@st.composite
def simple_commands(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(GRAMMAR)))
    words: list[str] = []
    for word in draw(st.lists(st.sampled_from(GRAMMAR[name]), max_size=4)):
        change = draw(st.sampled_from(["none", "none", "abbreviate", "glob"]))
        if change == "abbreviate" and word.startswith("--"):
            word = _abbreviate(word, draw(st.integers(3, 20)))
        elif change == "glob":
            word = _globbed(word, draw(st.integers(0, 40)), draw(st.sampled_from("*?")))
        words.append(word)
    return " ".join([name, *words, draw(st.sampled_from(REDIRECTS))]).strip()


@st.composite
def commands(draw: st.DrawFn) -> str:
    command = draw(simple_commands())
    for _ in range(draw(st.integers(0, 1))):
        command += draw(st.sampled_from(JOINS)) + draw(simple_commands())
    return command


# --- the tree --------------------------------------------------------------------------------------

_FILES = {
    "a.txt": "a 1\nb 2\na 1\n",
    "b.txt": "b\na\nc\n",
    "src/x.py": "print('x')\n",
    "src/y.txt": "y\n",
    "-delete": "",
    "--output=out": "",
    "-oout": "",
    "1w out": "",
    "version": "touch ran-version\n",
    "script.sh": "touch ran-script\n",
    "script.py": "open('ran-py', 'w')\n",
    "magic": "0 string hello hello file\n",
    "mark": "#!/bin/sh\ntouch ran-mark\ncat > /dev/null\n",
}


def _git(tree: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=tree, env=_environment(tree), check=True, capture_output=True, timeout=30)


def _environment(tree: Path) -> dict[str, str]:
    """A small fixed environment: HOME is the tree itself, so writes to ~ show up as changes too."""
    bin_dir = Path(sys.executable).parent  # the test environment's rg lives here
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tree),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        **read_only_git({}),  # as the server runs a read-only command: git writes no index cache
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("template") / "tree"
    tree.mkdir()
    for name, text in _FILES.items():
        path = tree / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (tree / "mark").chmod(0o755)
    if shutil.which("git"):
        _git(tree, "init", "-q", "--template=")
        _git(tree, "add", "-A")
        _git(tree, "commit", "-qm", "start")
    return tree


def snapshot(tree: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under `tree`: its kind, permission bits, and content digest or link target."""
    found: dict[str, tuple[str, int, str]] = {}
    for folder, dirs, files in os.walk(tree):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            relative = str(path.relative_to(tree))
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[relative] = ("dir", stat.S_IMODE(info.st_mode), "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[relative] = ("file", stat.S_IMODE(info.st_mode), digest)
    return found


def run_in_copy(
    template: Path, command: str
) -> tuple[dict[str, tuple[str, int, str]], dict[str, tuple[str, int, str]]]:
    """Run `command` with bash in a fresh copy of `template`; the tree before and after."""
    with tempfile.TemporaryDirectory(dir=template.parent) as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(template, tree, symlinks=True)
        before = snapshot(tree)
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=tree,
            env=_environment(tree),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            process.wait(timeout=RUN_TIMEOUT)
        finally:
            _kill_group(process)
        return before, snapshot(tree)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill what is left of the command's process group and reap the command."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def check_read_only_command(template: Path, command: str) -> bool:
    """Run `command` when it is classified read-only and check the tree; whether it was run."""
    if not analyze(command).read_only:
        return False
    before, after = run_in_copy(template, command)
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert not changed, f"{command!r} was classified read-only but changed {changed}"
    return True


def checked_read_only(template: Path, examples: int) -> int:
    """How many generated commands were read-only and run: a property over none of them says nothing."""
    checked: list[str] = []

    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(command=commands())
    def run(command: str) -> None:
        if check_read_only_command(template, command):
            checked.append(command)

    run()
    return len(checked)


# --- property 1: read-only commands leave the tree alone ------------------------------------------


def test_read_only_commands_leave_the_tree_alone(template: Path) -> None:
    assert checked_read_only(template, 60) > 0, "no generated command was read-only: nothing was checked"


@pytest.mark.slow
def test_read_only_commands_leave_the_tree_alone_many(template: Path) -> None:
    assert checked_read_only(template, 2000) > 0, "no generated command was read-only: nothing was checked"


def test_the_count_is_zero_when_nothing_is_read_only(template: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard itself: with a classifier that accepts nothing, no command is checked and the count says so."""
    monkeypatch.setattr(sys.modules[__name__], "analyze", lambda command: analyze_nothing)
    assert checked_read_only(template, 5) == 0


class _Nothing:
    read_only = False


analyze_nothing = _Nothing()


@pytest.mark.parametrize(
    "command",
    [
        "sort --outp=out a.txt",
        "sort --[o]* a.txt",
        "find src -de*",
        "echo a.txt | xargs --eof rm echo",
        "bash version",
        "sed 's/[/]/;/w ./p' a.txt",
        "git grep --open-files=./mark a",
        "uniq src/*",
    ],
)
def test_the_tree_check_sees_what_escaped_before(template: Path, command: str) -> None:
    """The harness itself: each of these once passed as read-only, and each does change the copy."""
    before, after = run_in_copy(template, command)
    assert before != after, command
    assert not analyze(command).read_only


# --- property 2: sed scripts the reader accepts hold no w, e or r ---------------------------------

_DELIMITER = "\x00"
"""Stands for the command's delimiter in the pieces below, so that pieces can hold it."""
_PIECES = [
    "[D]",
    "[",
    "]",
    "D",
    "\\D",
    "[^]D]",
    "[[:alpha:]D]",
    "[]D]",
    "\\",
    "\\\n",
    "\n",
    " ",
    ";",
    "a",
    "w out",
    "e",
]
_PART = st.lists(st.sampled_from([piece.replace("D", _DELIMITER) for piece in _PIECES]), max_size=3).map("".join)
_AFTER_S = st.sampled_from(
    ["", ";", "g", " g", "p", "2", "w out", " w out", "e", "\nw out", "}", "g;w out", "w .Dp", "e;Dp"]
)
_COMMANDS = ["p", " p", "w out", " !w out", "I p", ",/a/w out", "{w out\n}", " e", "I,$w out", "w .Dp"]


@st.composite
def sed_commands(draw: st.DrawFn) -> str:
    """One sed command built from pieces chosen to confuse where a part ends (brackets, escapes, newlines)."""
    delimiter = draw(st.sampled_from("/|,[]:.= "))
    kind = draw(st.sampled_from(["s", "s", "address", "custom address", "y", "plain"]))
    if kind in ("s", "y"):
        command = f"{kind}D{draw(_PART)}D{draw(_PART)}D{draw(_AFTER_S)}"
    elif kind == "address":
        command = f"/{draw(_PART)}/{draw(st.sampled_from(_COMMANDS))}"
        delimiter = "/"
    elif kind == "custom address":
        command = f"\\D{draw(_PART)}D{draw(st.sampled_from(_COMMANDS))}"
    else:
        command = draw(
            st.sampled_from(["p", "1,3p", "$=", "2q", "w out", "e touch x", "r a.txt", "0~2d", "1 , +2 ! p"])
        )
    return command.replace("D", delimiter).replace(_DELIMITER, delimiter)


_SEEDS = ["s/[/]/;/./p", "s/a/b/g", "/[/]/p", "s|[|]|x|", "y/[/]/", "1,/x/p", "s/[[:alpha:]/]/x/", "s/a/b/;p"]
"""Read-only scripts close to escapes: one or two inserted pieces can make them write."""
_INSERTS = ["w ", "w out", "e", "/", "[", "]", ";", " ", "\n", "\\", "p"]


@st.composite
def mutated_seeds(draw: st.DrawFn) -> str:
    script = draw(st.sampled_from(_SEEDS))
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, len(script)))
        script = script[:at] + draw(st.sampled_from(_INSERTS)) + script[at:]
    return script


@st.composite
def built_scripts(draw: st.DrawFn) -> str:
    return draw(st.sampled_from([";", "\n", " ; "])).join(draw(st.lists(sed_commands(), min_size=1, max_size=3)))


sed_scripts = st.one_of(built_scripts(), mutated_seeds())


def check_sed_script(script: str) -> None:
    if sed.script_problem(script):
        return
    result = subprocess.run(
        ["sed", "--sandbox", "-n", "-e", script],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert "sandbox" not in result.stderr, f"sed reads a w, e or r command in {script!r}: {result.stderr}"


def _sed_has_sandbox() -> bool:
    if shutil.which("sed") is None:
        return False
    result = subprocess.run(["sed", "--sandbox", "-n", "-e", "w x"], capture_output=True, text=True, timeout=30)
    return "sandbox" in result.stderr


needs_gnu_sed = pytest.mark.skipif(not _sed_has_sandbox(), reason="needs GNU sed with --sandbox")


@needs_gnu_sed
@settings(max_examples=100, deadline=None)
@given(script=sed_scripts)
def test_accepted_sed_scripts_hold_no_writing_command(script: str) -> None:
    check_sed_script(script)


@pytest.mark.slow
@needs_gnu_sed
@settings(max_examples=5000, deadline=None)
@given(script=sed_scripts)
def test_accepted_sed_scripts_hold_no_writing_command_many(script: str) -> None:
    check_sed_script(script)


@needs_gnu_sed
@pytest.mark.parametrize("script", ["s/[/]/;/w ./p", "/[/]/w out", "s/a/b/ w out", "s|[|]|x|e"])
def test_the_sed_oracle_sees_what_escaped_before(script: str) -> None:
    """The oracle itself: sed reads a writing command in each, and the reader refuses each."""
    result = subprocess.run(["sed", "--sandbox", "-n", "-e", script], capture_output=True, text=True, timeout=30)
    assert "sandbox" in result.stderr
    assert sed.script_problem(script)
