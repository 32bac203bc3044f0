"""The functions `dataclasses` writes for each class, compiled once per start snapshot key and kept beside it.

A dataclass's `__init__`, `__repr__`, `__eq__` (and a frozen one's `__setattr__`, `__hash__`) are made as
source text and compiled when the class is created. A start from the snapshot creates ~117 of them (ours,
pydantic's, anyio's) before its first result: ~500 compiles, about a fifth of its CPU by then. While a start
that has a snapshot plan runs, `dataclasses` finds `exec` in its own globals before the builtin: the stand-in
here looks each text up in the code kept for this start's key and compiles only what it has not seen; what
it compiled is written back when the start-up is done. The key covers the Python and every source of the
package and the SDK (`fast_start.snapshot_key`), so a text missing from the file is only a miss.

The code runs as `exec` would run the text: compiled under the name `<string>` with no flags inherited (the
`dataclasses` module has no `__future__` imports). Like a `.pyc`, the file holds code this process runs, so it
is trusted on the snapshot's terms: a regular file of this user's that no one else can write, in the snapshot
folder, which never lies in a root; anything else (another format or key, a corrupt file) is ignored.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import stat
import sys
import threading
from types import CodeType
from typing import Any

FORMAT = 1
SUFFIX = ".code"


def code_path(snapshot_path: str) -> str:
    """Where the code for the snapshot at `snapshot_path` (`<key>.json`) is kept: `<key>.code`."""
    return os.path.splitext(snapshot_path)[0] + SUFFIX


class GeneratedCode:
    """The compiled texts for one key; `exec` stands in for the builtin inside `dataclasses` while installed."""

    def __init__(self, path: str, key: str) -> None:
        self.path = path
        self.key = key
        self._known: dict[str, bytes] = _load(path, key)
        """Each text's code, marshalled: only the texts this start meets are unmarshalled (the SDK's come later)."""
        self.loaded = len(self._known)
        """How many compiled texts the file held."""
        self.compiled = 0
        """How many texts were compiled here (not in the file)."""

    def exec(self, source: Any, globals: Any = None, locals: Any = None, **options: Any) -> None:
        """`exec(source, globals, locals)`, a text's compiled code taken from the file where it is there."""
        if globals is None:  # as the builtin: the caller's namespaces (`dataclasses` always passes its own)
            caller = sys._getframe(1)
            globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
        if isinstance(source, str):
            kept = self._known.get(source)
            code = _code(kept) if kept is not None else None
            if code is None:
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self._known[source] = marshal.dumps(code)
                self.compiled += 1
            source = code
        exec(source, globals, locals, **options)  # `closure=`, should a later `dataclasses` pass one

    def install(self) -> None:
        """`dataclasses` uses `self.exec` from now on (until `remove`)."""
        dataclasses.exec = self.exec  # type: ignore[attr-defined]

    def remove(self) -> None:
        """`dataclasses` uses the builtin again (a stand-in put there by someone else is left)."""
        if getattr(dataclasses, "exec", None) == self.exec:
            del dataclasses.exec  # type: ignore[attr-defined]

    def save(self) -> None:
        """Write the compiled texts (atomically, readable by this user only) when this start compiled any."""
        if not self.compiled:
            return
        data = marshal.dumps((FORMAT, self.key, dict(self._known)))
        temporary = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
                out.write(data)
            os.replace(temporary, self.path)
        except OSError:
            pass  # the next start compiles them again
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)

    def finish(self, save: bool = True) -> None:
        """The start-up is done: the builtin back in place, and what was compiled kept (`save`) for the next start."""
        self.remove()
        if save:
            self.save()
        self._known = {}  # ~1 MB the server need not hold


def _code(kept: bytes) -> CodeType | None:
    try:
        code = marshal.loads(kept)
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _load(path: str, key: str) -> dict[str, bytes]:
    """The compiled texts kept for `key`, or none (absent, untrusted, corrupt, another format or key)."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
                return {}
            data = marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if not (isinstance(data, tuple) and len(data) == 3 and data[0] == FORMAT and data[1] == key):
        return {}
    table = data[2]
    if not isinstance(table, dict):
        return {}
    return {text: code for text, code in table.items() if isinstance(text, str) and isinstance(code, bytes)}


def begin(snapshot_path: str, key: str) -> GeneratedCode | None:
    """The stand-in installed for a start with a snapshot plan; None where this Python has no `os.getuid`."""
    if not hasattr(os, "getuid"):
        return None
    generated = GeneratedCode(code_path(snapshot_path), key)
    generated.install()
    return generated
