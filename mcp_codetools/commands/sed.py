"""Is a sed invocation read-only, and what else does it do? Every script read the way GNU sed reads it.

Options first (no -i, no -f), then every script. `effects` reads the same grammar for the files a script
writes and reads (`w`, `r`, `s///w`) and the commands it runs (`e`), for the operand table and the wrapper
reading.

A script is read-only when each command only prints or edits the stream: p, P, =, l, q, Q, d, D, n,
N, g, G, h, H, x, z, F, blocks, `s` with flags among g, p, i, I, m, M and a number, and `y`. Everything
else (w, W, e, r, R, a, i, c, labels and branches, the `w` and `e` flags of `s`) is not, nor is anything
this reader cannot place: it fails closed.

Where a part ends follows GNU sed's rules, because a reader that ends a part elsewhere than sed does
sees other commands than sed runs (`s/[/]/;/w ./p` is one `s` command with the `w` flag, not an `s`
and a `p`):
- a part (regex, replacement, `y` string) ends at its unescaped delimiter; a backslash takes the next
  character, a newline too; an unescaped newline leaves the part unterminated;
- in a regex (an address or the pattern of `s`) a bracket expression is read whole, and the delimiter
  inside it is an ordinary character: `[` then an optional `^`, an optional `]`, up to the first `]`
  that does not close a `[:class:]`, `[=equiv=]` or `[.coll.]`; a backslash in it is an ordinary
  character;
- blanks may stand between an address, `!`, the command and each flag of `s`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp_codetools.commands.words import Word

_SED_FLAG_LETTERS = frozenset("nErszu")
_SED_LONG_FLAGS = frozenset(
    {
        "--quiet",
        "--silent",
        "--regexp-extended",
        "--separate",
        "--null-data",
        "--zero-terminated",
        "--unbuffered",
        "--posix",
        "--debug",
        "--sandbox",
    }
)
_PLAIN_COMMANDS = frozenset("=dDFgGhHnNpPzx}")
"""Commands without an argument: only blanks, then the end of the command, may follow."""
_NUMBER_COMMANDS = frozenset("qQl")
"""Commands with an optional number (exit code, line length)."""
_S_FLAGS = frozenset("gpiImM")
_BLANKS = " \t"
_SPACES = " \t\n\v\f\r"


def check_sed(args: Sequence[Word]) -> str:
    """The problem that keeps `sed args` from being read-only, or "" (options first, then each script).

    A script or an option's value holding a glob is refused: bash may make it another word, or several
    that shift the script to another place. File operands may hold globs (`check` refuses ones that
    could become options).
    """
    scripts: list[str] = []
    operands: list[Word] = []
    i = 0
    while i < len(args):
        word = args[i]
        arg = word.text
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--"):
            key, equals, value = arg.partition("=")
            if key in ("--expression", "--line-length"):
                if not equals:
                    if i >= len(args):
                        return f"sed option {arg!r} lacks its value"
                    word, value, i = args[i], args[i].text, i + 1
                if word.glob:
                    return f"{word.text!r} may expand to other words"
                if key == "--expression":
                    scripts.append(value)
            elif arg not in _SED_LONG_FLAGS:
                return f"sed option {arg!r} is not read-only"
        elif arg.startswith("-") and len(arg) > 1:
            for pos, letter in enumerate(arg[1:], start=1):
                if letter in _SED_FLAG_LETTERS:
                    continue
                if letter not in "el":
                    return f"sed option -{letter} is not read-only"
                value = arg[pos + 1 :]
                if not value:
                    if i >= len(args):
                        return f"sed option -{letter} lacks its value"
                    word, value, i = args[i], args[i].text, i + 1
                if word.glob:
                    return f"{word.text!r} may expand to other words"
                if letter == "e":
                    scripts.append(value)
                break
        else:
            operands.append(word)
    if not scripts:
        if not operands:
            return "sed without a script"
        if operands[0].glob:
            return f"the script {operands[0].text!r} may expand to other words"
        scripts.append(operands[0].text)
    for script in scripts:
        problem = script_problem(script)
        if problem:
            return problem
    return ""


class _Refused(Exception):
    """Raised inside the reader with the reason the script is not read-only."""


def script_problem(script: str) -> str:
    """The empty string when every sed command only prints or edits the stream (no w, W, e, r, R, a, i, c)."""
    try:
        _read_script(script)
    except _Refused as exc:
        return str(exc)
    return ""


@dataclass(slots=True)
class Effects:
    """What a sed script does beyond the stream (its `w`, `r`, `e` commands and the `w`, `e` flags of `s`).

    `runs` holds the command lines `e` runs; None for the pattern space run as a command (not known).
    """

    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    runs: list[str | None] = field(default_factory=list)


def effects(args: Sequence[str]) -> Effects | None:
    """What sed's scripts in `args` write, read and run; None when a script is not known or not readable.

    The same grammar as the read-only check, so the files and commands come from sed's one reader.
    """
    found = Effects()
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        key, equals, value = arg.partition("=")
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--") and len(key) > 3 and "--expression".startswith(key):
            if not equals:
                value, i = (args[i], i + 1) if i < len(args) else ("", i)
            scripts.append(value)
        elif arg.startswith("--") and len(key) > 3 and "--file".startswith(key):
            return None  # the script is a file
        elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
            for pos, letter in enumerate(arg[1:], start=1):
                if letter in "efl":
                    text = arg[pos + 1 :]
                    if not text:
                        text, i = (args[i], i + 1) if i < len(args) else ("", i)
                    if letter == "f":
                        return None
                    if letter == "e":
                        scripts.append(text)
                    break
        elif not arg.startswith("-") or arg == "-":
            operands.append(arg)
    if not scripts and operands:
        scripts.append(operands[0])
    try:
        for script in scripts:
            _read_script(script, found)
    except _Refused:
        return None
    return found


def _rest_of_line(s: str, i: int) -> tuple[str, int]:
    end = s.find("\n", i)
    end = len(s) if end < 0 else end
    return s[_blanks(s, i) : end], end


def _other_command(s: str, i: int, command: str, found: Effects) -> int:
    """Past a command that is not read-only, noting what it writes, reads or runs (GNU sed's one-line forms)."""
    if command in "wWrReaic":
        text, end = _rest_of_line(s, i)
        if command in "wW":
            found.writes.append(text)
        elif command in "rR":
            found.reads.append(text)
        elif command == "e":
            found.runs.append(text or None)
        else:  # `a text`, `a\` then lines that end in a backslash
            while end < len(s) and end > i and s[end - 1] == "\\":
                _, end = _rest_of_line(s, end + 1)
        return end
    if command in ":btT":  # a label, to a `;` or the end of the line (the shorter: a `w` after it is seen)
        while i < len(s) and s[i] not in ";\n":
            i += 1
        return i
    raise _Refused(f"sed command {command!r} is not read")


def _read_script(s: str, found: Effects | None = None) -> None:
    i, n = 0, len(s)
    while True:
        while i < n and (s[i] == ";" or s[i] in _SPACES):
            i += 1
        if i >= n:
            return
        if s[i] == "#":
            end = s.find("\n", i)
            i = n if end < 0 else end
            continue
        i = _blanks(s, _addresses(s, i))
        if i < n and s[i] == "!":
            i = _blanks(s, i + 1)
        if i >= n:
            raise _Refused("sed address without a command")
        command = s[i]
        i += 1
        if command == "{":
            continue
        if command in _PLAIN_COMMANDS:
            i = _end_of_command(s, i, command)
        elif command in _NUMBER_COMMANDS:
            i = _end_of_command(s, _digits(s, _blanks(s, i)), command)
        elif command == "s":
            delimiter, i = _delimiter(s, i)
            i = _part(s, _part(s, i, delimiter, regex=True), delimiter, regex=False)
            i = _s_flags(s, i, found)
        elif command == "y":
            delimiter, i = _delimiter(s, i)
            i = _part(s, _part(s, i, delimiter, regex=False), delimiter, regex=False)
            i = _end_of_command(s, i, command)
        elif found is not None:
            i = _other_command(s, i, command, found)
        else:
            raise _Refused(f"sed command {command!r} is not read-only")


def _blanks(s: str, i: int) -> int:
    while i < len(s) and s[i] in _BLANKS:
        i += 1
    return i


def _digits(s: str, i: int) -> int:
    while i < len(s) and s[i].isascii() and s[i].isdigit():
        i += 1
    return i


def _end_of_command(s: str, i: int, command: str) -> int:
    """After a command: blanks, then `;`, a newline, the end, or a `}` or `#` that is read next."""
    i = _blanks(s, i)
    if i >= len(s) or s[i] in ";\n":
        return i
    if s[i] in "}#":
        return i
    raise _Refused(f"sed command {command!r} is followed by {s[i]!r}")


def _addresses(s: str, i: int) -> int:
    """Skip an address and an optional second one after a comma; return where the command starts."""
    after = _address(s, i, first=True)
    if after == i:
        return i
    comma = _blanks(s, after)
    if comma < len(s) and s[comma] == ",":
        start = _blanks(s, comma + 1)
        second = _address(s, start, first=False)
        if second == start:
            raise _Refused("sed address after a comma is not readable")
        return second
    return after


def _address(s: str, i: int, *, first: bool) -> int:
    r"""Skip one address (`5`, `1~2`, `$`, `/re/I`, `\%re%`, and after a comma `+3`, `~4`); i when there is none."""
    n = len(s)
    if i >= n:
        return i
    c = s[i]
    if c in "/\\":
        if c == "\\":
            delimiter, i = _delimiter(s, i + 1)
        else:
            delimiter, i = c, i + 1
        i = _part(s, i, delimiter, regex=True)
        while True:
            flag = _blanks(s, i)
            if flag < n and s[flag] in "IM":
                i = flag + 1
            else:
                return i
    if c.isascii() and c.isdigit():
        i = _digits(s, i)
        step = _blanks(s, i)
        if step < n and s[step] == "~":
            return _digits(s, _blanks(s, step + 1))
        return i
    if c == "$":
        return i + 1
    if c in "+~" and not first:
        return _digits(s, _blanks(s, i + 1))
    return i


def _delimiter(s: str, i: int) -> tuple[str, int]:
    if i >= len(s) or s[i] in "\n\\" or not s[i].isascii():
        raise _Refused("sed delimiter is not readable")
    return s[i], i + 1


def _part(s: str, i: int, delimiter: str, *, regex: bool) -> int:
    """Skip one delimited part from i; return the index after its closing delimiter."""
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\n":
            break
        if c == delimiter:
            return i + 1
        if c == "\\":
            i += 2
        elif c == "[" and regex:
            i = _bracket(s, i + 1)
        else:
            i += 1
    raise _Refused("unterminated sed command")


def _bracket(s: str, i: int) -> int:
    """Skip a bracket expression from just after its `[`; return the index after its closing `]`."""
    n = len(s)
    if i < n and s[i] == "^":
        i += 1
    if i < n and s[i] == "]":
        i += 1
    # 0: plain, 1: just after a `[`, 2: inside `[:`/`[=`/`[.` (closer in `inner`), 3: just after that closer
    state, inner = 0, ""
    while i < n:
        c = s[i]
        i += 1
        if c == "\n":
            break
        if c == "[":
            state = 1 if state == 0 else state
            continue
        if c in ".:=" and state == 1:
            state, inner = 2, c
            continue
        if c == inner and state == 2:
            state = 3
            continue
        if c == "]":
            if state in (0, 1):
                return i
            if state == 3:
                state = 0
        state &= ~1
    raise _Refused("unterminated bracket expression in a sed regex")


def _s_flags(s: str, i: int, found: Effects | None = None) -> int:
    """Skip the flags of `s` (blanks allowed between them) up to the end of the command (`found`: note w and e)."""
    n = len(s)
    while True:
        i = _blanks(s, i)
        if i >= n or s[i] in ";\n}#":
            return i
        flag = s[i]
        if flag in _S_FLAGS:
            i += 1
        elif flag.isascii() and flag.isdigit():
            i = _digits(s, i)
        elif flag == "w" and found is not None:
            text, end = _rest_of_line(s, i + 1)
            found.writes.append(text)
            return end
        elif flag == "e" and found is not None:
            found.runs.append(None)
            i += 1
        elif flag == "w":
            raise _Refused("the w flag of sed's s writes a file")
        elif flag == "e":
            raise _Refused("the e flag of sed's s runs the pattern space as a command")
        else:
            raise _Refused(f"sed s flag {flag!r} is not read-only")
