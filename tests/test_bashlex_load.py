"""bashlex's LR tables read from the package: equal to the built ones, used when they fit, built when not.

Each check runs in a fresh interpreter: bashlex's tables are made once per process, at its import.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*parts: str) -> str:
    # Counts the tables built in the interpreter: `yacc` is reached as load() reaches it, without running
    # bashlex's package `__init__` (which builds the parser's tables at once).
    prelude = """
        import importlib, importlib.util, sys
        sys.modules["bashlex"] = importlib.util.module_from_spec(importlib.util.find_spec("bashlex"))
        yacc = importlib.import_module("bashlex.yacc")
        del sys.modules["bashlex"]
        builds = []
        real = yacc.LRTable.lr_parse_table
        def counted(self):
            builds.append(1)
            return real(self)
        yacc.LRTable.lr_parse_table = counted
    """
    code = "".join(textwrap.dedent(part) for part in (prelude, *parts))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


LINES = [
    "a | b && c",
    'for f in *.py; do grep -n x "$f"; done',
    "cat <<EOF\nhi\nEOF",
    'x=$(ls) || echo "$HOME" >out &',
]
DUMP = f"""
    from mcp_codetools.commands.bashlex_load import load
    bashlex = load()
    print(len(builds))
    for line in {LINES!r}:
        print(repr([tree.dump() for tree in bashlex.parse(line)]))
"""


def test_the_kept_tables_are_the_ones_bashlex_builds() -> None:
    check = [sys.executable, "-m", "scripts.bashlex_tables", "--check"]
    done = subprocess.run(check, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_load_builds_no_table_and_parses_as_a_built_parser_does() -> None:
    kept = _run(DUMP).splitlines()
    built = _run(DUMP.replace("load()", "__import__('bashlex')")).splitlines()
    assert kept[0] == "0"  # no table built
    assert built[0] == "1"
    assert kept[1:] == built[1:]
    assert all(kept[1:])


def test_tables_for_another_grammar_are_not_used() -> None:
    out = _run(
        """
        from mcp_codetools.commands import bashlex_lr
        bashlex_lr.KEY = "0" * 64  # as if made for another bashlex
        """,
        DUMP,
    ).splitlines()
    assert out[0] == "1"


def test_an_import_that_fails_leaves_no_half_made_bashlex() -> None:
    out = _run(
        """
        from mcp_codetools.commands import bashlex_load
        def broken(builder):
            raise RuntimeError("no tables")
        try:
            bashlex_load.import_with_builder(broken)
        except RuntimeError:
            pass
        print(sorted(name for name in sys.modules if name.split(".")[0] == "bashlex"))
        print(bashlex_load.load().parse("a && b")[0].kind, len(builds))
        """
    ).splitlines()
    assert out == ["[]", "list 0"]  # and the next load used the kept tables
