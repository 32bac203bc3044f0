"""git's subcommands that only read, each with the options that make it write a file or run a program.

One entry per subcommand serves both questions: "is `git <sub> …` read-only?" (no writing or running option
given) and "which files does it write?" (the value of each writing option). Every subcommand that walks
revisions takes git's diff options, and with them `--output=FILE`, which writes FILE: `git log`, and just as
well `git rev-list`, `git blame`, `git shortlog`, `git reflog` and `git stash list`, though their `-h` does not
show it. tests/test_git_table.py checks the entries against the installed git: every option `git <sub> -h` (and
git's own completion list) shows that looks like it writes or names a file must be placed here.

Long options count by any prefix of two letters or more after `--` (`--outp=F` is `--output=F`), as in
`read_only.long_option`: refusing an abbreviation git would reject costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GitOptions:
    """What one read-only git subcommand's options can do beyond reading."""

    writes: tuple[str, ...] = ()
    """Long options whose value is a file git writes (`--output=FILE`, `--output FILE`)."""
    runs: tuple[str, ...] = ()
    """Long options that make git run a program."""
    runs_short: str = ""
    """Short option letters that make git run a program (`git grep -O`)."""
    reads: tuple[str, ...] = ()
    """Options whose value is a file git reads (`blame --contents FILE`): known, not writing."""
    inert: tuple[str, ...] = ()
    """Options whose name looks like a file or output option but is neither (for the installed-git check)."""


_DIFF_INERT = ("--output-indicator-new", "--output-indicator-old", "--output-indicator-context", "--dirstat-by-file")
DIFF = GitOptions(
    writes=("--output",),
    runs=("--ext-diff", "--open-files-in-pager"),
    runs_short="O",  # `-O<orderfile>` reads a file; refused with grep's `-O` (a pager) rather than told apart
    reads=("-O",),
    inert=_DIFF_INERT,
)
"""Commands that take diff options (all that walk revisions do): `--output` writes, `--ext-diff` runs a program."""

BLAME = GitOptions(
    writes=DIFF.writes,
    runs=DIFF.runs,
    runs_short=DIFF.runs_short,
    reads=("--contents", "--ignore-revs-file", "-S"),
    inert=(*_DIFF_INERT, "-f", "--show-name", "--no-ignore-revs-file"),
)
PLAIN = GitOptions()
"""Options that neither write nor run anything."""

READ_ONLY: dict[str, GitOptions] = {
    **dict.fromkeys(("log", "show", "whatchanged", "rev-list", "shortlog", "range-diff"), DIFF),
    **dict.fromkeys(("diff", "diff-tree", "diff-files", "diff-index"), DIFF),
    "blame": BLAME,
    "annotate": BLAME,
    "reflog": DIFF,  # `git reflog [show]` is `git log -g`
    "stash": DIFF,  # `list` takes log's options, `show` diff's
    "grep": GitOptions(
        runs=("--open-files-in-pager", "--ext-grep"),
        runs_short="O",
        reads=("-f",),
        inert=("-o", "-F", "--files-with-matches", "--files-without-match", "--no-files-with-matches",
               "--no-files-without-match"),
    ),  # fmt: skip
    "ls-files": GitOptions(reads=("--exclude-from",), inert=("-o",)),
    "status": GitOptions(inert=("--untracked-files", "--no-untracked-files")),
    "branch": GitOptions(inert=("-f",)),
    "tag": GitOptions(reads=("--file", "-F"), inert=("-f", "--no-file")),  # a message file: tag creates, not listed
    "config": GitOptions(reads=("--file", "-f", "--blob"), inert=("--no-file",)),
    **dict.fromkeys(
        ("ls-tree", "rev-parse", "describe", "show-ref", "for-each-ref", "merge-base", "name-rev", "cat-file",
         "count-objects", "check-ignore", "check-attr", "cherry", "version", "worktree", "remote"),
        PLAIN,
    ),
}  # fmt: skip
"""Every git subcommand the read-only list allows (some only with a read-only verb: `stash list`)."""

WRITING: dict[str, tuple[str, ...]] = {
    **{sub: options.writes for sub, options in READ_ONLY.items() if options.writes},
    "format-patch": ("--output",),
    "archive": ("--output",),
}
"""Long options whose value is a file a git subcommand writes, read-only or not."""
WRITING_SHORT: dict[str, str] = {"archive": "o"}
"""Short options whose value is a file a git subcommand writes (`git archive -o FILE`)."""
WRITES_UNDER: dict[str, tuple[str, ...]] = {
    "format-patch": ("-o", "--output-directory"),
    "bugreport": ("-o", "--output-directory"),
    "diagnose": ("-o", "--output-directory"),
}
"""Options whose value is a folder a git subcommand writes files into that it does not name."""


def selects(arg: str, names: tuple[str, ...]) -> str | None:
    """The long option among `names` that `arg` (`--name`, `--name=value` or a prefix, `--na`) selects."""
    if not arg.startswith("--"):
        return None
    key = arg.partition("=")[0]
    if len(key) < 3:
        return None
    return next((name for name in names if name.startswith(key)), None)


def written_files(sub: str, args: list[str]) -> list[str]:
    """The files `git <sub> args` writes through its options (`--output=F`, `--output F`, `-oF`)."""
    long = WRITING.get(sub, ())
    short = WRITING_SHORT.get(sub, "")
    found: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        following = args[i + 1] if i + 1 < len(args) else None
        if long and selects(arg, long):
            value = arg.partition("=")[2] if "=" in arg else following
            if value is not None:
                found.append(value)
        elif short and arg.startswith("-") and not arg.startswith("--") and arg[1:2] in short:
            value = arg[2:] or following
            if value is not None:
                found.append(value)
    return found


def written_folders(sub: str, args: list[str]) -> list[str]:
    """Folders `git <sub> args` writes files into without naming them (`format-patch -o DIR`)."""
    options = WRITES_UNDER.get(sub, ())
    found: list[str] = []
    for i, arg in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else None
        if arg in options or (arg.startswith("-o") and not arg.startswith("--") and "-o" in options and len(arg) > 2):
            value = arg[2:] if arg.startswith("-o") and len(arg) > 2 else following
        elif "=" in arg and arg.partition("=")[0] in options:
            value = arg.partition("=")[2]
        else:
            continue
        if value is not None:
            found.append(value)
    return found
