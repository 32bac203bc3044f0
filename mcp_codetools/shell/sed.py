"""
Is a sed invocation read-only? Options first (no -i, no -f), then every script, command by command.

A script is read-only when each command only prints or edits the stream: p, P, =, l, q, Q, d, D, n,
N, g, G, h, H, x, z, blocks, `s` with flags among g, p, i, I, m, M and a number, and `y`. Everything
else (w, W, e, r, R, a, i, c, the `w` and `e` flags of `s`) is not, nor is anything this scanner
cannot read: it fails closed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SED_FLAG_LETTERS = frozenset("nErszu")
_SED_LONG_FLAGS = frozenset(
    {"--quiet", "--silent", "--regexp-extended", "--separate", "--null-data", "--unbuffered", "--posix", "--debug"}
)
_SED_SIMPLE = frozenset("pP=lqQdDnNgGhHxz}")
_SED_S_FLAGS = frozenset("gpiImM0123456789")
_ADDRESS = re.compile(r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\(.)(?:(?!\1)[^\\\n]|\\.)*\1)")


def check_sed(args: Sequence[str]) -> str:
    """The problem that keeps `sed args` from being read-only, or "" (options first, then each script)."""
    scripts: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg.startswith("--"):
            key, _, value = arg.partition("=")
            if key in ("--expression", "--line-length"):
                if not value and i < len(args):
                    value, i = args[i], i + 1
                if key == "--expression":
                    scripts.append(value)
            elif arg not in _SED_LONG_FLAGS:
                return f"sed option {arg!r} is not read-only"
        elif arg.startswith("-") and len(arg) > 1:
            for pos, letter in enumerate(arg[1:], start=1):
                if letter in _SED_FLAG_LETTERS:
                    continue
                if letter in "el":
                    value = arg[pos + 1 :]
                    if not value and i < len(args):
                        value, i = args[i], i + 1
                    if letter == "e":
                        scripts.append(value)
                    break
                return f"sed option -{letter} is not read-only"
        else:
            rest.append(arg)
    if not scripts:
        if not rest:
            return "sed without a script"
        scripts.append(rest[0])
    for script in scripts:
        problem = script_problem(script)
        if problem:
            return problem
    return ""


def script_problem(script: str) -> str:
    """The empty string when every sed command only prints or edits the stream (no w, W, e, r, R, a, i, c)."""
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "#":
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        i = _skip_address(script, i)
        if i < n and script[i] == "!":
            i += 1
        while i < n and script[i] in " \t":
            i += 1
        if i >= n:
            return "sed address without a command"
        c = script[i]
        if c == "{":
            i += 1
            continue
        if c in _SED_SIMPLE:
            i += 1
            while i < n and script[i].isdigit():
                i += 1
        elif c in "sy":
            i = _skip_delimited(script, i + 1, 2)
            if i < 0:
                return "unterminated sed command"
            if c == "s":
                while i < n and script[i] in _SED_S_FLAGS:
                    i += 1
        else:
            return f"sed command {c!r} is not read-only"
        if i < n and script[i] not in " \t\n;}":
            return f"sed command {c!r} has a flag that is not read-only"
    return ""


def _skip_address(script: str, i: int) -> int:
    match = _ADDRESS.match(script, i)
    if match is None:
        return i
    i = match.end()
    if i < len(script) and script[i] == ",":
        second = re.compile(r"(?:[+~]\d+)").match(script, i + 1) or _ADDRESS.match(script, i + 1)
        if second is not None:
            i = second.end()
    return i


def _skip_delimited(script: str, i: int, parts: int) -> int:
    """Skip `parts` delimited fields after `s`/`y` (the delimiter is the char at i); -1 if unterminated."""
    if i >= len(script) or script[i] in "\\\n":
        return -1
    delimiter = script[i]
    i += 1
    for _ in range(parts):
        while i < len(script) and script[i] != delimiter:
            i += 2 if script[i] == "\\" else 1
        if i >= len(script):
            return -1
        i += 1
    return i
