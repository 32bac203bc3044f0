"""bashlex imported with its LR tables read from this package instead of built.

bashlex's copy of PLY builds the parser's LALR tables on every import (it never reads the `parsetab.py` it
ships): 0.25-0.35 s of CPU, paid by a server's first Bash call and by every process that parses a command.
The tables are a pure function of bashlex's grammar and of that table builder, so they are kept in
`bashlex_lr.py` (written by `scripts/bashlex_tables.py`) under a key made of both: the grammar's
productions, precedence and start, and the bytes of bashlex's `yacc.py`. When bashlex's grammar or builder
differs from the one the tables were made for (another bashlex version), the key differs and the tables
are built as before, so a stale file costs time, never a wrong parse. `tests/test_bashlex_load.py` holds
the kept tables equal to freshly built ones.

The tables reach bashlex by standing in for `yacc.LRTable` while `bashlex.parser` is imported: bashlex
offers no other way in, and the stand-in is put back before the import returns.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_loaded: ModuleType | None = None


def load() -> ModuleType:
    """`bashlex`, imported once per process (from the kept tables when they fit)."""
    global _loaded
    if _loaded is not None:
        return _loaded
    with _lock:  # two first Bash calls in two threads: one import, one stand-in at a time
        if "bashlex" not in sys.modules:  # else imported (or being imported) as it is: the import waits for it
            import_with_builder(_kept_table_class)
        import bashlex  # noqa: F401

        _loaded = sys.modules["bashlex"]
    return _loaded


def import_with_builder(replacement: Callable[[type], type]) -> None:
    """Import bashlex with `yacc.LRTable` replaced by `replacement(LRTable)`, put back once imported.

    `bashlex/__init__.py` imports its parser, which builds the tables, before anyone can reach `yacc`: so the
    package is made without running its `__init__`, `yacc` imported into it and replaced, and then the
    `__init__` run, as the import system itself does.
    """
    spec = importlib.util.find_spec("bashlex")
    if spec is None or spec.loader is None:
        raise ImportError("bashlex is not installed")
    package = importlib.util.module_from_spec(spec)
    sys.modules["bashlex"] = package
    try:
        yacc: Any = importlib.import_module("bashlex.yacc")
        builder = yacc.LRTable
        yacc.LRTable = replacement(builder)
        try:
            spec.loader.exec_module(package)
        finally:
            yacc.LRTable = builder
    except BaseException:
        for name in [name for name in sys.modules if name == "bashlex" or name.startswith("bashlex.")]:
            del sys.modules[name]
        raise


def key(grammar: Any) -> str:
    """What the tables depend on: bashlex's grammar (as PLY holds it) and its table builder's source."""
    from bashlex import yacc

    productions = [(p.name, tuple(p.prod), p.prec) for p in grammar.Productions[1:]]
    facts = repr((productions, sorted(grammar.Precedence.items()), grammar.Start))
    builder = Path(yacc.__file__).read_bytes()
    return hashlib.sha256(builder + facts.encode("utf-8")).hexdigest()


def tables(table: Any) -> str:
    """A built `LRTable`'s action and goto tables as the JSON text `bashlex_lr.py` holds."""
    return json.dumps({"action": table.lr_action, "goto": table.lr_goto}, sort_keys=True, separators=(",", ":"))


def _kept_table_class(builder: type) -> type:
    from mcp_codetools.commands import bashlex_lr

    class KeptTable(builder):  # type: ignore[misc]
        """An `LRTable` whose tables come from `bashlex_lr.py` when its key is this grammar's."""

        def __init__(self, grammar: Any, log: Any = None) -> None:
            if key(grammar) != bashlex_lr.KEY:
                super().__init__(grammar, log)
                return
            kept = json.loads(bashlex_lr.TABLES)
            self.grammar = grammar
            self.lr_productions = grammar.Productions
            self.lr_action = {int(state): actions for state, actions in kept["action"].items()}
            self.lr_goto = {int(state): gotos for state, gotos in kept["goto"].items()}
            self.sr_conflicts: list[Any] = []
            self.rr_conflicts: list[Any] = []

    return KeptTable
