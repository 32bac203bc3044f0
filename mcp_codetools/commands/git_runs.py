"""What `git …` runs, read from git's table (`commands.git`).

The subcommand behind git's global options (`git -C . -c x=y push` is `git push`), the plumbing that pushes
read as `git push` too, an alias or unknown subcommand left open (what it runs is not in the text), and the
command lines git runs: `submodule foreach CMD`, `bisect run CMD`, `rebase --exec CMD`, a program-running
`-c` value or a `!` alias.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from mcp_codetools.commands import git
from mcp_codetools.commands.readings import Reading, Readings, join, open_from


def read(
    args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, add: Callable[[Reading], None], found: Readings
) -> None:
    """git without its global options; an alias or unknown subcommand leaves the reading open."""
    i = 0
    folder = chdir
    while i < len(args):
        word = args[i]
        if not known[i]:
            break
        if not word.startswith("-"):
            break
        key, eq, attached = word.partition("=")
        option = git.GLOBALS.get(key if word.startswith("--") else word)
        if option is None or (eq and not option.value and key != "--exec-path"):
            add(Reading(("git", word), 1, folder))  # an option git may not know: what follows is not known
            return
        if option.asks:
            found.program_config.append(option.asks)
        if not option.value:
            i += 1
            continue
        value, value_known = (
            (attached, True) if eq else (args[i + 1], known[i + 1]) if i + 1 < len(args) else ("", True)
        )
        if option.effect == "folder":
            folder = join(folder, value if value_known and (eq or i + 1 < len(args)) else None)
        elif option.effect == "config":
            _config(value, found)
        i += 1 if eq else 2
    rest, rest_known = args[i:], known[i:]
    _command_lines(rest, rest_known, found)
    opened = open_from((True, *rest_known))
    if rest and rest_known[0] and rest[0] not in git.COMMANDS:
        opened = 1  # an alias (or a git-NAME program): what it runs is not in the text
    add(Reading(("git", *rest), opened, folder))
    if rest and rest[0] in git.PUSHING and rest_known[0]:  # the plumbing that pushes: a push rule covers it
        add(Reading(("git", "push", *rest[1:]), opened, folder))


def _command_lines(rest: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """Command lines a git subcommand runs: `submodule foreach CMD`, `bisect run CMD`, `rebase --exec CMD`."""
    sub = rest[0] if rest else ""
    if sub == "submodule" and "foreach" in rest:
        at = rest.index("foreach") + 1
        while at < len(rest) and rest[at] in ("--recursive", "-q", "--quiet"):
            at += 1
        found.scripts.append(" ".join(rest[at:]) if all(known[at:]) else None)
    elif sub == "bisect" and rest[1:2] == ("run",):
        found.scripts.append(shlex.join(rest[2:]) if all(known[2:]) else None)
    for key in git.RUNS_COMMAND_LINE.get(sub, ()):
        for i, word in enumerate(rest):
            if word == key and i + 1 < len(rest):
                found.scripts.append(rest[i + 1] if known[i + 1] else None)
            elif word.startswith(key + "=") or (len(key) == 2 and word.startswith(key) and len(word) > 2):
                found.scripts.append(word[len(key) + (word[len(key)] == "=") :] if known[i] else None)


def _config(value: str, found: Readings) -> None:
    """`-c KEY=VALUE`: an alias is a command (`-c alias.p=push p` is `git push`), some keys run a program."""
    if value.lower().startswith("alias."):  # with `!`, a shell command
        found.program_config.append(f"git -c {value.partition('=')[0]} defines a command git runs")
        body = value.partition("=")[2].lstrip()
        if body.startswith("!"):
            found.scripts.append(body[1:])
    elif git.CONFIG_RUNS.match(value):
        found.program_config.append(f"git -c {value.partition('=')[0]} makes git run a program or read more config")
        if not value.lower().startswith(("include", "http.", "protocol.")):
            found.scripts.append(value.partition("=")[2].lstrip().removeprefix("!"))  # the command git runs


def env_assignment(assignment: str) -> bool:
    """Whether a `NAME=value` before git changes what git runs or which config it reads."""
    return git.ENV.match(assignment) is not None
