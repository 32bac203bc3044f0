"""A real package for the LSP benchmark: `rich`'s wheel from PyPI, downloaded once into the user's cache.

The wheel is fetched with pip (`pip download --only-binary`, so nothing is built) into
~/.cache/mcp-codetools-bench/ and extracted afresh into the run's temporary folder: 100 modules, 26,607 lines,
with `rich/console.py` (2,661 lines) as the large file.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "rich==13.9.4"
CACHE = Path.home() / ".cache" / "mcp-codetools-bench"


def fetch(dest: Path) -> Path:
    """`rich` extracted under `dest` (its wheel downloaded first when the cache lacks it); the project root."""
    name, version = PACKAGE.split("==")
    wheel = CACHE / f"{name}-{version}-py3-none-any.whl"
    if not wheel.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        print(f"downloading {PACKAGE} (wheel) into {CACHE} ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary",
                ":all:",
                PACKAGE,
                "-d",
                CACHE,
            ],
            check=True,
        )
    root = dest / f"{name}-{version}"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(root, [m for m in archive.namelist() if m.startswith(f"{name}/")])
    return root


def python_lines(root: Path) -> int:
    """Lines of the Python files under `root`."""
    return sum(len(path.read_text(encoding="utf-8").split("\n")) for path in root.rglob("*.py"))


@dataclass(frozen=True)
class Symbol:
    """A definition to ask findReferences about: its file, 1-based line and column, and name."""

    path: Path
    line: int
    character: int
    name: str


def definitions(root: Path, count: int) -> list[Symbol]:
    """`count` functions and classes spread evenly over the package (dunder methods left out), in a fixed order."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").split("\n")
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("__"):
                text = lines[node.lineno - 1]
                keyword = "class " if isinstance(node, ast.ClassDef) else "def "
                column = text.index(node.name, text.index(keyword)) + 1
                found.append(Symbol(path, node.lineno, column, node.name))
    return found[:: max(1, len(found) // count)][:count]


def method_line(path: Path, name: str) -> tuple[int, int]:
    """The 1-based line and column of `def name` in a file."""
    for number, text in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if text.lstrip().startswith(f"def {name}("):
            return number, text.index(name) + 1
    raise SystemExit(f"def {name} not found in {path}")
