"""Which language servers can run here, and for which files.

Python is served out of the box by jedi-language-server, a dependency: it is pure Python, starts in a
fraction of a second and answers definitions, references, hovers and symbols from the source alone.
Others are configured by the user (`[lsp.servers.NAME]`) and used when their program is on the PATH.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_codetools.settings import LanguageServerEntry

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

    def language_id(self, path: Path) -> str:
        """The LSP language id of a file this server serves."""
        return LANGUAGE_IDS.get(path.suffix.lower(), path.suffix.lower().lstrip(".") or "plaintext")

    def options_for(self, root: Path) -> dict[str, Any]:
        """Initialization options for a workspace root (Python: the project's own virtual environment)."""
        options = dict(self.initialization_options)
        if self.name == "python":
            venv = next(
                (root / d / "bin" / "python" for d in (".venv", "venv") if (root / d / "bin" / "python").exists()), None
            )
            if venv is not None:
                options.setdefault("workspace", {"environmentPath": str(venv)})
        return options


def python_server() -> ServerSpec | None:
    """jedi-language-server run by this Python (None when it is not installed)."""
    if importlib.util.find_spec("jedi_language_server") is not None:
        command: tuple[str, ...] = (sys.executable, "-c", "from jedi_language_server.cli import cli; cli()")
    elif (found := shutil.which("jedi-language-server")) is not None:
        command = (found,)
    else:
        return None
    # jedi's only diagnostic is Python's first syntax error, which the edit check already reports in well
    # under a millisecond, and it publishes it after a 1 s debounce: edits do not wait for it.
    return ServerSpec("python", command, frozenset({".py", ".pyi"}), diagnostics=False)


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


def for_file(specs: list[ServerSpec], path: Path) -> ServerSpec | None:
    """The first server that serves this file's extension."""
    suffix = path.suffix.lower()
    return next((spec for spec in specs if suffix in spec.extensions), None)
