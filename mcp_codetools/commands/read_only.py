"""The read-only allowlist: which commands, with which arguments, only read.

Data first: `ANY_ARGS` holds commands that no argument can turn into a writer or a runner of other
programs; `RULES` maps the rest to a check over their arguments. A check returns a problem ("" when
read-only). Each check is written to fail closed: an argument it cannot place makes the command not
read-only, which only costs parallelism.

Long options: getopt_long takes any unambiguous prefix of a long option as that option (`sort --outp=F`
is `--output=F`). Here every prefix of a writing option, from `--` and one letter on, counts as that
option, even one the installed version would reject as ambiguous (`sort --c` also starts `--check`):
the option lists change between versions, and refusing an ambiguous prefix costs nothing.

Globs: bash replaces a word with an unquoted `*`, `?` or `[` by the file names it matches, and every
match starts with the word's text before its first glob character. So a word that starts with a glob
character or with `-` can become any option (`-de*` matches a file named `-delete`): for a command in
`RULES` that is never read-only. Any other glob may still turn one word into several and shift the
words after it, so checks that read positions (a script, an option's value, a subcommand, a count of
operands) refuse a glob there; checks that look at each word alone need not.

Modelled on Claude Code's list (reference section 8), with two deliberate differences: `cd` is not
read-only here (it changes the session's working directory, which later calls depend on), and `env`
counts only without arguments (with them it runs a program).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_codetools.commands import git_read_only, programs, sed
from mcp_codetools.commands.checks import (
    Check,
    any_args,
    at_most_operands,
    both,
    first_operand_in,
    only,
    operands,
    option_hit,
    subcommands,
    texts,
    unglobbed,
    version_call,
    without,
)
from mcp_codetools.commands.words import Word

ANY_ARGS = frozenset(
    """
    cat head tail wc stat strings hexdump od nl id uname free df du locale groups nproc basename dirname
    realpath cut paste tr column tac rev fold expand unexpand fmt comm cmp numfmt readlink diff true false
    sleep which type expr seq tsort pr cal uptime echo printf pwd whoami ls grep egrep fgrep jq test [
    md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum ps pgrep printenv lsof join
    look arch tty getconf netstat
    """.split()
)


def check(name: str, args: Sequence[Word]) -> str:
    """The problem that keeps `name args` from being read-only, or "" when it only reads."""
    if name in ANY_ARGS:
        return ""
    rule = RULES.get(name)
    if rule is None:
        return f"{name!r} is not on the read-only list"
    for arg in args:
        if arg.brace:
            return f"{arg.text!r} expands to several arguments"
        if arg.glob and (arg.glob_first or arg.text.startswith("-")):
            return f"{arg.text!r} may expand to file names {name} reads as options"
    return rule(args)


# --- per-command checks -------------------------------------------------------------------------


def _date(args: Sequence[Word]) -> str:
    problem = unglobbed(args)
    if problem:
        return problem
    words = texts(args)
    if any(option_hit(a, ("--set",), "s", "dfrIR") for a in words):
        return "date -s sets the clock"
    values = frozenset({"-d", "--date", "-f", "--file", "-r", "--reference"})
    if any(not op.startswith("+") for op in operands(words, values)):
        return "a date operand sets the clock"
    return ""


def _find(args: Sequence[Word]) -> str:
    """find's primaries are matched whole (no abbreviations); a glob that could become one is refused in `check`."""
    for arg in args:
        if arg.text in programs.FIND_ACTIONS:
            return f"find {arg.text} changes files or runs programs"
    return ""


def _xargs_option(arg: str) -> int:
    """How many words the option `arg` takes up (1 or 2), or 0 when it is not known to be read-only."""
    if arg.startswith("--"):
        key, equals, _ = arg.partition("=")
        option = programs.XARGS.get(key)
        if option is None or not option.read_only or (option.takes == "flag" and equals):
            return 0
        return 2 if option.takes == "value" and not equals else 1
    for pos, letter in enumerate(arg[1:], start=1):
        option = programs.XARGS.get("-" + letter)
        if option is None or not option.read_only:
            return 0
        if option.takes == "optional":
            return 1
        if option.takes == "value":
            return 1 if pos + 1 < len(arg) else 2
    return 1


def _xargs(args: Sequence[Word]) -> str:
    """Read-only when the command xargs runs takes any arguments safely (the input becomes its arguments)."""
    i = 0
    while i < len(args):
        arg = args[i].text
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        taken = _xargs_option(arg)
        if not taken:
            return f"xargs option {arg!r} is not known to be read-only"
        i += taken
    problem = unglobbed(args[: i + 1])
    if problem:
        return problem
    target = args[i].text if i < len(args) else "echo"
    if target not in ANY_ARGS:
        return f"xargs runs {target!r}, which is read-only only with arguments it can check"
    return ""


def _refusing(program: programs.Program) -> Check:
    """Read-only unless one of the program's writing, running or changing options is given (its one entry)."""
    active = program.active
    short = "".join(name[1] for name in active if len(name) == 2 and name[1] != "-")
    return without(*(name for name in active if name.startswith("--")), short=short, short_values=program.values)


_READ_ONLY_UNLESS = frozenset({"sort", "tree", "ss", "file", "rg", "fd", "fdfind"})
"""Programs of `programs.PROGRAMS` that only read without their active options (`time` and `strace` run a command)."""

_GH = subcommands(
    {
        "pr": first_operand_in("view", "list", "diff", "checks", "status", default_ok=False),
        "issue": first_operand_in("view", "list", "status", default_ok=False),
        "repo": first_operand_in("view", default_ok=False),
        "run": first_operand_in("view", "list", default_ok=False),
        "release": first_operand_in("view", "list", default_ok=False),
    }
)

_DOCKER = subcommands(dict.fromkeys(("ps", "images", "logs", "inspect", "version", "info"), any_args))

_VERSION_CALLS: dict[str, Check] = {
    **dict.fromkeys(("bash", "sh", "zsh", "ruby"), version_call("--version")),
    **dict.fromkeys(("python", "python3", "rustc", "deno"), version_call("--version", "-V")),
    **dict.fromkeys(("node", "nodejs", "npm", "bun", "perl", "php"), version_call("--version", "-v")),
    "java": version_call("--version", "-version"),
    "cargo": version_call("--version", "-V", "version"),
    "go": version_call("version"),
}
"""
Interpreters and compilers, read-only only when asked for their version with nothing else: given a
file (`bash version`, `node version`) they run it, and some flags that look harmless read a program
from stdin (`python3 -v`, `bash -v`), so each program gets only the forms that print and exit.
"""

RULES: dict[str, Check] = {
    **{name: _refusing(program) for name, program in programs.PROGRAMS.items() if name in _READ_ONLY_UNLESS},
    "find": _find,
    "uniq": at_most_operands(
        programs.PROGRAMS["uniq"].output_operand - 1, frozenset(programs.PROGRAMS["uniq"].takes_value)
    ),
    "date": _date,
    "hostname": only("-f", "-s", "-i", "-I", "-d", "-A", "-a", "--fqdn", "--short", "--ip-address", "--domain"),
    "env": only(),
    "sed": sed.check_sed,
    "xargs": _xargs,
    "git": git_read_only.GIT,
    "gh": both(_GH, without("--web", short="w")),
    "docker": _DOCKER,
    **_VERSION_CALLS,
}
