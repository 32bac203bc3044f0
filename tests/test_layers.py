"""
Imports point one way: no module imports a higher layer, and no tool imports another tool.

The layers, lowest first (a module may import its own layer and those below it; two parts of one
layer never import each other both ways):

    errors, settings/ (and the package's __init__; config only for a transition)
    commands/                               understanding a Bash command: parse, wrappers, files, read-only
    files/, search/, shell/, lsp/, dispatcher, audit   each needs only the layers below
    policy/                                 permission rules, modes, hooks (reads commands/' analysis)
    session                                 holds the ledger, history, cwd, jobs and the dispatcher
    roots                                   which folders are served
    tools/                                  one module per tool; tools/base.py is what they share
    pipeline
    protocol/                               the only part that speaks MCP (doctor runs a client): the server,
                                            stdio and HTTP, sessions and state handles, asking the user
    doctor, cli, __main__

The dispatcher sits beside files/ and shell/, below the session: it orders calls and commits their
changes as closures, knowing nothing of sessions, and each session owns one.

Every import counts, including those inside functions and `if TYPE_CHECKING:` blocks: a deferred import
is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "mcp_codetools"
SOURCE = Path(__file__).resolve().parents[1] / PACKAGE

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({PACKAGE, "errors", "settings", "child_pipes"}),
    frozenset({"commands"}),
    frozenset({"files", "search", "shell", "dispatcher", "audit", "lsp"}),
    frozenset({"policy"}),
    frozenset({"session"}),
    frozenset({"roots"}),
    frozenset({"tools"}),
    frozenset({"pipeline"}),
    frozenset({"protocol"}),
    frozenset({"doctor", "cli", "__main__"}),
)
MCP_SPEAKERS = frozenset({"protocol", "doctor"})
"""Modules that may import the MCP SDK (doctor only to run a client against the server)."""
SHARED_BY_TOOLS = {f"{PACKAGE}.tools", f"{PACKAGE}.tools.base", f"{PACKAGE}.tools.edit_checks"}
"""Not tools: what every tool builds on, and the checks every writing tool runs on its change."""


def package_sources(root: Path = SOURCE) -> dict[str, str]:
    """Every module of the package by dotted name, with its source."""
    sources: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        sources[".".join(parts)] = path.read_text(encoding="utf-8")
    return sources


def imported_modules(name: str, source: str, known: Iterable[str]) -> list[str]:
    """The modules `name` imports, as dotted names (`from pkg import module` names the module)."""
    known = set(known)
    is_package = any(other.startswith(f"{name}.") for other in known)
    package = name if is_package else name.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append(submodule if submodule in known else base)
    return found


def unit(module: str) -> str:
    """The layering unit of a module: `mcp_codetools.files.paths` -> `files`, `mcp_codetools` -> itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(module: str) -> int:
    name = unit(module)
    for index, members in enumerate(LAYERS):
        if name in members:
            return index
    raise AssertionError(f"{module} is in no layer: add `{name}` to LAYERS in tests/test_layers.py")


def violations(sources: Mapping[str, str]) -> list[str]:
    problems: list[str] = []
    sideways: set[tuple[str, str]] = set()
    for name, source in sources.items():
        for target in imported_modules(name, source, sources):
            top = target.split(".")[0]
            if top in ("mcp", "mcp_types") and unit(name) not in MCP_SPEAKERS:
                problems.append(f"{name} imports {target}: only {sorted(MCP_SPEAKERS)} speak MCP")
            if top != PACKAGE:
                continue
            if layer_of(target) > layer_of(name):
                problems.append(f"{name} imports {target}, a higher layer")
            elif layer_of(target) == layer_of(name) and unit(target) != unit(name):
                sideways.add((unit(name), unit(target)))
            is_tool = unit(name) == "tools" and name not in SHARED_BY_TOOLS
            if is_tool and unit(target) == "tools" and target not in SHARED_BY_TOOLS and target != name:
                problems.append(f"{name} imports {target}: a tool never imports another tool")
    problems += [f"{a} and {b} import each other" for a, b in sorted(sideways) if a < b and (b, a) in sideways]
    return problems


def test_every_module_imports_only_its_own_layer_and_below() -> None:
    sources = package_sources()
    assert f"{PACKAGE}.pipeline" in sources and f"{PACKAGE}.tools.read" in sources
    assert violations(sources) == []


def test_commands_imports_neither_policy_nor_shell() -> None:
    """Understanding a command is below both its readers: policy/ and shell/ import commands/, never the reverse."""
    sources = package_sources()
    upward = [
        f"{name} imports {target}"
        for name, source in sources.items()
        if unit(name) == "commands"
        for target in imported_modules(name, source, sources)
        if target.startswith(PACKAGE + ".") and unit(target) != "commands"
    ]
    assert [name for name in sources if unit(name) == "commands"] and upward == []


def test_no_module_of_commands_is_over_500_lines() -> None:
    """The security-critical knowledge stays readable: tables that grow go to data modules of their own."""
    sizes = {
        path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in (SOURCE / "commands").glob("*.py")
    }
    assert sizes and {name: size for name, size in sizes.items() if size > 500} == {}


def test_the_check_catches_each_kind_of_wrong_import() -> None:
    """Upward (even deferred), tool to tool (even relative), MCP outside its modules, a two-way pair in a layer."""
    sources = {
        f"{PACKAGE}.files.paths": "from mcp_codetools.pipeline import Pipeline\n",
        f"{PACKAGE}.session": "def later():\n    from mcp_codetools.tools import edit\n",
        f"{PACKAGE}.tools": "from mcp_codetools.tools.read import ReadTool\n",
        f"{PACKAGE}.tools.base": "",
        f"{PACKAGE}.tools.edit": "from .read import ReadTool\nfrom mcp_codetools.tools.base import Tool\n",
        f"{PACKAGE}.tools.read": "import mcp_types\n",
        f"{PACKAGE}.pipeline": "",
        f"{PACKAGE}.search.rg_args": "from mcp_codetools.files.paths import is_within\n",
        f"{PACKAGE}.files.view": "from mcp_codetools.search import rg_args\n",
    }
    assert violations(sources) == [
        f"{PACKAGE}.files.paths imports {PACKAGE}.pipeline, a higher layer",
        f"{PACKAGE}.session imports {PACKAGE}.tools.edit, a higher layer",
        f"{PACKAGE}.tools.edit imports {PACKAGE}.tools.read: a tool never imports another tool",
        f"{PACKAGE}.tools.read imports mcp_types: only {sorted(MCP_SPEAKERS)} speak MCP",
        "files and search import each other",
    ]


def import_cycles(sources: Mapping[str, str]) -> list[list[str]]:
    """Groups of modules that import each other in a circle (Tarjan's strongly connected components)."""
    graph = {name: sorted(set(imported_modules(name, src, sources)) & set(sources)) for name, src in sources.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(cycles)


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert import_cycles(package_sources()) == []


def test_the_cycle_check_finds_a_circle_through_a_deferred_import() -> None:
    sources = {
        f"{PACKAGE}.commands.read_only": "from mcp_codetools.commands.sed import x\n",
        f"{PACKAGE}.commands.sed": "def later():\n    from mcp_codetools.commands import read_only\n",
        f"{PACKAGE}.commands.words": "",
    }
    assert import_cycles(sources) == [[f"{PACKAGE}.commands.read_only", f"{PACKAGE}.commands.sed"]]
