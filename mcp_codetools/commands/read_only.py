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

from collections.abc import Callable, Iterable, Sequence

from mcp_codetools.commands import git_table, sed
from mcp_codetools.commands.words import Word

Check = Callable[[Sequence[Word]], str]

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


# --- building blocks ----------------------------------------------------------------------------


def long_option(arg: str, names: Iterable[str]) -> str | None:
    """The option among `names` that `arg` selects: the name or any prefix of it, alone or with `=value`."""
    if not arg.startswith("--"):
        return None
    key = arg.partition("=")[0]
    if len(key) < 3:
        return None
    return next((name for name in names if name.startswith(key)), None)


def _option_hit(arg: str, long: Iterable[str], short: str, short_values: str) -> bool:
    """Whether `arg` is one of the options `long` (see `long_option`) or a short cluster holding a `short` letter."""
    if long_option(arg, long):
        return True
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
        for letter in arg[1:]:
            if letter in short:
                return True
            if letter in short_values:
                return False
    return False


def _texts(args: Sequence[Word]) -> list[str]:
    return [arg.text for arg in args]


def unglobbed(args: Sequence[Word]) -> str:
    """The problem when one of `args` holds a glob, for words whose position matters."""
    for arg in args:
        if arg.glob:
            return f"{arg.text!r} may expand to several words and shift the arguments after it"
    return ""


def without(*options: str, short: str = "", short_values: str = "") -> Check:
    """Read-only unless one of `options` (or a prefix, see `long_option`) or a `short` letter in a cluster is given.

    `short_values` are letters whose value follows in the same cluster (`-k2o` sorts by `2o`), so scanning
    the cluster stops there. Every word is looked at alone, so a glob that shifts words changes nothing.
    """

    def rule(args: Sequence[Word]) -> str:
        for arg in args:
            if _option_hit(arg.text, options, short, short_values):
                return f"option {arg.text!r} writes or runs programs"
        return ""

    return rule


def only(*allowed: str) -> Check:
    """Read-only only when every argument is one of `allowed` (for commands that can also set things)."""
    permitted = frozenset(allowed)

    def rule(args: Sequence[Word]) -> str:
        for arg in args:
            if arg.text not in permitted:
                return f"argument {arg.text!r} is not a known read-only form"
        return ""

    return rule


def version_call(*forms: str) -> Check:
    """Interpreters and compilers: read-only only as `prog --version` alone (an operand would be run or compiled)."""
    permitted = frozenset(forms)

    def rule(args: Sequence[Word]) -> str:
        if len(args) == 1 and args[0].text in permitted:
            return ""
        return f"only {' or '.join(forms)} alone is read-only (given a file, it runs or compiles it)"

    return rule


def both(first: Check, second: Check) -> Check:
    """A check that passes only when both do; it reports the first objection."""

    def rule(args: Sequence[Word]) -> str:
        return first(args) or second(args)

    return rule


def operands(args: Sequence[str], value_options: frozenset[str] = frozenset()) -> list[str]:
    """Arguments that are not options, skipping the separate values of `value_options`."""
    found: list[str] = []
    skip = False
    ended = False
    for arg in args:
        if skip:
            skip = False
        elif ended or arg == "-" or not arg.startswith("-"):
            found.append(arg)
        elif arg == "--":
            ended = True
        elif arg in value_options:
            skip = True
    return found


def at_most_operands(count: int, value_options: frozenset[str] = frozenset()) -> Check:
    """For commands whose extra operand is an output file (`uniq in out`); a glob could be several operands."""

    def rule(args: Sequence[Word]) -> str:
        problem = unglobbed(args)
        if problem:
            return problem
        if len(operands(_texts(args), value_options)) > count:
            return f"more than {count} operand(s): the last would be written"
        return ""

    return rule


def subcommands(table: dict[str, Check], *, global_check: Callable[[Sequence[str]], int] | None = None) -> Check:
    """A tool with subcommands (`git log`, `docker ps`): the first operand picks the rule for the rest."""

    def rule(args: Sequence[Word]) -> str:
        start = 0
        if global_check is not None:
            start = global_check(_texts(args))
            if start < 0:
                return "a global option that is not known to be read-only"
        problem = unglobbed(args[: start + 1])
        if problem:
            return problem
        if start >= len(args):
            return ""
        sub = args[start].text
        sub_rule = table.get(sub)
        if sub_rule is None:
            return f"subcommand {sub!r} is not on the read-only list"
        return sub_rule(args[start + 1 :])

    return rule


def _any(args: Sequence[Word]) -> str:
    return ""


# --- per-command checks -------------------------------------------------------------------------


def _date(args: Sequence[Word]) -> str:
    problem = unglobbed(args)
    if problem:
        return problem
    texts = _texts(args)
    if any(_option_hit(a, ("--set",), "s", "dfrIR") for a in texts):
        return "date -s sets the clock"
    values = frozenset({"-d", "--date", "-f", "--file", "-r", "--reference"})
    if any(not op.startswith("+") for op in operands(texts, values)):
        return "a date operand sets the clock"
    return ""


_FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"})


def _find(args: Sequence[Word]) -> str:
    """find's primaries are matched whole (no abbreviations); a glob that could become one is refused in `check`."""
    for arg in args:
        if arg.text in _FIND_ACTIONS:
            return f"find {arg.text} changes files or runs programs"
    return ""


def _fd(args: Sequence[Word]) -> str:
    for arg in _texts(args):
        if long_option(arg, ("--exec", "--exec-batch")) or (
            arg.startswith("-") and not arg.startswith("--") and ("x" in arg or "X" in arg)
        ):
            return "fd --exec runs programs"
    return ""


_XARGS_VALUE = frozenset("ILnPsdEa")
"""Short options whose value is the rest of the word or else the next word."""
_XARGS_OPTIONAL = frozenset("ile")
"""Short options whose value, if any, is the rest of the word: the next word is never theirs."""
_XARGS_FLAGS = frozenset("0rtx")
_XARGS_LONG_VALUE = frozenset({"--max-args", "--max-procs", "--max-chars", "--delimiter", "--arg-file"})
_XARGS_LONG_OPTIONAL = frozenset({"--max-lines", "--replace", "--eof"})
"""`--replace[=R]`: a value only after `=`, so `xargs --replace rm x` runs rm."""
_XARGS_LONG_FLAGS = frozenset({"--null", "--no-run-if-empty", "--verbose", "--exit"})


def _xargs_option(arg: str) -> int:
    """How many words the option `arg` takes up (1 or 2), or 0 when it is not known to be read-only.

    Long options are matched whole: an abbreviation is not known, so it fails closed.
    """
    if arg.startswith("--"):
        key, equals, _ = arg.partition("=")
        if key in _XARGS_LONG_VALUE:
            return 1 if equals else 2
        if key in _XARGS_LONG_OPTIONAL or arg in _XARGS_LONG_FLAGS:
            return 1
        return 0
    for pos, letter in enumerate(arg[1:], start=1):
        if letter in _XARGS_FLAGS:
            continue
        if letter in _XARGS_OPTIONAL:
            return 1
        if letter in _XARGS_VALUE:
            return 1 if pos + 1 < len(arg) else 2
        return 0
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


# git: global options, then a subcommand with its own rule.

_GIT_GLOBAL_FLAGS = frozenset(
    {
        "--no-pager",
        "-P",
        "--no-optional-locks",
        "--bare",
        "--no-replace-objects",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "-p",
        "--paginate",
        "--version",
    }
)
_GIT_GLOBAL_PREFIXES = ("--git-dir=", "--work-tree=", "--namespace=")


def _git_globals(args: Sequence[str]) -> int:
    """Index of the subcommand, or -1 for a global option that could change what git runs (-c, --exec-path).

    git matches its global options whole, so these are compared whole too.
    """
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-C":
            i += 2
        elif arg in _GIT_GLOBAL_FLAGS or arg.startswith(_GIT_GLOBAL_PREFIXES):
            i += 1
        elif arg.startswith("-"):
            return -1
        else:
            return i
    return i


_LIST_MODE = frozenset({"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at"})


def _listing(forbidden: Check) -> Check:
    """git branch/tag: operands create things unless a listing option is present (then they are patterns)."""

    def rule(args: Sequence[Word]) -> str:
        problem = forbidden(args)
        if problem:
            return problem
        texts = _texts(args)
        if operands(texts) and not any(a.split("=", 1)[0] in _LIST_MODE for a in texts):
            return "a name without --list creates it"
        return ""

    return rule


def _first_operand_in(*allowed: str, default_ok: bool = True) -> Check:
    """`git stash list`, `git remote -v`: the first operand must be a read-only verb (a glob never is one)."""
    verbs = frozenset(allowed)

    def rule(args: Sequence[Word]) -> str:
        ops = operands(_texts(args))
        if not ops:
            return "" if default_ok else "no read-only verb"
        return "" if ops[0] in verbs else f"{ops[0]!r} is not a read-only verb"

    return rule


_GIT_CONFIG_READING = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"})
_GIT_CONFIG_WRITING = tuple("--add --unset --unset-all --replace-all --rename-section --remove-section --edit".split())
_GIT_CONFIG_VERBS = frozenset({"set", "unset", "edit", "rename-section", "remove-section"})


def _git_config(args: Sequence[Word]) -> str:
    problem = unglobbed(args)
    if problem:
        return problem
    texts = _texts(args)
    writes = any(a in _GIT_CONFIG_VERBS or _option_hit(a, _GIT_CONFIG_WRITING, "e", "") for a in texts)
    if writes or not any(a in _GIT_CONFIG_READING for a in texts):
        return "git config without --get/--list may write"
    return ""


_GIT_SHORT_VALUES = "SGUMCBLlXn"
"""Short options of git's log, diff and blame whose value follows in the same word (`-SOops` searches `Oops`)."""


def _git_options(sub: str) -> Check:
    """The check of `git_table`'s entry: no option of `sub` that writes a file or runs a program."""
    entry = git_table.READ_ONLY[sub]
    return without(*entry.writes, *entry.runs, short=entry.runs_short, short_values=_GIT_SHORT_VALUES)


_GIT_VERBS: dict[str, Check] = {
    "branch": _listing(
        without(
            "--delete",
            "--move",
            "--copy",
            "--force",
            "--set-upstream-to",
            "--unset-upstream",
            "--edit-description",
            "--track",
            "--no-track",
            "--create-reflog",
            short="dDmMcCfut",
        )
    ),
    "tag": _listing(
        without(
            "--delete",
            "--annotate",
            "--sign",
            "--local-user",
            "--force",
            "--message",
            "--file",
            "--edit",
            "--create-reflog",
            short="dasufmFe",
        )
    ),
    "stash": _first_operand_in("list", "show", default_ok=False),
    "worktree": _first_operand_in("list", default_ok=False),
    "remote": _first_operand_in("show", "get-url"),
    "reflog": _first_operand_in("show", "exists"),
    "config": _git_config,
}
"""Subcommands that also change things: read-only only in the forms these checks allow."""

_GIT = subcommands(
    {
        sub: both(_git_options(sub), _GIT_VERBS[sub]) if sub in _GIT_VERBS else _git_options(sub)
        for sub in git_table.READ_ONLY
    },
    global_check=_git_globals,
)

_GH = subcommands(
    {
        "pr": _first_operand_in("view", "list", "diff", "checks", "status", default_ok=False),
        "issue": _first_operand_in("view", "list", "status", default_ok=False),
        "repo": _first_operand_in("view", default_ok=False),
        "run": _first_operand_in("view", "list", default_ok=False),
        "release": _first_operand_in("view", "list", default_ok=False),
    }
)

_DOCKER = subcommands(dict.fromkeys(("ps", "images", "logs", "inspect", "version", "info"), _any))

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
    "find": _find,
    "fd": _fd,
    "fdfind": _fd,
    "rg": without("--pre", "--hostname-bin"),
    "sort": without("--output", "--compress-program", short="o", short_values="kotST"),
    "uniq": at_most_operands(1, frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"})),
    "tree": without("--output", short="oR", short_values="LPI"),
    "file": without("--compile", short="C", short_values="mefFP"),
    "date": _date,
    "ss": without("--kill", "--diag", short="KD", short_values="fAFN"),
    "hostname": only("-f", "-s", "-i", "-I", "-d", "-A", "-a", "--fqdn", "--short", "--ip-address", "--domain"),
    "env": only(),
    "sed": sed.check_sed,
    "xargs": _xargs,
    "git": _GIT,
    "gh": both(_GH, without("--web", short="w")),
    "docker": _DOCKER,
    **_VERSION_CALLS,
}
