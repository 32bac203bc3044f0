"""The building blocks of the read-only checks: each takes a command's words and returns a problem ("" when none).

Long options: getopt_long takes any unambiguous prefix of a long option as that option (`sort --outp=F`
is `--output=F`). Here every prefix of a writing option, from `--` and one letter on, counts as that
option, even one the installed version would reject as ambiguous (`sort --c` also starts `--check`):
the option lists change between versions, and refusing an ambiguous prefix costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from mcp_codetools.commands.words import Word

Check = Callable[[Sequence[Word]], str]


def long_option(arg: str, names: Iterable[str]) -> str | None:
    """The option among `names` that `arg` selects: the name or any prefix of it, alone or with `=value`."""
    if not arg.startswith("--"):
        return None
    key = arg.partition("=")[0]
    if len(key) < 3:
        return None
    return next((name for name in names if name.startswith(key)), None)


def option_hit(arg: str, long: Iterable[str], short: str, short_values: str) -> bool:
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


def texts(args: Sequence[Word]) -> list[str]:
    """The words' texts after quote removal."""
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
            if option_hit(arg.text, options, short, short_values):
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
        if len(operands(texts(args), value_options)) > count:
            return f"more than {count} operand(s): the last would be written"
        return ""

    return rule


def subcommands(table: dict[str, Check], *, global_check: Callable[[Sequence[str]], int] | None = None) -> Check:
    """A tool with subcommands (`git log`, `docker ps`): the first operand picks the rule for the rest."""

    def rule(args: Sequence[Word]) -> str:
        start = 0
        if global_check is not None:
            start = global_check(texts(args))
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


def any_args(args: Sequence[Word]) -> str:
    """The check of a subcommand that takes any arguments."""
    return ""


def first_operand_in(*allowed: str, default_ok: bool = True) -> Check:
    """`git stash list`, `git remote -v`: the first operand must be a read-only verb (a glob never is one)."""
    verbs = frozenset(allowed)

    def rule(args: Sequence[Word]) -> str:
        ops = operands(texts(args))
        if not ops:
            return "" if default_ok else "no read-only verb"
        return "" if ops[0] in verbs else f"{ops[0]!r} is not a read-only verb"

    return rule


def given(args: Sequence[str], names: Iterable[str], short_values: str = "") -> list[tuple[int, str | None]]:
    """Where the options `names` are given in `args` and their values (None: given last, without one).

    A long option counts by any prefix (see `long_option`), with `=value` or the next word; a short one also
    inside a cluster (`-uoFILE`, `-uo FILE`), which ends at a letter of `short_values` (its value follows).
    The index is of the word that holds the option. Words after `--` are operands.
    """
    names = tuple(names)
    longs = [name for name in names if name.startswith("--")]
    shorts = "".join(name[1] for name in names if len(name) == 2 and name[0] == "-" and name[1] != "-")
    found: list[tuple[int, str | None]] = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        following = args[i + 1] if i + 1 < len(args) else None
        if long_option(arg, longs):
            found.append((i, arg.partition("=")[2] if "=" in arg else following))
        elif arg.startswith("-") and not arg.startswith("--"):
            for pos in range(1, len(arg)):
                if arg[pos] in shorts:
                    found.append((i, arg[pos + 1 :] or following))
                    break
                if arg[pos] in short_values:
                    break
    return found
