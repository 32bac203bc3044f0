"""git in one table: its global options and subcommands, and what each only reads, writes or runs.

Three questions are answered from these entries and nowhere else: "is `git …` read-only?"
(`git_read_only`), "what does it run?" (`git_runs`: the subcommand behind global options, aliases, dashed
programs, command lines in options and config) and "which files does it write?" (`git_files`).

Every subcommand that walks revisions takes git's diff options, and with them `--output=FILE`, which writes
FILE: `git log`, and just as well `git rev-list`, `git blame`, `git shortlog`, `git reflog` and `git stash list`,
though their `-h` does not show it. tests/test_git_table.py checks the entries against the installed git: every
option `git <sub> -h` (and git's completion list) shows that looks like it writes or names a file is placed here.

Long options of a subcommand count by any prefix of two letters or more after `--` (`--outp=F` is
`--output=F`): refusing an abbreviation git would reject costs nothing. Global options are matched whole, as
git matches them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from mcp_codetools.commands.checks import long_option


@dataclass(frozen=True, slots=True)
class GlobalOption:
    """One of git's own options, before the subcommand."""

    value: bool = False
    """It takes a value: the next word, or after `=` for a long option."""
    read_only: bool = False
    """A command with it may still be read-only (it changes neither what git runs nor which config it reads)."""
    effect: str = ""
    """"folder" (`-C`: where git runs), "config" (`-c KEY=VALUE`: asked when the key runs a program)."""
    asks: str = ""
    """Why the option makes git run a program or read other config: asked about as a protected write."""


_EXEC_PATH = "git --exec-path runs git's commands from another folder"
GLOBALS: dict[str, GlobalOption] = {
    "-C": GlobalOption(value=True, read_only=True, effect="folder"),
    "-c": GlobalOption(value=True, effect="config"),
    **dict.fromkeys(("--git-dir", "--work-tree", "--namespace"), GlobalOption(value=True, read_only=True)),
    "--config-env": GlobalOption(value=True, asks="git --config-env sets config from the environment"),
    **dict.fromkeys(("--super-prefix", "--attr-source", "--list-cmds"), GlobalOption(value=True)),
    "--exec-path": GlobalOption(asks=_EXEC_PATH),  # `--exec-path=DIR` (the `=` is optional: no next word)
    **dict.fromkeys(
        "-p --paginate -P --no-pager --no-replace-objects --no-optional-locks --bare --literal-pathspecs "
        "--glob-pathspecs --noglob-pathspecs --icase-pathspecs --version".split(),
        GlobalOption(read_only=True),
    ),
    **dict.fromkeys(
        "--no-lazy-fetch --no-advice --html-path --man-path --info-path -v --help -h".split(), GlobalOption()
    ),
}  # fmt: skip
"""git's global options; any other word with a dash before the subcommand makes what follows not known."""

COMMANDS = frozenset(
    """
    add am annotate apply archimport archive bisect blame branch bugreport bundle cat-file check-attr check-ignore
    check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean clone column commit
    commit-graph commit-tree config count-objects credential credential-cache credential-store cvsexportcommit
    cvsimport cvsserver daemon describe diagnose diff diff-files diff-index diff-tree difftool fast-export
    fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck
    fsck-objects fsmonitor--daemon gc get-tar-commit-id gitk grep gui hash-object help hook http-backend
    http-fetch http-push imap-send index-pack init init-db instaweb interpret-trailers lfs log ls-files ls-remote
    ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-one-file merge-tree
    mergetool mktag mktree multi-pack-index mv name-rev notes p4 pack-objects pack-redundant pack-refs patch-id
    prune prune-packed pull push quiltimport range-diff read-tree rebase receive-pack reflog refs remote repack
    replace replay request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack sh-i18n
    sh-setup shell shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace
    submodule subtree svn switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
    update-server-info upload-archive upload-pack var verify-commit verify-pack verify-tag version whatchanged
    worktree write-tree
    """.split()
)
"""git's own commands. Any other word is an alias or a `git-NAME` program: what it runs is not known."""
PUSHING = frozenset({"send-pack", "http-push"})
"""The plumbing that pushes, read as `git push` too: a rule against pushing means any push."""


@dataclass(frozen=True, slots=True)
class Subcommand:
    """What one read-only git subcommand's options can do beyond reading."""

    writes: tuple[str, ...] = ()
    """Long options whose value is a file git writes (`--output=FILE`, `--output FILE`)."""
    runs: tuple[str, ...] = ()
    """Long options that make git run a program."""
    runs_short: str = ""
    """Short option letters that make git run a program (`git grep -O`)."""
    changes: tuple[str, ...] = ()
    """Long options that change refs or config (`branch --delete`): not read-only, no file named."""
    changes_short: str = ""
    short_values: str = ""
    """Short options whose value follows in the same word (`-SOops` searches `Oops`): the cluster ends there."""
    verbs: tuple[str, ...] | None = None
    """Read-only only when the first operand is one of these (`stash list`); None: any operands."""
    bare: bool = True
    """With `verbs`: read-only with no operand too (`git remote`), or not (`git stash` stashes)."""
    listing: bool = False
    """An operand creates something unless a listing option is given (`git branch NAME`, `git tag NAME`)."""
    reads: tuple[str, ...] = ()
    """Options whose value is a file git reads (`blame --contents FILE`): known, not writing."""
    inert: tuple[str, ...] = ()
    """Options whose name looks like a file or output option but is neither (for the installed-git check)."""


_DIFF_INERT = ("--output-indicator-new", "--output-indicator-old", "--output-indicator-context", "--dirstat-by-file")
DIFF = Subcommand(
    writes=("--output",),
    short_values="SGUMCBLlXn",
    runs=("--ext-diff", "--open-files-in-pager"),
    runs_short="O",  # `-O<orderfile>` reads a file; refused with grep's `-O` (a pager) rather than told apart
    reads=("-O",),
    inert=_DIFF_INERT,
)
"""Commands that take diff options (all that walk revisions do): `--output` writes, `--ext-diff` runs a program."""
_BLAME = Subcommand(
    writes=DIFF.writes,
    runs=DIFF.runs,
    runs_short=DIFF.runs_short,
    short_values=DIFF.short_values,
    reads=("--contents", "--ignore-revs-file", "-S"),
    inert=(*_DIFF_INERT, "-f", "--show-name", "--no-ignore-revs-file"),
)
_REFS = ("--delete", "--force", "--create-reflog")
_PLAIN = Subcommand()

READ_ONLY: dict[str, Subcommand] = {
    **dict.fromkeys(("log", "show", "whatchanged", "rev-list", "shortlog", "range-diff"), DIFF),
    **dict.fromkeys(("diff", "diff-tree", "diff-files", "diff-index"), DIFF),
    "blame": _BLAME,
    "annotate": _BLAME,
    "reflog": replace(DIFF, verbs=("show", "exists")),  # `git reflog [show]` is `git log -g`
    "stash": replace(DIFF, verbs=("list", "show"), bare=False),  # `list` takes log's options, `show` diff's
    "grep": Subcommand(
        runs=("--open-files-in-pager", "--ext-grep"),
        runs_short="O",
        reads=("-f",),
        inert=("-o", "-F", "--files-with-matches", "--files-without-match", "--no-files-with-matches",
               "--no-files-without-match"),
    ),
    "branch": Subcommand(
        changes=(*_REFS, "--move", "--copy", "--set-upstream-to", "--unset-upstream", "--edit-description", "--track",
                 "--no-track"),
        changes_short="dDmMcCfut",
        listing=True,
        inert=("-f",),
    ),
    "tag": Subcommand(
        changes=(*_REFS, "--annotate", "--sign", "--local-user", "--message", "--file", "--edit"),
        changes_short="dasufmFe",
        listing=True,
        reads=("--file", "-F"),
        inert=("-f", "--no-file"),
    ),
    "worktree": Subcommand(verbs=("list",), bare=False),
    "remote": Subcommand(verbs=("show", "get-url")),
    "config": Subcommand(reads=("--file", "-f", "--blob"), inert=("--no-file",)),  # see CONFIG_* below
    "ls-files": Subcommand(reads=("--exclude-from",), inert=("-o",)),
    "status": Subcommand(inert=("--untracked-files", "--no-untracked-files")),
    **dict.fromkeys(
        ("ls-tree", "rev-parse", "describe", "show-ref", "for-each-ref", "merge-base", "name-rev", "cat-file",
         "count-objects", "check-ignore", "check-attr", "cherry", "version"),
        _PLAIN,
    ),
}  # fmt: skip
"""Every git subcommand the read-only list allows (some only with a read-only verb: `stash list`)."""
LIST_MODE = frozenset({"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at"})
"""With one of these, `git branch`'s and `git tag`'s operands are patterns, not names to create."""

CONFIG_READING = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"})
CONFIG_WRITING = ("--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit")
CONFIG_VERBS = frozenset({"set", "unset", "edit", "rename-section", "remove-section"})
"""`git config` reads only with a reading option or verb and none that writes."""

WRITING: dict[str, tuple[str, ...]] = {
    **{sub: entry.writes for sub, entry in READ_ONLY.items() if entry.writes},
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
TREE_CHANGERS = frozenset(
    "switch merge rebase pull cherry-pick revert clean bisect checkout-index sparse-checkout submodule".split()
)
"""Subcommands that may rewrite files of the working tree they do not name."""
PATH_VALUES = frozenset({"-s", "--source", "-b", "-B", "--orphan", "--conflict", "-m"})
"""Options of `checkout`, `restore` and `rm` whose value is not a path."""
CLONE_VALUES = frozenset(
    "-b --branch -o --origin --depth --reference --reference-if-able -c --config --template --separate-git-dir "
    "-u --upload-pack -j --jobs --filter --shallow-since --shallow-exclude --bundle-uri --object-format "
    "--initial-branch --ref-format --server-option -s".split()
)
"""Options of `clone`, `init` and `worktree add` whose value is not the target folder."""
REMOTE_PROGRAMS = frozenset({"fetch", "pull", "push", "clone", "ls-remote", "archive", "remote"})
"""Subcommands whose `--upload-pack`, `--receive-pack` or `--exec` runs a program (asked about)."""

RUNS_COMMAND_LINE: dict[str, tuple[str, ...]] = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "filter-branch": ("--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter",
                      "--commit-filter", "--tag-name-filter"),
}  # fmt: skip
"""Subcommands' options whose value is a command line git runs (`submodule foreach`, `bisect run`: by position)."""
CONFIG_RUNS = re.compile(
    r"^(?:core\.(?:hookspath|fsmonitor|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)"
    r"|sequence\.editor|diff\.external|diff\..+\.(?:textconv|command)|merge\..+\.driver"
    r"|filter\..+\.(?:clean|smudge|process)|credential\.(?:.+\.)?helper|gpg\.(?:.+\.)?program|pager\..+"
    r"|uploadpack\.packobjectshook|include\.path|includeif\..+\.path|protocol\..+|remote\..+\.(?:receivepack|uploadpack)"
    r"|interactive\.difffilter|instaweb\..+|web\.browser|browser\..+\.(?:cmd|path)"
    r"|mergetool\..+\.cmd|difftool\..+\.cmd|man\..+\.(?:cmd|path)|sendemail\..+|ssh\.variant|http\..+)",
    re.I | re.S,
)
"""Config keys whose value names a program git runs, or more config it reads (with `-c`: asked about)."""
ENV = re.compile(
    r"^(?:GIT_CONFIG\w*|GIT_SSH\w*|GIT_EXTERNAL_DIFF|GIT_PAGER|GIT_EDITOR|GIT_SEQUENCE_EDITOR|"
    r"GIT_ASKPASS|GIT_PROXY_COMMAND|GIT_EXEC_PATH|GIT_DIR|GIT_WORK_TREE)="
)
"""Environment variables before git that change what it runs or which config it reads."""


def selects(arg: str, names: tuple[str, ...]) -> str | None:
    """The long option among `names` that `arg` (`--name`, `--name=value` or a prefix, `--na`) selects."""
    return long_option(arg, names)


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
