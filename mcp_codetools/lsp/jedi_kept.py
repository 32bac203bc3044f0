"""The built-in Python server: jedi-language-server, with jedi's analysis kept between requests.

Runs inside the server's own process (servers.py starts this file by its path under `python -I`); it imports
only jedi and jedi-language-server, never this package.

jedi-language-server makes a new `jedi.Script` for every request, and with it a new `InferenceState`: every
findReferences infers again each use of the name in every module holding it, so a common name (`render`,
`open`, `move`) cost 1-4 s on `rich` each time. Here the Scripts of one unchanged project share one
`InferenceState`, so what one request inferred (classes, imports, attribute types) answers the next. Kept
analysis must never describe text that changed: it is dropped whenever an open document differs from its file
in a new way, or a Python file under the root appears, disappears or changes on disk (a walk of stat calls before each
request), and after `MAX_USES` requests or `MAX_AGE_S` seconds (the installed packages may change too). A
project too big to walk within `MAX_WALK_FILES` files or `MAX_WALK_S` gets a fresh state each time, as before.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Any

MAX_USES = 500
"""Requests one kept state answers before it is dropped (its caches only grow)."""
MAX_AGE_S = 300.0
"""How long one kept state lives: the installed packages it read may change under it."""
GC_YOUNG = 50_000
"""Allocations between collections of the youngest generation (Python's default: 700)."""
MAX_WALK_FILES = 5_000
MAX_WALK_S = 0.25
_SKIPPED = frozenset({"__pycache__", "node_modules", "site-packages", ".venv", "venv", ".tox", ".git"})


def project_fingerprint(root: str) -> tuple[tuple[str, int, int], ...] | None:
    """Each Python file under `root` with its change time and size; None when the walk goes past its bounds."""
    found: list[tuple[str, int, int]] = []
    stop = time.monotonic() + MAX_WALK_S
    folders = [root]
    while folders:
        if time.monotonic() > stop:
            return None
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.name.startswith(".") or entry.name in _SKIPPED:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.name.endswith((".py", ".pyi")):
                        st = entry.stat(follow_symlinks=False)
                        found.append((entry.path, st.st_mtime_ns, st.st_size))
                        if len(found) > MAX_WALK_FILES:
                            return None
        except OSError:
            continue
    return tuple(sorted(found))


class KeptState:
    """One `InferenceState` for the Scripts of a project while nothing they read has changed."""

    def __init__(self, make: Any) -> None:
        self._make = make
        self.state: Any = None
        self.key: Any = None
        self.uses = 0
        self.born = 0.0
        self.wanted: Any = None
        """The key the next Script is made under (None: make it a fresh state, kept by nobody)."""

    def factory(self, project: Any, environment: Any = None, script_path: Any = None) -> Any:
        """Stands for `InferenceState(...)` in `jedi.api`: the kept one when the key still holds.

        Only the server's main thread shares it (jedi is not thread-safe; semantic tokens run in threads).
        """
        if threading.current_thread() is not threading.main_thread():
            return self._make(project, environment=environment, script_path=script_path)
        key, self.wanted = self.wanted, None
        if key is None:
            return self._make(project, environment=environment, script_path=script_path)
        fresh = (
            self.state is None
            or self.key != key
            or self.uses >= MAX_USES
            or time.monotonic() - self.born > MAX_AGE_S
            or self.state.project is not project
        )
        if fresh:
            self.state = self._make(project, environment=environment, script_path=script_path)
            self.key, self.uses, self.born = key, 0, time.monotonic()
        self.uses += 1
        return self.state


class Documents:
    """Which open documents differ from their files: only those make the kept analysis stale.

    The client opens every file it asks about, so a new document alone must not drop the analysis: one whose
    text is its file's (checked once per version) changes nothing jedi read.
    """

    def __init__(self) -> None:
        self._same: dict[tuple[str, Any], bool] = {}
        self._disk: Any = None

    def key(self, documents: dict[str, Any], disk: Any) -> tuple[tuple[str, Any], ...]:
        """The (uri, version) of each open document whose text is not its file's (`disk`: the files' fingerprint)."""
        if disk != self._disk:  # a file changed: a document that matched it may not any more
            self._same, self._disk = {}, disk
        changed = []
        for uri, document in documents.items():
            seen = (uri, document.version)
            if seen not in self._same:
                self._same[seen] = _same_as_file(document)
            if not self._same[seen]:
                changed.append(seen)
        return tuple(sorted(changed))


def _same_as_file(document: Any) -> bool:
    try:
        with open(document.path, encoding="utf-8", newline="") as handle:
            return bool(handle.read() == document.source)
    except (OSError, UnicodeDecodeError, TypeError):
        return False


def install() -> None:
    """Make jedi-language-server's Scripts share a kept `InferenceState` (see the module's docstring)."""
    import jedi.api  # type: ignore[import-untyped]
    from jedi_language_server import jedi_utils, server

    kept = KeptState(jedi.api.InferenceState)
    documents = Documents()
    jedi.api.InferenceState = kept.factory
    plain = jedi_utils.script

    def script(project: Any, document: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return plain(project, document)
        root = getattr(project, "path", None)
        disk = project_fingerprint(str(root)) if root is not None else None
        kept.wanted = (
            None if disk is None else (str(root), disk, documents.key(server.SERVER.workspace.text_documents, disk))
        )
        try:
            return plain(project, document)
        finally:
            kept.wanted = None

    jedi_utils.script = script


def main() -> None:
    """Start jedi-language-server on stdio with the kept analysis."""
    # jedi makes objects by the million, most of them kept: collecting the young ones less often cut a
    # request's CPU time by about a sixth on `rich` (p90 315 -> 260 ms with the kept state, in-process).
    gc.set_threshold(GC_YOUNG, 20, 100)
    install()
    from jedi_language_server.cli import cli

    cli()


if __name__ == "__main__":
    main()
