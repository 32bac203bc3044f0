"""Which files `git …` reads and writes: what it names, what `--output=FILE` writes, what `git apply` writes.

Read from git's table (`commands.git`); `git checkout BRANCH`, `pull`, `reset --hard` and the like rewrite
files they do not name (`unseen_writes`), and `-c`, `--upload-pack` or `--template` that run programs are
protected writes (`config`).
"""

from __future__ import annotations

from mcp_codetools.commands import git, git_read_only
from mcp_codetools.commands.diffnames import diff_names, stripped
from mcp_codetools.commands.filesets import Files, joined, option_letters, option_values, strip_level, url_name
from mcp_codetools.commands.words import Word


def _git_apply(rest: list[str], files: Files, stdin: str | None) -> None:
    """`git apply`: the diff's names (from a here-document) under the repository's top; else not known."""
    values = frozenset({"-p", "-C", "--directory", "--exclude", "--include", "--whitespace"})
    operands, options = option_values(rest, values)
    names = diff_names(stdin) if stdin and (not operands or operands == ["-"]) else None
    if names is None:
        files.unknown_writes.append("")
        return
    strip = strip_level(options)
    strip = 1 if strip is None and not any(k == "-p" for k, _ in options) else strip
    directory = next((value for key, value in reversed(options) if key == "--directory"), "")
    prefixed, top = names
    for target in dict.fromkeys([*(c for n in prefixed for c in stripped(n, strip)), *top]):
        for name in (target, target + ".rej"):
            files.top_writes.append(("", joined(directory, name)))


def learn(name: str, args: list[str], files: Files, stdin: str | None) -> None:
    """What `git ARGS` reads and writes, from git's table (`commands.git`)."""
    sub = args[0] if args else ""
    rest = args[1:]
    if sub == "config" and git_read_only.GIT([Word(a) for a in args]):
        files.config.append("git config writes git's configuration")
    elif sub == "apply" and (
        not {"--check", "--stat", "--numstat", "--summary", "--cached"} & option_letters(rest) or "--apply" in rest
    ):
        _git_apply(rest, files, stdin)
    elif sub == "am" and not {"--show-current-patch"} & option_letters(rest):
        files.unknown_writes.append("")
        files.unseen_writes.append("`git am`")
    elif sub in ("rm", "restore", "checkout"):
        operands, _ = option_values(rest, git.PATH_VALUES)
        paths = operands[operands.index("--") + 1 :] if "--" in rest and "--" in operands else operands
        files.writes.extend(paths)  # a branch name counts as a path too: it can only ask more
        files.unknown_writes.extend(paths)  # a folder (`.`) with what is under it
        if sub == "checkout" and "--" not in rest:
            files.unseen_writes.append("`git checkout`")
        if any(a.startswith("--pathspec-from-file") for a in rest):
            files.unknown_writes.append("")
    elif sub in ("clone", "init") or (sub == "worktree" and rest[:1] == ["add"]):
        operands, _ = option_values(rest[1:] if sub == "worktree" else rest, git.CLONE_VALUES)
        target = operands[-1] if operands and (sub != "clone" or len(operands) > 1) else None
        if sub == "clone" and target is None and operands:
            target = url_name(operands[0] if "://" in operands[0] else "x://x/" + operands[0]).removesuffix(".git")
        files.writes.append(target or ".")
        files.unknown_writes.append(target or "")
    elif _changes_the_tree(sub, rest):
        files.unseen_writes.append(f"`git {sub}`")
    elif sub in ("add", "stash", "commit", "hash-object", "diff", "show", "blame", "log", "grep", "cat-file", "mv"):
        operands, _ = option_values(rest)
        files.reads.extend(op for op in operands if op != ".")
        if sub == "mv":
            files.writes.extend(operands)
        if sub == "grep" and {"--no-index", "--untracked"} & set(rest):  # files git does not track, too
            patterned = any(a in ("-e", "-f") or a.startswith(("--regexp", "--file")) for a in rest)
            paths = rest[rest.index("--") + 1 :] if "--" in rest else operands if patterned else operands[1:]
            files.trees.extend(paths or ["."])
        if sub == "stash" and _changes_the_tree(sub, rest):
            files.unseen_writes.append("`git stash`")
        # `git show HEAD:.env`: a path in a revision; `git add .` is left to .gitignore (and the sandbox)
        files.reads.extend(op.split(":", 1)[1] for op in operands if ":" in op and op.split(":", 1)[1])
    for arg in rest:
        if arg.startswith(("--upload-pack", "--receive-pack", "--exec=", "-u")) and sub in git.REMOTE_PROGRAMS:
            if arg.startswith("-u") and sub != "clone":
                continue
            files.config.append(f"git {sub} {arg.partition('=')[0]} makes git run a program")
    if sub in ("clone", "init", "submodule") and any(a.startswith("--template") for a in rest):
        files.config.append(f"git {sub} --template installs hooks")
    files.writes.extend(git.written_files(sub, rest))  # `git rev-list --output=FILE`, `git archive -o FILE`
    files.unknown_writes.extend(git.written_folders(sub, rest))


def _changes_the_tree(sub: str, rest: list[str]) -> bool:
    """Whether a git subcommand may rewrite tracked or untracked files of the working tree it does not name."""
    if sub in git.TREE_CHANGERS:
        return True
    if sub == "reset":
        return bool({"--hard", "--merge", "--keep"} & set(rest))
    if sub == "stash":
        return not rest or rest[0] not in ("list", "show", "create", "store", "drop", "clear")
    if sub == "read-tree":
        return "-u" in rest
    return False
