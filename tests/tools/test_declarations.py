"""Every tool declares what it touches, and every list is derived from those declarations.

A tool with a path field belongs to a rule family (so `Read(...)` or `Edit(...)` rules cover it), and each
family holds every tool that declares it; the pipeline hands exactly those families to its policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.session import CodeSession
from mcp_codetools.tools.base import Tool, ToolInput, rule_families
from mcp_codetools.tools.lsp import LSPTool
from tests.conftest import Caller
from tests.declared import FAMILIES, every_tool

pytestmark = pytest.mark.anyio


def path_fields_of(tool: Tool[Any]) -> set[str]:
    """The input fields that hold a path, by their name (`path`, `file_path`, `notebook_path`, ...)."""
    return {name for name in tool.input_model.model_fields if name == "path" or name.endswith("_path")}


def undeclared(tools: list[Tool[Any]]) -> list[str]:
    """What is wrong with the tools' declarations: an unresolved path field, a path tool in no family."""
    problems: list[str] = []
    families = rule_families(tools)
    for tool in tools:
        missing = path_fields_of(tool) - set(tool.path_fields)
        if missing:
            problems.append(f"{tool.name}: {sorted(missing)} hold paths but are not in path_fields")
        if tool.path_fields and tool.name not in families.read | families.edit:
            problems.append(f"{tool.name} has path fields but is in no rule family")
        if tool.reads_files and tool.name not in families.read or tool.writes_files and tool.name not in families.edit:
            problems.append(f"a family is missing {tool.name}")
    return problems


def test_every_tool_with_path_fields_is_in_a_family_and_every_family_holds_its_tools() -> None:
    assert undeclared(every_tool()) == []
    assert FAMILIES.read >= {"Read", "Grep", "Glob", "LSP"} and FAMILIES.edit >= {"Edit", "Write", "FileHistory"}
    assert not FAMILIES.read & FAMILIES.edit, "a tool is judged as a reader or as a writer, not both"
    for tool in every_tool():
        assert not (tool.read_only and tool.writes_files), f"{tool.name}: a read-only hint on a tool that writes"
        assert tool.job_arg is None or tool.job_arg in tool.input_model.model_fields, tool.name
    assert {tool.name: tool.job_arg for tool in every_tool() if tool.job_arg} == {
        "BashOutput": "bash_id",
        "KillShell": "shell_id",
    }


class _SneakyInput(ToolInput):
    file_path: str = Field(description="a file")
    other_path: str = Field(description="another file")


class _Sneaky(Tool[_SneakyInput]):
    """A tool that reads what its path names but says it touches nothing, and forgets a path field."""

    name = "Sneaky"
    title = "Sneaky"
    description = "test"
    input_model = _SneakyInput
    path_fields = ("file_path",)
    reads_files = False
    writes_files = False


class _Undeclared(Tool[_SneakyInput]):
    name = "Undeclared"
    title = "Undeclared"
    description = "test"
    input_model = _SneakyInput
    path_fields = ("file_path", "other_path")


def test_the_check_catches_a_path_tool_in_no_family_and_a_forgotten_path_field() -> None:
    assert undeclared([_Sneaky()]) == [
        "Sneaky: ['other_path'] hold paths but are not in path_fields",
        "Sneaky has path fields but is in no rule family",
    ]


def test_a_tool_that_does_not_declare_what_it_touches_is_in_a_family_by_its_path_fields() -> None:
    """Undeclared fails closed: a new tool with path fields is covered the day it lands (LSP relies on it)."""
    assert _Undeclared.writes_files and not _Undeclared.reads_files  # not read-only: its paths count as written
    assert LSPTool.reads_files and not LSPTool.writes_files
    assert undeclared([_Undeclared()]) == []


def test_a_subclass_that_adds_path_fields_derives_its_family_again() -> None:
    class Base(Tool[_SneakyInput]):
        name = "Base"
        read_only = True

    class WithPaths(Base):
        name = "WithPaths"
        path_fields = ("file_path", "other_path")

    class Declared(WithPaths):
        name = "Declared"
        reads_files = False
        writes_files = True

    assert not Base.reads_files and not Base.writes_files
    assert WithPaths.reads_files and not WithPaths.writes_files
    assert (Declared.reads_files, Declared.writes_files) == (False, True)
    assert (SubDeclared := type("SubDeclared", (Declared,), {"name": "SubDeclared"})).writes_files
    assert not SubDeclared.reads_files, "a declaration holds for subclasses"


def test_the_pipeline_hands_its_policy_the_families_its_tools_declare(root: Path) -> None:
    tools = every_tool()
    given = PermissionGate(Policy(roots=(root,), mode="plan"), unanswered="allow", sandboxed_bash=True)
    pipeline = Pipeline(tools, given)
    assert pipeline.gate is not None and pipeline.gate.policy.families == FAMILIES
    assert (pipeline.gate.unanswered, pipeline.gate.sandboxed_bash, pipeline.gate.policy.mode) == (
        "allow",
        True,
        "plan",
    )
    lone = Pipeline([LSPTool()], PermissionGate(Policy(roots=(root,))))
    assert lone.gate is not None and lone.gate.policy.families.read == {"LSP"}


async def test_a_read_deny_covers_lsps_file_path(root: Path, session: CodeSession) -> None:
    """LSP was in neither family: `Read(secret.py)` did not stop it asking a language server about the file."""
    secret = root / "secret.py"
    secret.write_text("API_KEY = 'hunter2'\n", encoding="utf-8")
    rule = parse_rule("Read(secret.py)", "deny", source="test", base=root)
    call = Caller(Pipeline(every_tool(), PermissionGate(Policy(roots=(root,), deny=(rule,)))), session)
    out = await call.fails("LSP", {"operation": "documentSymbol", "file_path": str(secret)})
    assert out.meta["errorCode"] == "permission_denied" and "Read(secret.py)" in out.text, out.text
    whole = Policy(roots=(root,), deny=(parse_rule("Read", "deny", source="test", base=root),))
    refused = await Caller(Pipeline(every_tool(), PermissionGate(whole)), session).fails(
        "LSP", {"operation": "documentSymbol", "file_path": str(root / "other.py")}
    )
    assert refused.meta["errorCode"] == "permission_denied", refused.text


def test_the_policys_pathless_tools_are_the_tools_without_path_fields() -> None:
    from mcp_codetools.policy.rules import COMMAND_TOOL, PATHLESS_TOOLS

    tools = every_tool()
    assert PATHLESS_TOOLS == {t.name for t in tools if not t.path_fields and t.name != COMMAND_TOOL}
