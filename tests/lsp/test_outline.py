"""The built-in server's documentSymbol comes from Python's parser: jedi's outline, exact and without a server."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_codetools.lsp.outline import python_outline
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

SOURCE = """\
import os
from typing import Any

X = 1
A, (B, *C) = 1, (2, 3)
if X:
    Z: int = 3
for I in range(3):
    pass
with open("f") as fh:
    pass
SQUARES = [n * n for n in range(3)]


def f(a, b=1):
    local = 1

    def inner():
        deep = 2

    class InnerC:
        attr = 1

    return inner


@decorator
class C(Base):
    attr = 1
    typed: int

    def __init__(me, v):
        me.v = v
        me.w: int = 2
        me.p, me.q = 1, 2
        local = 3

    async def m(self):
        self.late = 1
"""

OUTLINE = """\
4:1 Variable X
5:1 Variable A
5:5 Variable B
5:9 Variable C
7:5 Variable Z
8:5 Variable I
10:19 Variable fh
12:1 Variable SQUARES
15:5 Function f
  18:9 Function inner
  21:11 Class InnerC
    22:9 Property attr
28:7 Class C
  29:5 Property attr
  30:5 Property typed
  32:9 Method __init__
  33:12 Property v
  34:12 Property w
  35:12 Property p
  35:18 Property q
  38:15 Method m"""


async def test_a_python_files_outline_comes_from_its_syntax_without_starting_a_server(call: Caller, root: Path) -> None:
    path = root / "shapes.py"
    path.write_text(SOURCE, encoding="utf-8")
    with anyio.fail_after(20):
        out = await call("LSP", {"operation": "documentSymbol", "file_path": str(path)})
    assert not out.is_error, out.text
    assert out.text == f"Symbols in shapes.py:\n{OUTLINE}"
    assert call.session.language_servers.status() == []  # no server was started for it


async def test_a_file_without_definitions_says_so_without_a_server(call: Caller, root: Path) -> None:
    path = root / "script.py"
    path.write_text("import os\n\nprint(os.getcwd())\n", encoding="utf-8")
    with anyio.fail_after(20):
        out = await call.ok("LSP", {"operation": "documentSymbol", "file_path": str(path)})
    assert out == "No symbols found in script.py."
    assert call.session.language_servers.status() == []


def test_columns_count_characters_not_bytes() -> None:
    outline = python_outline("é = 1; ü = 2\nclass Ω: pass\n")
    assert outline is not None
    starts = [(s["name"], s["selectionRange"]["start"]) for s in outline]
    assert starts == [
        ("é", {"line": 0, "character": 0}),
        ("ü", {"line": 0, "character": 7}),
        ("Ω", {"line": 1, "character": 6}),
    ]


async def test_a_file_that_does_not_parse_is_left_to_the_server(call: Caller, root: Path) -> None:
    path = root / "broken.py"
    path.write_text("def area(w, h):\n    return w * h\n\ndef broken(:\n", encoding="utf-8")
    assert python_outline(path.read_text(encoding="utf-8")) is None
    with anyio.fail_after(60):
        out = await call.ok("LSP", {"operation": "documentSymbol", "file_path": str(path)})
    assert "Function area" in out
    assert [row["name"] for row in call.session.language_servers.status()] == ["python"]
