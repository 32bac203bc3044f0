"""A Bash command seen as permission rules see it: what it runs, and which files it reads and writes.

Every simple command anywhere in the parse tree counts (after `&&`, `||`, `;`, `|`, newlines, inside
subshells, `$(…)`, loops and functions), so `npm test && rm -rf /` is two commands, not one that starts
with `npm test`. Rules match a command's words joined by single spaces, quotes removed. Deny and ask
rules also see each `Reading` of it (`commands.wrappers`): through wrappers, program paths and global
options, and into the command lines that shells, `eval`, `watch` and the like run, which are split here
like the command itself.

Files: redirections, and the operands of recognised commands (`commands.operands`), relative to the folder
each part runs in. A `cd` or `pushd` inside the command moves that folder for what follows; since a `cd`
may fail, what follows is checked in the folder before it too. A folder that is not known (`cd $D`) makes
the paths after it unknown.

When the command cannot be parsed, `parsed` is False: nothing may then be allowed on the strength of its
parts, deny and ask rules are matched against the raw text, and a Bash rule that could apply asks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp_codetools.commands import git_runs, operands, wrappers
from mcp_codetools.commands.classify import MAX_PARSED_CHARS, scan_word
from mcp_codetools.commands.filesets import Files, literal_folder
from mcp_codetools.commands.parsing import Parsed, parse
from mcp_codetools.commands.readings import Reading, join

_WRITING_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
_READING_REDIRECTS = frozenset({"<", "<>"})
_MAX_NESTING = 8
_MAX_FOLDERS = 6
"""Folders a command's parts may run in (after `cd`s) before they count as not known."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One simple command: its words as bash would pass them, without leading assignments."""

    words: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    readings: tuple[Reading, ...] = field(default=(), compare=False)
    """What it runs, as deny and ask rules see it (the first is the words as written)."""
    guesses: tuple[Reading, ...] = field(default=(), compare=False)
    """What an unknown program among its words may run (`prlimit git push`): rules that agree ask."""

    @property
    def text(self) -> str:
        """The words joined by spaces: what a `Bash(...)` rule's pattern is matched against."""
        return " ".join(self.words)

    def unwrapped(self) -> SimpleCommand:
        """The command a wrapper runs (`timeout 5 rm x` → `rm x`), repeatedly; itself when not wrapped."""
        if len(self.readings) < 2:
            return self
        return SimpleCommand(self.readings[-1].words)


@dataclass(frozen=True, slots=True)
class CommandParts:
    """Everything a command line runs, reads and writes, as far as the parse tells.

    Paths are as the command names them, joined to the folder the part runs in (relative to the call's
    working directory; `~` not expanded).
    """

    commands: tuple[SimpleCommand, ...]
    write_targets: tuple[str, ...]
    complete: bool
    """False when parts of the command could not be seen (a parse error, an expansion that names a command)."""
    notes: tuple[str, ...] = field(default=())
    read_targets: tuple[str, ...] = ()
    tree_reads: tuple[str, ...] = ()
    """Folders read with everything under them (`grep -r`, `rg --hidden`, `cp -r`)."""
    visible_tree_reads: tuple[str, ...] = ()
    """Folders read whole except for hidden names (`rg`, `ag`)."""
    unknown_writes: tuple[str | None, ...] = ()
    """Folders under which files are written that the command does not name (None: anywhere)."""
    unknown_reads: tuple[str | None, ...] = ()
    config_writes: tuple[str, ...] = ()
    """Why the command changes git's configuration or makes git run a program: asked as a protected write."""
    parsed: bool = True
    glob_reads: tuple[str, ...] = ()
    """Operands with globs (`cat .en*`): bash replaces them with the names they match, found on disk."""
    glob_writes: tuple[str, ...] = ()
    unseen_writes: tuple[str, ...] = ()
    """Why the command may write files anywhere (`git checkout BRANCH` rewrites the working tree, a command
    that does not parse): asked where any Read or Edit path rule lies.

    Not a protected-path question: git manages its own `.git`, and asking at every `git pull` would teach
    a user to say yes. The sandbox keeps protected paths read-only whatever git checks out.
    """
    top_writes: tuple[tuple[str, str], ...] = ()
    """(folder, name): written relative to the repository's top, that folder or one above it (`git apply`)."""

    @property
    def open_readings(self) -> Iterator[Reading]:
        """Readings with words that are not known: rules that could apply to them ask."""
        for command in self.commands:
            for reading in command.readings:
                if reading.open_from is not None:
                    yield reading
            yield from command.guesses


def split_command(command: str, parsed: Parsed | None = None) -> CommandParts:
    """The parts of a command line, from its parse when the caller has it; a huge one is not parsed (incomplete)."""
    if len(command) > MAX_PARSED_CHARS:
        return _TOO_LONG
    if not command.strip():
        return CommandParts((), (), True)
    walk = _Walk(("",), 0)
    if not walk.run(command, parsed):  # it may read or write anything
        return CommandParts(
            (), (), False, tuple(walk.notes), unknown_reads=(None,), parsed=False,
            unseen_writes=("a command that could not be parsed",),
        )  # fmt: skip
    return walk.parts()


_TOO_LONG = CommandParts(
    (), (), False, ("too long to analyse",), unknown_reads=(None,), parsed=False,
    unseen_writes=("a command too long to analyse",),
)  # fmt: skip


class _Walk:
    def __init__(self, folders: tuple[str | None, ...], depth: int) -> None:
        self.folders = folders
        self.depth = depth
        self.source = ""
        self.commands: list[SimpleCommand] = []
        self.files = Files()
        self.redirect_writes: list[str] = []
        self.redirect_reads: list[str] = []
        self.complete = True
        self.notes: list[str] = []
        self.quoted_heredocs: frozenset[int] = frozenset()

    def run(self, command: str, parsed: Parsed | None = None) -> bool:
        """Walk `command` (its parse when the caller has it); False when it does not parse."""
        parsed = parsed if parsed is not None else parse(command)
        self.source = parsed.source
        self.quoted_heredocs = parsed.quoted_heredocs
        if parsed.error is not None:
            self.complete = False
            self.notes.append(f"not parsed ({parsed.error})")
            return False
        for tree in parsed.trees:
            self.visit(tree, "")
        return True

    def parts(self) -> CommandParts:
        files = self.files
        return CommandParts(
            tuple(self.commands),
            tuple(dict.fromkeys([*self.redirect_writes, *files.writes])),
            self.complete,
            tuple(self.notes),
            read_targets=tuple(dict.fromkeys([*self.redirect_reads, *files.reads])),
            tree_reads=tuple(dict.fromkeys(files.trees)),
            visible_tree_reads=tuple(dict.fromkeys(files.visible_trees)),
            unknown_writes=tuple(dict.fromkeys(files.unknown_writes)),
            unknown_reads=tuple(dict.fromkeys(files.unknown_reads)),
            config_writes=tuple(dict.fromkeys(files.config)),
            glob_reads=tuple(dict.fromkeys(files.glob_reads)),
            glob_writes=tuple(dict.fromkeys(files.glob_writes)),
            top_writes=tuple(dict.fromkeys(files.top_writes)),
            unseen_writes=tuple(dict.fromkeys(files.unseen_writes)),
        )

    def visit(self, node: Any, stdin: str | None) -> None:
        kind = node.kind
        if kind == "command":
            self._command(node, stdin)
            return
        if kind == "redirect":
            self._redirect(node)
            return
        if kind == "pipeline":
            fed: str | None = stdin
            for part in node.parts:
                if part.kind in ("pipe", "reservedword"):
                    continue
                self.visit(part, fed)
                fed = self._piped_script(part)
            return
        # `( … ) > f`, `{ …; } < f`, `while …; done <<< s`: the redirections of a compound command are its
        # parts' too, made in the folder it starts in; its parts share its input.
        for redirect in getattr(node, "redirects", None) or ():
            stdin = self._redirect(redirect, stdin)
        for child in _children(node):
            self.visit(child, stdin)

    def _command(self, node: Any, stdin: str | None) -> None:
        words: list[str] = []
        known: list[bool] = []
        globbed: set[int] = set()
        assignments: list[str] = []
        for part in node.parts:
            if part.kind == "assignment" and not words:
                assignments.append(scan_word(self._text(part)).text)
            elif part.kind == "word":
                word = scan_word(self._text(part))
                if word.glob:
                    globbed.add(len(words))
                known.append(
                    not word.expands and not word.brace and not (word.glob and not words) and not _stack_dir(word.text)
                )
                words.append(word.text)
            elif part.kind == "redirect":
                stdin = self._redirect(part, stdin)
            for inner in _children(part):
                if part.kind != "redirect":
                    self.visit(inner, "")
        if not words:
            return
        if not known[0]:
            self.complete = False  # `$CMD args`: what runs is not in the text
            self.notes.append("the command name is an expansion")
        found = wrappers.readings(words, known, stdin)
        if any(git_runs.env_assignment(a) for a in assignments) and words[0].rsplit("/", 1)[-1] == "git":
            found.program_config.append("an environment variable before git changes what it runs")
        simple = SimpleCommand(tuple(words), tuple(assignments), tuple(found.readings), tuple(found.guesses))
        self.commands.append(simple)
        self.files.config.extend(found.program_config)
        for reading in found.readings:
            self._files(reading, words, known, globbed, stdin)
        for script in found.scripts:
            self._nested(script)
        for reading in found.readings:  # `builtin cd src`, `command cd src` move the folder too
            if reading.words and reading.words[0] in ("cd", "pushd", "popd"):
                opened = reading.open_from if reading.open_from is not None else len(reading.words)
                self._cd(list(reading.words), [i < opened for i in range(len(reading.words))])
                break

    def _files(
        self, reading: Reading, words: list[str], known: list[bool], globbed: set[int], stdin: str | None
    ) -> None:
        """What one reading reads and writes, in each folder it may run in."""
        local = Files()
        if reading.words == tuple(words):
            operands.learn(reading.words, known, local, frozenset(globbed), stdin=stdin)
        else:  # a reading through a wrapper: its words are a tail of the command's, so globs are found by text
            start = len(words) - len(reading.words)
            marks = [
                i < reading.open_from if reading.open_from is not None else True for i in range(len(reading.words))
            ]
            tail = frozenset(i - start for i in globbed if i >= start) if start >= 0 else frozenset()
            appended = reading.open_from is not None and reading.open_from >= len(reading.words)
            operands.learn(reading.words, marks, local, tail, appended=appended, stdin=stdin)
        for folder in self.folders:
            where = join(folder, reading.chdir) if folder is not None else None
            self._add_files(local, where)

    def _add_files(self, local: Files, folder: str | None) -> None:
        files = self.files
        if folder is None:
            if local.reads or local.trees or local.unknown_reads or local.glob_reads or local.visible_trees:
                files.unknown_reads.append(None)
            if local.writes or local.unknown_writes or local.glob_writes or local.top_writes:
                files.unknown_writes.append(None)
            files.config.extend(local.config)
            files.unseen_writes.extend(local.unseen_writes)
            return
        files.reads.extend(_under(folder, p) for p in local.reads)
        files.glob_reads.extend(_under(folder, p) for p in local.glob_reads)
        files.glob_writes.extend(_under(folder, p) for p in local.glob_writes)
        files.trees.extend(_under(folder, p) for p in local.trees)
        files.visible_trees.extend(_under(folder, p) for p in local.visible_trees)
        files.writes.extend(_under(folder, p) for p in local.writes)
        files.unknown_writes.extend(None if p is None else _under(folder, p) for p in local.unknown_writes)
        files.unknown_reads.extend(None if p is None else _under(folder, p) for p in local.unknown_reads)
        files.top_writes.extend((_under(folder, f) if f else folder, name) for f, name in local.top_writes)
        files.unseen_writes.extend(local.unseen_writes)
        files.config.extend(local.config)

    def _cd(self, words: list[str], known: list[bool]) -> None:
        """A `cd` moves where the parts after it run; it may fail, so they may also run where they were."""
        targets = [w for w in words[1:] if not w.startswith("-") or w == "-" or _rotates(w)]
        if words[0] == "popd":
            return  # back to a folder the parts already may run in
        if not targets:
            target: str | None = "~" if words[0] == "cd" else None  # a bare pushd swaps the stack's top two
        elif not known[words.index(targets[0])] or targets[0] == "-" or (words[0] == "pushd" and _rotates(targets[0])):
            target = None  # `cd -`, `pushd +1`: a folder from the environment or the stack
        else:
            target = targets[0]
        moved = [None if f is None or target is None else _under(f, target) for f in self.folders]
        folders = tuple(dict.fromkeys([*self.folders, *moved]))
        if len(folders) > _MAX_FOLDERS:
            folders = (*folders[: _MAX_FOLDERS - 1], None)
        self.folders = folders

    def _nested(self, script: str | None) -> None:
        """A command line the command runs as text (`bash -c '…'`): walked in the same folders."""
        if script is None or self.depth >= _MAX_NESTING:
            self.complete = False
            self.notes.append("runs a command line whose text is not known")
            self.commands.append(SimpleCommand((), readings=(Reading((), 0),)))
            self.files.unknown_reads.append(None)  # it may read or write anything
            self.files.unknown_writes.append(None)
            return
        if not script.strip():
            return
        inner = _Walk(self.folders, self.depth + 1)
        if not inner.run(script):
            self.complete = False
            self.notes.extend(inner.notes)
            self.commands.append(SimpleCommand((), readings=(Reading((), 0),)))
            return
        self.commands.extend(inner.commands)
        self.redirect_writes.extend(inner.redirect_writes)
        self.redirect_reads.extend(inner.redirect_reads)
        for name in (
            "reads",
            "trees",
            "writes",
            "unknown_writes",
            "unknown_reads",
            "config",
            "glob_reads",
            "glob_writes",
            "visible_trees",
            "top_writes",
            "unseen_writes",
        ):
            getattr(self.files, name).extend(getattr(inner.files, name))
        self.folders = tuple(dict.fromkeys([*self.folders, *inner.folders]))[:_MAX_FOLDERS]
        if not inner.complete:
            self.complete = False
            self.notes.extend(inner.notes)

    def _piped_script(self, part: Any) -> str | None:
        """What `echo '…' |` or `printf '…' |` feeds the next part; None when it is not literal text."""
        if part.kind != "command":
            return None
        words = []
        for sub in part.parts:
            if sub.kind != "word":
                return None
            word = scan_word(self._text(sub))
            if word.expands or word.glob or word.brace:
                return None
            words.append(word.text)
        if not words or words[0] not in ("echo", "printf"):
            return None
        args = words[1:]
        if words[0] == "echo":
            while args and re.fullmatch(r"-[neE]+", args[0]):
                if "e" in args[0]:
                    return None  # escapes: the text differs
                args = args[1:]
            return " ".join(args)
        if len(args) != 1 or "%" in args[0] or re.search(r"\\[^n]", args[0]):
            return None
        return args[0].replace("\\n", "\n")

    def _redirect(self, node: Any, stdin: str | None = "") -> str | None:
        """Record what a redirection writes or reads; return the command's input as a script, if it is one."""
        target = node.output
        kind = node.type
        if kind in ("<<", "<<-"):
            heredoc = getattr(node, "heredoc", None)
            if heredoc is None:
                return None
            body = heredoc.value.rsplit("\n", 1)[0] if "\n" in heredoc.value else ""
            quoted = any(node.pos[0] <= at <= node.pos[0] + 2 for at in self.quoted_heredocs)
            return body if quoted or not any(c in body for c in "$`") else None
        if isinstance(target, int | str):
            return stdin
        word = scan_word(self._text(target))
        for inner in _children(target):
            self.visit(inner, "")
        if kind == "<<<":
            return None if word.expands else word.text
        text = word.text
        if text == "/dev/null" or text.isdigit() or text == "-" or (kind in (">&", "<&") and text.isdigit()):
            return stdin
        unknown = word.expands or word.glob or word.brace or _stack_dir(text)
        for folder in self.folders:
            if unknown or folder is None:
                where = None if folder is None else literal_folder(text)
                dest = None if where is None or folder is None else _under(folder, where)
                (self.files.unknown_writes if kind in _WRITING_REDIRECTS else self.files.unknown_reads).append(dest)
                if kind == "<>":
                    self.files.unknown_reads.append(dest)
                continue
            path = _under(folder, text)
            if kind in _WRITING_REDIRECTS:
                self.redirect_writes.append(path)
            if kind in _READING_REDIRECTS:
                self.redirect_reads.append(path)
        return None if kind == "<" else stdin  # a file as input: a shell reading it runs what is not known

    def _text(self, node: Any) -> str:
        start, end = node.pos
        return self.source[start:end]


_STACK_DIR = re.compile(r"^~(?:[+-]|\d)")


def _stack_dir(text: str) -> bool:
    """`~+/x`, `~-/x`, `~1/x`: the current, previous or a stacked folder, not known from the text."""
    return _STACK_DIR.match(text) is not None


def _rotates(word: str) -> bool:
    return word[:1] in "+-" and word[1:].isdigit()


def _under(folder: str, path: str) -> str:
    """`path` as seen from the call's folder, when a part runs in `folder` (relative to it)."""
    if not folder or path.startswith(("/", "~")):
        return path
    return f"{folder.rstrip('/')}/{path}" if folder != "/" else f"/{path}"


def _children(node: Any) -> Iterator[Any]:
    for name in ("parts", "list", "command"):
        child = getattr(node, name, None)
        if isinstance(child, list):
            yield from child
        elif child is not None and hasattr(child, "kind"):
            yield child
