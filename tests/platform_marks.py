"""Which tests read /proc, found from the test sources, so they skip (with the reason) where /proc is absent.

A function reads /proc when a string in its code names `/proc`, or it uses a function, fixture or module that
does: found to a fixed point within a module, and through `from tests… import name` and
`import tests…` across modules. A test reads /proc when its function does, or any fixture it uses
(pytest's closure of them, autouse ones included). Tests marked by hand (`@pytest.mark.proc`) need
none of this; it covers the many helpers shared between test modules.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MARK = "/proc"
OPT_OUT = "WORKS_WITHOUT_PROC = True"
"""A module that holds this line reads /proc only where it is mounted and works without it (tests/processes.py)."""


def _reads(path: Path) -> bool:
    source = _source(path)
    return MARK in source and OPT_OUT not in source


def _module_file(dotted: str) -> Path | None:
    if not dotted.startswith("tests"):
        return None
    base = TESTS.parent.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def proc_names(path: Path) -> frozenset[str]:
    """The names in the module at `path` (functions, fixtures, imported names and modules) that read /proc."""
    if OPT_OUT in _source(path):
        return frozenset()
    tree = ast.parse(_source(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            target = _module_file(node.module)
            for alias in node.names:
                inner = _module_file(f"{node.module}.{alias.name}")
                if inner is not None and _reads(inner):
                    found.add(alias.asname or alias.name)  # a module that reads /proc
                elif target is not None and target != path and alias.name in proc_names(target):
                    found.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                inner = _module_file(alias.name)
                if inner is not None and _reads(inner):
                    found.add(alias.asname or alias.name.split(".")[0])
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    uses = {id(f): {n.id for n in ast.walk(f) if isinstance(n, ast.Name)} for f in functions}
    for function in functions:
        if _names_proc(function):
            found.add(function.name)
    changed = True
    while changed:
        changed = False
        for function in functions:
            if function.name not in found and uses[id(function)] & found:
                found.add(function.name)
                changed = True
    return frozenset(found)


def _names_proc(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A string in the function's code (not its docstring, and comments are not code) names /proc."""
    body = function.body
    docstring = body[0].value if body and isinstance(body[0], ast.Expr) else None
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, str) and MARK in node.value and node is not docstring
        for node in ast.walk(function)
    )


def reads_proc(path: Path, function: str, fixtures: list[str], conftests: list[Path]) -> bool:
    """Whether the test `function` in the module at `path`, using `fixtures`, reads /proc."""
    names = set(proc_names(path))
    for conftest in conftests:
        names |= proc_names(conftest)
    return function in names or any(fixture in names for fixture in fixtures)
