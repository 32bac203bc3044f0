"""Which language servers can run here, and for which files.

Python is served out of the box by jedi-language-server, a dependency: it is pure Python, starts in a
fraction of a second and answers definitions, references, hovers and symbols from the source alone. It is
started through jedi_kept.py, which keeps jedi's analysis between requests while the project is unchanged.
Others are configured by the user (`[lsp.servers.NAME]`) and used when their program is on the PATH.

A server reads the project; it never runs the project's code. The built-in one starts isolated (`-I`: no
working folder or script folder on its import path, no `PYTHON*` variables, no user site), so a root's
`jedi.py` or `pygls/` is never imported in place of the package; jedi's own helper process is told the
same through `PYTHONSAFEPATH` and `PYTHONNOUSERSITE`. A server named `python` never learns of an activated
environment (jedi would run its interpreter) or of PYTHONPATH (its helper would import packages there to
reach their extension modules): those folders, and the venv's packages read from its folder, are handed
over as paths the server only parses (venvs.py).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import site
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_codetools.lsp.venvs import UNSEEN, extra_paths
from mcp_codetools.settings import LanguageServerEntry

KEPT_ENTRY = Path(__file__).with_name("jedi_kept.py")
"""jedi-language-server with jedi's analysis kept between requests (see jedi_kept.py)."""

LANGUAGE_IDS = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".go": "go",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".java": "java",
    ".rb": "ruby",
}


@dataclass(frozen=True)
class ServerSpec:
    """How to start one language server, and the file extensions it serves."""

    name: str
    command: tuple[str, ...]
    extensions: frozenset[str]
    initialization_options: dict[str, Any] = field(default_factory=dict)
    diagnostics: bool = True
    """Whether edits wait for its diagnostics (not worth it when it only repeats the syntax check)."""
    builtin: bool = False
    """Whether it is the built-in jedi server (whose documentSymbol this package answers itself: outline.py)."""

    @property
    def is_python(self) -> bool:
        """Whether this server stands for Python (the built-in one, or a table named python replacing it)."""
        return self.name == "python"

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """The server's environment made from Bash's (`base`): a Python one has no active venv or PYTHONPATH."""
        if not self.is_python:
            return base
        env = {name: value for name, value in base.items() if name not in UNSEEN}
        env.update(PYTHONSAFEPATH="1", PYTHONNOUSERSITE="1")
        return env

    def language_id(self, path: Path) -> str:
        """The LSP language id of a file this server serves."""
        return LANGUAGE_IDS.get(path.suffix.lower(), path.suffix.lower().lstrip(".") or "plaintext")

    def options_for(self, root: Path) -> dict[str, Any]:
        """Initialization options for a workspace root (Python: the packages of the project's own venv)."""
        options = dict(self.initialization_options)
        if self.is_python and (paths := extra_paths(root)):
            options.setdefault("workspace", {"extraPaths": paths})
        return options


def python_server() -> ServerSpec | None:
    """jedi-language-server run by this Python (None when it is not installed)."""
    found_spec = importlib.util.find_spec("jedi_language_server")
    if found_spec is not None:
        # -I is -E -P -s; a package installed in the user's site needs that site, so there only -E -P.
        user_site = site.getusersitepackages()
        origin = found_spec.origin or ""
        flags = ("-E", "-P") if user_site and origin.startswith(user_site + os.sep) else ("-I",)
        # Run by its path: under -I this package need not be importable (a checkout run without installing it).
        entry = f"import runpy; runpy.run_path({str(KEPT_ENTRY)!r}, run_name='__main__')"
        command: tuple[str, ...] = (sys.executable, *flags, "-c", entry)
    elif (found := shutil.which("jedi-language-server")) is not None:
        command = (found,)
    else:
        return None
    # jedi's only diagnostic is Python's first syntax error, which the edit check already reports in well
    # under a millisecond, and it publishes it after a 1 s debounce: edits do not wait for it, so it is not
    # asked to make it (a parse of each opened file, on a timer thread, beside the next request).
    options: dict[str, Any] = {"diagnostics": {"enable": False}}
    return ServerSpec("python", command, frozenset({".py", ".pyi"}), options, diagnostics=False, builtin=True)


def configured(table: Mapping[str, LanguageServerEntry]) -> list[ServerSpec]:
    """The servers of `[lsp.servers.NAME]` tables whose program is on the PATH (values checked by the config)."""
    specs = []
    for name, entry in table.items():
        if shutil.which(entry.command[0]) is not None:
            extensions = frozenset((e if e.startswith(".") else f".{e}").lower() for e in entry.extensions)
            options = dict(entry.initialization_options)
            specs.append(ServerSpec(name, entry.command, extensions, options, entry.diagnostics))
    return specs


def available(table: Mapping[str, LanguageServerEntry] | None = None) -> list[ServerSpec]:
    """Every server that can run here: the configured ones first (a table named python replaces the built-in)."""
    specs = configured(table or {})
    if not any(spec.name == "python" for spec in specs) and (builtin := python_server()) is not None:
        specs.append(builtin)
    return specs


def program_in(spec: ServerSpec, roots: Sequence[Path]) -> Path | None:
    """The server's program when a root holds it (found on a PATH that reaches into a project, or named there).

    Such a program is the project's, which a sandboxed command may have replaced: it is never started as a
    language server. The built-in server's interpreter is the one this server runs on, not the project's.
    """
    if spec.command[0] == sys.executable:
        return None
    found = shutil.which(spec.command[0])
    if found is None:
        return None
    # The link as found counts as well as its target: a `.venv/bin` link to a system program can be replaced.
    link = Path(os.path.realpath(os.path.dirname(os.path.abspath(found)))) / os.path.basename(found)
    for candidate in (link, Path(os.path.realpath(found))):
        if any(candidate == root or candidate.is_relative_to(root) for root in roots):
            return candidate
    return None


def for_file(specs: list[ServerSpec], path: Path) -> ServerSpec | None:
    """The first server that serves this file's extension."""
    suffix = path.suffix.lower()
    return next((spec for spec in specs if suffix in spec.extensions), None)
