"""Is a Bash command read-only? Decided on the parse tree, never on the raw string.

The command is parsed with bashlex. It is read-only only when it is a list (`;`, `&&`, `||`, newlines)
of pipelines of simple commands, each on the allowlist in `rules` with arguments the list allows, and
nothing else: no assignments, no command or process substitution, no parameter expansion, no `&`, no
subshell, compound command or function, no output redirection except to /dev/null or a descriptor
duplicate, no here-document. Anything bashlex cannot parse, and anything a check fails on, is not
read-only.

bashlex's own quote removal is not trusted (it turns `"-"'delete'` into `-'delete'`, where bash runs
`-delete`), so every word is re-read from its source text by `scan_word`, which also notes what bash
would still expand (globs, braces, `$`) after parsing.

The answer only decides whether a call may run beside other read-only calls (and skips the stale-read
check). It is not a security boundary: a repository's own config can make `git diff` run a program.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcp_codetools.commands import read_only
from mcp_codetools.commands.parsing import Parsed, parse
from mcp_codetools.commands.words import Word

MAX_PARSED_CHARS = 10_000
"""Longer commands are not parsed (bounded cost per call) and count as not read-only."""

_SEPARATORS = {";", "&&", "||", "\n"}
_DEVNULL = "/dev/null"


@dataclass(frozen=True, slots=True)
class Analysis:
    """What the classifier learned about one command."""

    read_only: bool
    reason: str
    """Why it is not read-only ("" when it is)."""
    last_command: str | None
    """Name of the command whose status is the command's exit status, when the parse tells it."""


class NotReadOnly(Exception):
    """Raised inside the walk with the reason; turned into an Analysis at the top."""


def is_read_only(command: str) -> bool:
    """Whether every part of `command` only reads, so it may run without a question."""
    return analyze(command).read_only


def analyze(command: str, parsed: Parsed | None = None) -> Analysis:
    """Classify `command`, from its parse when the caller has it (`commands.analysis` builds both once)."""
    if not command.strip():
        return Analysis(False, "empty command", None)
    if len(command) > MAX_PARSED_CHARS:
        return Analysis(False, "too long to analyse", None)
    parsed = parsed if parsed is not None else parse(command)
    if parsed.error is not None:
        return Analysis(False, f"not parsed ({parsed.error})", None)
    if parsed.timed:
        return Analysis(False, "the time keyword", None)
    trees, command = parsed.trees, parsed.source
    try:
        last = _last_command(trees[-1], command) if trees else None
    except Exception:  # a tree shape this walk does not know: the status is simply not attributed
        last = None
    try:
        for tree in trees:
            _check_node(tree, command)
    except NotReadOnly as exc:
        return Analysis(False, str(exc), last)
    except Exception as exc:  # a tree or word a check did not expect: the verdict fails closed
        return Analysis(False, f"not analysed ({type(exc).__name__})", last)
    return Analysis(True, "", last)


_QUOTED_OR_EXPANDED = re.compile(r"[\\'\"$`()<>*?\[{]")
"""The characters `scan_word` reads specially: a word without any is its own text, with nothing to expand."""


def scan_word(source: str) -> Word:
    """Remove quotes from one word's source the way bash does, noting what bash would still expand."""
    if not _QUOTED_OR_EXPANDED.search(source):
        return Word(source)  # `_scan` would copy it character by character and note nothing
    return _scan(source)


def _scan(source: str) -> Word:
    out: list[str] = []
    expands = glob = brace = glob_first = False
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            if i + 1 < n and source[i + 1] != "\n":
                out.append(source[i + 1])
            i += 2
        elif c == "'":
            end = source.find("'", i + 1)
            end = n if end < 0 else end
            out.append(source[i + 1 : end])
            i = end + 1
        elif c == '"':
            i, inner_expands = _double_quoted(source, i + 1, out)
            expands = expands or inner_expands
        else:
            if c in "$`()<>":
                expands = True
            elif c in "*?" or (c == "[" and "]" in source[i:]):
                glob = True
                glob_first = glob_first or not out
            elif c == "{":
                close = source.find("}", i + 1)
                if close > 0 and ("," in source[i:close] or ".." in source[i:close]):
                    brace = True
            out.append(c)
            i += 1
    return Word("".join(out), expands=expands, glob=glob, glob_first=glob_first, brace=brace)


def _double_quoted(source: str, i: int, out: list[str]) -> tuple[int, bool]:
    """Read a "..." body from index i; return the index after the closing quote and whether it expands."""
    expands = False
    n = len(source)
    while i < n and source[i] != '"':
        c = source[i]
        if c == "\\" and i + 1 < n and source[i + 1] in '$`"\\\n':
            if source[i + 1] != "\n":
                out.append(source[i + 1])
            i += 2
            continue
        if c in "$`":
            expands = True
        out.append(c)
        i += 1
    return i + 1, expands


def _check_node(node: Any, source: str) -> None:
    kind = node.kind
    if kind == "list":
        for part in node.parts:
            if part.kind == "operator":
                if part.op not in _SEPARATORS:
                    raise NotReadOnly(f"operator {part.op!r}")
            else:
                _check_node(part, source)
    elif kind == "pipeline":
        for part in node.parts:
            if part.kind == "pipe" or (part.kind == "reservedword" and part.word == "!"):
                continue
            _check_node(part, source)
    elif kind == "command":
        _check_command(node, source)
    else:
        raise NotReadOnly(f"{kind} is not a simple command")


def _check_command(node: Any, source: str) -> None:
    words: list[Word] = []
    for part in node.parts:
        if part.kind == "word":
            words.append(_word(part, source))
        elif part.kind == "redirect":
            _check_redirect(part, source)
        else:
            raise NotReadOnly(f"{part.kind} in a command")
    if not words:
        raise NotReadOnly("a command with no name")
    name, args = words[0], words[1:]
    if name.glob or name.brace or "/" in name.text or not name.text:
        raise NotReadOnly(f"command name {name.text!r} is not a plain name")
    problem = read_only.check(name.text, args)
    if problem:
        raise NotReadOnly(problem)


def _word(node: Any, source: str) -> Word:
    if _has_expansion(node):
        raise NotReadOnly(f"expansion in {node.word!r}")
    word = scan_word(source[node.pos[0] : node.pos[1]])
    if word.expands:
        raise NotReadOnly(f"expansion in {word.text!r}")
    return word


def _has_expansion(node: Any) -> bool:
    return any(part.kind in ("commandsubstitution", "processsubstitution", "parameter") for part in _parts(node))


def _parts(node: Any) -> Iterable[Any]:
    return getattr(node, "parts", None) or ()


def _check_redirect(node: Any, source: str) -> None:
    kind = node.type
    target = node.output
    if kind in ("<", "<<<"):
        if not isinstance(target, int):
            _word(target, source)
        return
    if kind in (">&", "<&") and (isinstance(target, int) or target == "-"):
        return
    if kind in (">", ">>", ">|", "&>", "&>>", ">&") and not isinstance(target, int | str):
        if _word(target, source).text == _DEVNULL:
            return
    raise NotReadOnly(f"redirection {kind}")


def _last_command(tree: Any, source: str) -> str | None:
    """The command that sets the exit status: the last of a list, the last of a pipeline (no `!`)."""
    node = tree
    while True:
        if node.kind == "list":
            commands = [part for part in node.parts if part.kind != "operator"]
            if not commands:
                return None
            node = commands[-1]
        elif node.kind == "pipeline":
            if any(part.kind == "reservedword" for part in node.parts):
                return None
            node = node.parts[-1]
        elif node.kind == "command":
            words = [part for part in node.parts if part.kind == "word"]
            return scan_word(source[words[0].pos[0] : words[0].pos[1]]).text if words else None
        else:
            return None
