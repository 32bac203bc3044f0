"""The docs that describe the code stay true: every module is in docs/ARCHITECTURE.md, every error code in the table."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from mcp_codetools import errors

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "mcp_codetools"


def modules() -> list[str]:
    """Every module of the package as the doc names it: `files/paths.py`, `server.py` (no `__init__`/`__main__`)."""
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )


def named_in(doc: str) -> set[str]:
    """The modules a doc names: `pkg/name.py`, or a bare `name.py` after a `pkg/...` on the same list line."""
    found: set[str] = set()
    for line in doc.replace("\n  ", " ").splitlines():
        folder = ""
        for name in re.findall(r"`([\w/]+\.py)`", line):
            if "/" in name:
                folder = name.rsplit("/", 1)[0] + "/"
                found.add(name)
            else:
                found.add(folder + name)
    return found


def test_the_architecture_doc_lists_every_module() -> None:
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = [name for name in modules() if name not in named_in(doc)]
    assert not missing, f"docs/ARCHITECTURE.md does not describe: {', '.join(missing)}"


def test_the_architecture_doc_names_no_module_that_is_gone() -> None:
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    gone = sorted(name for name in named_in(doc) if not (PACKAGE / name).exists() and not (REPO / name).exists())
    assert not gone, f"docs/ARCHITECTURE.md names modules that do not exist: {', '.join(gone)}"


def test_the_error_table_matches_the_codes() -> None:
    table = (errors.__doc__ or "").split("```")[1]
    documented = [line.split()[0] for line in table.strip().splitlines()[1:] if line and not line.startswith(" ")]
    assert documented == list(typing.get_args(errors.ErrorCode))
