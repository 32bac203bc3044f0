"""Which files a diff changes, read from its headers: what `patch` and `git apply` given that diff write.

Only a diff whose text is in the command itself (a here-document, a here-string, `echo '…' |`) is read
this way: a diff file on disk may change between the check and the run (a background job can rewrite
it), so its names are not known. The names are read generously (every header line, every split of a
`diff --git` line, the part before a tab and before a space), since a name counted in excess can only
ask more. A diff with a part whose file is not named (a normal or ed-style hunk), or one that makes a
symbolic link (a later name could write through it), gives None.
"""

from __future__ import annotations

import re

MAX_DIFF_CHARS = 1_000_000
"""A longer diff is not read: its names count as not known."""
MAX_NAMES = 2_000
_HEADERS = ("--- ", "+++ ", "*** ", "Index: ")
_UNPREFIXED = ("rename from ", "rename to ", "copy from ", "copy to ")
"""git's rename and copy lines name the path from the repository's top, with no `a/` to strip."""
_NAMELESS_HUNK = re.compile(r"^\d+(?:,\d+)?[acd](?:\d+(?:,\d+)?)?$")
"""A normal diff's (`1,2c3`) or an ed script's (`5d`) command: the hunk names no file."""
_LINK_MODES = ("new file mode 120000", "new mode 120000", "old mode 120000", "deleted file mode 120000")
_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}


def diff_names(text: str) -> tuple[list[str], list[str]] | None:
    """(names to strip with `-p`, names already from the top); None when the files cannot all be known."""
    if len(text) > MAX_DIFF_CHARS:
        return None
    prefixed: list[str] = []
    top: list[str] = []
    for line in text.splitlines():
        if _NAMELESS_HUNK.match(line.rstrip()):
            return None  # a normal or ed diff names no file: patch would take one from elsewhere
        if line.startswith(_LINK_MODES):
            return None  # a symbolic link the diff makes: a later name may write through it
        if line.startswith("diff --git "):
            rest = line[len("diff --git ") :]
            if '"' in rest:
                names = _quoted_words(rest)
                if names is None:
                    return None
                prefixed.extend(names)
            else:  # `a/x y b/x y`: every split at a space, since the names may hold spaces
                prefixed.extend(part for i, c in enumerate(rest) if c == " " for part in (rest[:i], rest[i + 1 :]))
        elif line.startswith(_HEADERS):
            rest = line.split(" ", 1)[1]
            name = _name(rest)
            if name is None:
                return None
            prefixed.extend((name, rest.split(" ", 1)[0]) if not rest.startswith('"') else (name,))
        elif line.startswith(_UNPREFIXED):
            name = _name(line.split(" ", 2)[2])
            if name is None:
                return None
            top.append(name)
        if len(prefixed) + len(top) > MAX_NAMES:
            return None
    prefixed = [n for n in dict.fromkeys(prefixed) if n and n != "/dev/null"]
    top = [n for n in dict.fromkeys(top) if n]
    return (prefixed, top) if prefixed or top else None


def stripped(name: str, strip: int | None) -> list[str]:
    """What `-p strip` leaves of `name`; every level when `strip` is None (patch's default depends on the diff).

    Each level is everything up to a slash (`-p1` leaves `abs/x` of `/abs/x`), as patch counts them.
    """
    if strip == 0:
        return [name]
    parts = re.split("/+", name)
    if strip is None:
        return [name, *(rest for i in range(1, len(parts)) if (rest := "/".join(parts[i:])))]
    if strip < len(parts):
        return ["/".join(parts[strip:])]
    return parts[-1:]  # too few levels: patch may fall back to another header, or the name itself


def _name(rest: str) -> str | None:
    """The name at the start of a header's text: up to a tab (a timestamp follows), or quoted."""
    if rest.startswith('"'):
        words = _quoted_words(rest)
        return words[0] if words else None
    return rest.split("\t", 1)[0].rstrip()


def _quoted_words(text: str) -> list[str] | None:
    """git's C-quoted names (a tab written as backslash-t, octal bytes) and plain words; None for an open quote."""
    words: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == " ":
            i += 1
        elif text[i] == '"':
            out = bytearray()
            i += 1
            while i < len(text) and text[i] != '"':
                if text[i] == "\\" and i + 1 < len(text):
                    octal = re.match(r"[0-7]{3}", text[i + 1 : i + 4])
                    if octal:
                        out.append(int(octal.group(), 8) & 0xFF)
                        i += 4
                        continue
                    escaped = text[i + 1]
                    out.extend(bytes([_ESCAPES[escaped]]) if escaped in _ESCAPES else escaped.encode())
                    i += 2
                else:
                    out.extend(text[i].encode())
                    i += 1
            if i >= len(text):
                return None
            words.append(out.decode("utf-8", "surrogateescape"))
            i += 1
        else:
            end = text.find(" ", i)
            end = len(text) if end < 0 else end
            words.append(text[i:end])
            i = end
    return words
