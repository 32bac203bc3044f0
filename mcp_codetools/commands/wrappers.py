"""What one simple command runs, seen through wrappers, program paths and a program's global options.

`readings(words, known)` returns every reading of a command that a deny or ask rule must see: the words as
written; the program by its name (`/usr/bin/git push` is `git push`); without the program's global options
(`git -C . -c x=y push` is `git push`); the command a wrapper runs (`env -i A=1 nice -n 5 git push`,
`sudo -u x git push`, `xargs git push`, `find . -exec git push ;`); and the command lines that shells and
wrappers run as text (`bash -lc '…'`, `eval …`, `watch …`, `script -qc '…'`, `flock f -c '…'`), which the
caller splits like the command itself.

A wrapper's options are read with its own option table. An option the table does not know is read both
ways (a flag, or an option that takes the next word), so an unknown option cannot hide the command it
runs. A word whose text is not known before the command runs (an expansion) makes the reading *open* from
that word on: a rule whose literal words agree with the reading up to there could apply, and the call is
asked about.

Git's dashed programs (`git-push`, `/usr/lib/git-core/git-push`) are read as the subcommand, and the plumbing
that pushes (`git send-pack`, `git http-push`) also as `git push`: a rule against pushing means any push. A
program no table knows may be a wrapper (`prlimit git push`): each later word starts a *guess*, which rules
never match (that would deny `mytool --name git push`) but which makes a rule that agrees with it ask.
A script that `source`, `.` or a shell reads from a pipe, `/dev/stdin` or a process substitution is a
command line: read when the command holds its text, asked about when not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_codetools.commands import git, git_runs, operands, programs, read_only, sed
from mcp_codetools.commands.checks import given
from mcp_codetools.commands.readings import (
    MAX_READINGS,
    Add,
    Reading,
    Readings,
    basename,
    join,
    open_from,
    parse_options,
)
from mcp_codetools.commands.wrapper_tables import (
    GLOBAL_OPTIONS,
    RUNNERS,
    SHELL_VALUES,
    SHELLS,
    WRAPPERS,
    XARGS,
)

_MAX_DEPTH = 12


_BUILTINS = frozenset(
    """
    : read mapfile readarray getopts let shift umask ulimit wait jobs fg bg disown history hash times caller
    compgen complete compopt enable help logout suspend bind dirs shopt set unset export local declare typeset
    """.split()
)
KNOWN_PROGRAMS = frozenset(
    {
        *WRAPPERS, *SHELLS, *GLOBAL_OPTIONS, *(name for name, _ in RUNNERS), *_BUILTINS, *operands.KNOWN,
        *read_only.ANY_ARGS, *read_only.RULES,
        "git", "xargs", "find", "parallel", "eval", "alias", "trap", "source", ".", "su", "runuser",
    }
)  # fmt: skip
"""Programs whose words the tables place: an unknown one may run a later word as a command (`prlimit git push`)."""


def readings(words: Sequence[str], known: Sequence[bool], stdin: str | None = None) -> Readings:
    """Every reading of one simple command (see the module docstring).

    Args:
        words: the command's words after quote removal (assignments before it left out).
        known: for each word, whether its text is known before the command runs.
        stdin: the command line a shell reading its input would run: a here-string or here-document, the
            literal words `echo` or `printf` pipe to it; None when that input is not known.
    """
    found = Readings()
    seen: set[Reading] = set()

    def add(reading: Reading) -> None:
        if reading not in seen and len(found.readings) < MAX_READINGS:
            seen.add(reading)
            found.readings.append(reading)
        elif reading not in seen:  # too many ways to read it: say what runs is not known
            found.readings[-1] = Reading(reading.words[:1], 0)

    _read(tuple(words), tuple(known), stdin, "", 0, add, found)
    return found


def _read(
    words: tuple[str, ...],
    known: tuple[bool, ...],
    stdin: str | None,
    chdir: str | None,
    depth: int,
    add: Add,
    found: Readings,
) -> None:
    if not words:
        return
    add(Reading(words, open_from(known), chdir))
    if depth > _MAX_DEPTH or not known[0]:
        return
    name = basename(words[0])
    if name != words[0]:
        words = (name, *words[1:])
        add(Reading(words, open_from(known), chdir))
    rest, rest_known = words[1:], known[1:]
    if name.startswith("git-") and name[4:] in git.COMMANDS:  # git's dashed programs (`git-core/git-push`)
        git_runs.read((name[4:], *rest), (True, *rest_known), chdir, add, found)
        return
    if name in ("source", "."):
        _source(rest, rest_known, stdin, found)
        return
    if name in ("su", "runuser"):
        _su(rest, rest_known, found)  # `su - root -c '…'`: after the user, the words are the shell's
    if name == "parallel":
        _parallel(rest, rest_known, stdin, chdir, depth, add, found)
        return
    if name in ("sed", "gsed"):
        done = sed.effects(rest) if all(rest_known) else None
        found.scripts.extend(done.runs if done is not None else [None])  # `e CMD`: a command line
        return
    program = programs.PROGRAMS.get(name)
    if program is not None and (program.runs or program.runs_rest):
        _runs(program, rest, rest_known, chdir, depth, add, found)
    spec = WRAPPERS.get(name)
    if spec is not None:
        for start, scripts, folder in parse_options(spec, rest, rest_known):
            found.scripts.extend(scripts)
            where = join(chdir, folder)
            if start is None or (name == "flock" and rest[start] in ("-c", "--command")):
                continue
            if spec.joined:
                tail = rest[start:]
                found.scripts.append(" ".join(tail) if all(rest_known[start:]) else None)
            _read(rest[start:], rest_known[start:], stdin, where, depth + 1, add, found)
        if name == "flock":
            _flock_command(rest, rest_known, found)
        return
    if name in SHELLS:
        _shell(name, rest, rest_known, stdin, found)
        return
    if name == "eval":
        found.scripts.append(" ".join(rest) if all(rest_known) else None)
        return
    if name in ("alias", "trap"):
        _alias_or_trap(name, rest, rest_known, found)
        return
    if name == "xargs":
        _xargs(rest, rest_known, chdir, depth, add, found)
        return
    if name == "find":
        _find(rest, rest_known, chdir, depth, add, found)
        return
    if name == "git":
        git_runs.read(rest, rest_known, chdir, add, found)
        return
    runner = RUNNERS.get((name, rest[0] if rest else "")) or RUNNERS.get((name, ""))
    if runner is not None:
        skip = 0 if (name, "") in RUNNERS else 1
        for start, _, _ in parse_options(runner, rest[skip:], rest_known[skip:]):
            if start is not None:
                _read(rest[skip + start :], rest_known[skip + start :], stdin, chdir, depth + 1, add, found)
    global_spec = GLOBAL_OPTIONS.get(name)
    if global_spec is not None:
        for start, _, _ in parse_options(global_spec, rest, rest_known):
            if start is not None and start > 0:
                add(Reading((name, *rest[start:]), open_from((True, *rest_known[start:])), chdir))
    elif runner is None and name not in KNOWN_PROGRAMS:
        _guess(rest, rest_known, chdir, found)


def _guess(args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, found: Readings) -> None:
    """An unknown program may be a wrapper: every later word that could be a program starts a guess."""
    for i, (word, is_known) in enumerate(zip(args, known, strict=True)):
        if is_known and word and not word.startswith(("-", "+")) and "=" not in word:
            tail = (basename(word), *args[i + 1 :])
            if len(found.guesses) < MAX_READINGS:
                found.guesses.append(Reading(tail, len(tail), chdir))


STDIN_SCRIPTS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
"""Script paths that are the command's input: a shell or `source` reading one runs what the input holds."""
_DESCRIPTOR = re.compile(r"^/(?:dev/fd|proc/[^/]+/fd)/")


def _script_file(word: str, is_known: bool, stdin: str | None) -> tuple[bool, str | None]:
    """Whether a script path is a pipe or descriptor rather than a file, and the command line it then holds."""
    if not is_known:
        return True, None  # `source <(…)`: a process substitution, or an expansion
    if word in STDIN_SCRIPTS:
        return True, stdin
    if _DESCRIPTOR.match(word):
        return True, None
    return False, None


def _source(args: tuple[str, ...], known: tuple[bool, ...], stdin: str | None, found: Readings) -> None:
    """`source FILE`, `. FILE`: a script from the input or a process substitution is a command line to read."""
    at = 1 if args[:1] == ("--",) else 0
    if at < len(args):
        piped, script = _script_file(args[at], known[at], stdin)
        if piped:
            found.scripts.append(script)


def _flock_command(args: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """`flock FILE -c 'cmd'`: the command line after the lock file."""
    for i, word in enumerate(args[:-1]):
        if word in ("-c", "--command"):
            found.scripts.append(args[i + 1] if known[i + 1] else None)


def _shell(name: str, args: tuple[str, ...], known: tuple[bool, ...], stdin: str | None, found: Readings) -> None:
    """`bash -lc '…'`, `sh -s`, `bash <<< '…'`, `echo … | sh`: the command line a shell runs."""
    if name == "busybox":
        return  # `busybox sh -c …` is read by the caller as the applet's own reading
    command_mode = False
    i = 0
    while i < len(args):
        word = args[i]
        if not known[i]:
            found.scripts.append(None)
            return
        if word in ("--", "-"):
            i += 1
            break
        if word in SHELL_VALUES:
            i += 2
            continue
        if word.startswith("--"):
            if name == "fish" and word.partition("=")[0] in ("--command", "--init-command"):
                found.scripts.append(
                    word.partition("=")[2]
                    if "=" in word
                    else (args[i + 1] if i + 1 < len(args) and known[i + 1] else None)
                )
                return
            i += 1
            continue
        if word[:1] in "-+" and len(word) > 1:
            command_mode = command_mode or "c" in word[1:]
            i += 1
            continue
        break
    if command_mode:
        found.scripts.append(args[i] if i < len(args) and known[i] else None)
    elif i >= len(args) or "-s" in args[:i]:
        found.scripts.append(stdin)  # the script comes from the input
    else:
        piped, script = _script_file(args[i], known[i], stdin)
        if piped:  # `bash /dev/stdin <<< '…'`
            found.scripts.append(script)


def _alias_or_trap(name: str, args: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """`alias g='git push'` (run later as `g`) and `trap 'cmd' EXIT`: their text is a command line."""
    if name == "trap":
        operands = [i for i, w in enumerate(args) if not w.startswith("-")]
        if len(operands) >= 2:
            found.scripts.append(args[operands[0]] if known[operands[0]] else None)
        return
    for word, is_known in zip(args, known, strict=True):
        if "=" in word:
            found.scripts.append(word.partition("=")[2] if is_known else None)


def _xargs(
    args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, depth: int, add: Add, found: Readings
) -> None:
    """The command xargs runs: its words, open after them (the input becomes more arguments)."""
    replace = None
    for i, word in enumerate(args):
        if word == "-I" and i + 1 < len(args):
            replace = args[i + 1]
        elif word.startswith("-I") and len(word) > 2:
            replace = word[2:]
        elif word.startswith(("-i", "--replace")):
            replace = word.partition("=")[2] or (word[2:] if word.startswith("-i") else "") or "{}"
    for start, _, _ in parse_options(XARGS, args, known):
        command, command_known = (("echo",), (True,)) if start is None else (args[start:], known[start:])
        marks = tuple(k and not (replace and replace in w) for w, k in zip(command, command_known, strict=True))
        if replace is None:
            marks = (*marks, False)  # the input is appended: open after the words
            command = (*command, "")
        _read_open(command, marks, chdir, depth, add, found)


def _su(args: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """Every `-c CMD` of su, wherever it stands (the wrapper table reads only the options before the user)."""
    for i, word in enumerate(args):
        key, eq, value = word.partition("=")
        if word in ("-c", "--command", "--session-command") and i + 1 < len(args):
            found.scripts.append(args[i + 1] if known[i + 1] else None)
        elif eq and key in ("--command", "--session-command"):
            found.scripts.append(value if known[i] else None)
        elif word.startswith("-c") and len(word) > 2:
            found.scripts.append(word[2:] if known[i] else None)


def _parallel(
    args: tuple[str, ...],
    known: tuple[bool, ...],
    stdin: str | None,
    chdir: str | None,
    depth: int,
    add: Add,
    found: Readings,
) -> None:
    """GNU parallel: the words before `:::` are a command, with arguments not known; none: the input's lines."""
    end = next((i for i, w in enumerate(args) if w in (":::", "::::", ":::+", "::::+")), len(args))
    start = next((i for i in range(end) if not args[i].startswith("-")), end)
    if start > 0:  # an option may take the next word: read from every start, as for an unknown option
        for i in range(start + 1):
            if i < end and not args[i].startswith("-"):
                _read_open((*args[i:end], ""), (*known[i:end], False), chdir, depth, add, found)
    if start >= end:
        found.scripts.append(stdin or None)  # the commands are the input's lines
    elif start == 0:
        _read_open((*args[:end], ""), (*known[:end], False), chdir, depth, add, found)


def _read_open(
    words: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, depth: int, add: Add, found: Readings
) -> None:
    """Read a command whose last word stands for arguments not known (a placeholder "")."""
    if words and words[-1] == "" and not known[-1]:
        add(Reading(words[:-1], len(words) - 1, chdir))
        words, known = words[:-1], known[:-1]
    _read(words, known, None, chdir, depth + 1, add, found)


def _find(
    args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, depth: int, add: Add, found: Readings
) -> None:
    """`find … -exec cmd {} ;` (also -execdir, -ok, -okdir): each command find runs."""
    i = 0
    while i < len(args):
        if args[i] in programs.FIND_RUNS:
            end = i + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            command = args[i + 1 : end]
            marks = tuple(k and "{}" not in w for w, k in zip(command, known[i + 1 : end], strict=True))
            _read(command, marks, None, chdir if args[i] in ("-exec", "-ok") else None, depth + 1, add, found)
            i = end
        i += 1


def _runs(
    program: programs.Program,
    args: tuple[str, ...],
    known: tuple[bool, ...],
    chdir: str | None,
    depth: int,
    add: Add,
    found: Readings,
) -> None:
    """The programs an option runs (`rg --pre CMD`, `sort --compress-program=CMD`, `fd -x CMD ARGS ;`).

    Each is read with arguments not known (the program gives it files or input); a value that is not known
    (an expansion, or an option given last) runs something not known.
    """
    for i, value in given(args, program.runs, program.values):
        if value is None or not all(known[i : i + 2]):  # the value is in this word or the next
            add(Reading((), 0, chdir))
        else:
            _read_open((basename(value), ""), (True, False), chdir, depth, add, found)
    for i, _ in given(args, program.runs_rest, program.values):
        start = i + 1
        end = next((j for j in range(start, len(args)) if args[j] == ";"), len(args))
        if start >= end:
            add(Reading((), 0, chdir))
            continue
        marks = tuple(k and "{" not in w for w, k in zip(args[start:end], known[start:end], strict=True))
        _read_open((*args[start:end], ""), (*marks, False), chdir, depth, add, found)
