"""Tool modules load on demand (issue 38): a start from the snapshot imports only what its first calls run.

The early calls (Read, Glob, Grep) are answered before the SDK and the other tools are imported, so their
start-up imports neither the other tools nor what only those need (Bash's command analysis, the language
servers, background jobs); and the permission decision about such a call is the same whether the pipeline
knows only the early tools or all of them.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.engine import MODES, CallFacts
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.loading import load_policy_config
from mcp_codetools.protocol.early_calls import EARLY_TOOLS, EarlyPipelines
from mcp_codetools.tools import every_tool, tools_named

TOOLS_LIST_ORDER = [
    "Read",
    "Edit",
    "Write",
    "Grep",
    "Glob",
    "Bash",
    "BashOutput",
    "KillShell",
    "MultiEdit",
    "NotebookEdit",
    "FileHistory",
    "LSP",
]
ONLY_FOR_OTHER_TOOLS = (
    "mcp_codetools.commands.analysis",
    "mcp_codetools.lsp.workspace",
    "mcp_codetools.shell.background",
)
"""Modules a Read, Glob or Grep never needs: Bash's command analysis, the language servers, background jobs."""


def _loaded_after(code: str, *argv: str) -> list[str]:
    """The package's modules loaded in a fresh interpreter after running `code`."""
    listing = "import sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('mcp_codetools'))))"
    probe = f"{code}\n{listing}"
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True, timeout=120)
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def _tool_modules(loaded: list[str]) -> set[str]:
    shared = {"mcp_codetools.tools", "mcp_codetools.tools.base"}
    return {m for m in loaded if m.startswith("mcp_codetools.tools.") and m not in shared}


def test_every_tool_keeps_the_tools_list_order_and_each_tools_own_name() -> None:
    assert [tool.name for tool in every_tool()] == TOOLS_LIST_ORDER
    for name in TOOLS_LIST_ORDER:
        [tool] = tools_named([name])
        assert tool.name == name


def test_named_tools_come_in_tools_list_order_and_an_unknown_name_is_refused() -> None:
    assert [tool.name for tool in tools_named(["Glob", "Read", "Grep"])] == ["Read", "Grep", "Glob"]
    with pytest.raises(KeyError, match="Nope"):
        tools_named(["Read", "Nope"])


def test_importing_the_tools_package_imports_no_tool() -> None:
    assert _tool_modules(_loaded_after("import mcp_codetools.tools")) == set()


def test_naming_tools_imports_only_their_modules() -> None:
    loaded = _loaded_after("from mcp_codetools.tools import tools_named\ntools_named(['Read', 'Glob'])")
    assert _tool_modules(loaded) == {"mcp_codetools.tools.read", "mcp_codetools.tools.glob"}


def test_the_start_up_of_a_start_from_the_snapshot_imports_only_what_the_early_calls_run(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from mcp_codetools import cli\n"
        "prepared = cli._prepare(sys.argv[1:], sdk=False)\n"
        "assert not isinstance(prepared, int), prepared\n"
        "import mcp_codetools.session, mcp_codetools.pipeline\n"
    )
    loaded = _loaded_after(code, "--root", str(tmp_path))
    assert _tool_modules(loaded) == {"mcp_codetools.tools.read"}  # Glob's and Grep's come with their first call
    assert not [m for m in loaded if m in ONLY_FOR_OTHER_TOOLS or m.startswith("mcp_codetools.protocol.server")]


def test_the_early_pipelines_build_read_at_once_and_glob_and_grep_at_their_first_call() -> None:
    code = (
        "from mcp_codetools.protocol.early_calls import EarlyPipelines\n"
        "pipelines = EarlyPipelines(None)\n"
        "assert pipelines.for_tool('Grep') is pipelines.for_tool('Grep')\n"
        "assert list(pipelines.for_tool('Grep').tools) == ['Grep']\n"
        "assert list(pipelines.for_tool('Read').tools) == ['Read']\n"
    )
    loaded = _loaded_after(code)
    assert _tool_modules(loaded) == {"mcp_codetools.tools.read", "mcp_codetools.tools.grep"}


def test_early_tools_are_judged_alike_by_a_pipeline_of_them_only_and_by_one_of_every_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "proj"
    (root / "secret").mkdir(parents=True)
    paths = [root / "secret" / "a.txt", root / "open.txt", root / ".git" / "config", root / "mcp-codetools.toml"]
    rules = ["Read(secret/**)", "Edit(secret/**)", "Write(open.txt)", "Grep(open.txt)", "Glob", "Read", "Edit"]
    facts = [
        CallFacts(tool, True, read_paths=(path,), cwd=root) for tool, path in itertools.product(EARLY_TOOLS, paths)
    ]
    compared = 0
    for behaviour, rule, mode in itertools.product(("deny", "ask", "allow"), rules, MODES):
        config = tmp_path / "rules.toml"
        config.write_text(f'[permissions]\n{behaviour} = ["{rule}"]\ndefault_mode = "{mode}"\n', encoding="utf-8")
        gate = PermissionGate(load_policy_config([root], config_file=config).policy([root]))
        early, full = Pipeline(tools_named(EARLY_TOOLS), gate).gate, Pipeline(every_tool(), gate).gate
        assert early is not None and full is not None
        for fact in facts:
            alone = EarlyPipelines(gate).for_tool(fact.tool).gate  # the pipeline of that tool only
            assert alone is not None
            for judge in (early, alone):
                assert judge.policy.decide(fact) == full.policy.decide(fact), (rule, mode, fact)
                assert judge.policy.hides(fact.tool, str(fact.read_paths[0])) == full.policy.hides(
                    fact.tool, str(fact.read_paths[0])
                )
            compared += 1
    assert compared == 3 * len(rules) * len(MODES) * len(facts)
