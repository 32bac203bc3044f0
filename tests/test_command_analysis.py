"""One analysis per Bash call: the command is parsed once, and every step reads that one value.

The dispatcher's safety decision, the permission step (rules, plan mode), validation and the call itself
all read the `CommandAnalysis` that `BashTool.classify` built off the event loop; nothing keeps old parses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_codetools.commands import analysis, classify, parsing, parts
from mcp_codetools.commands.analysis import analyse
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.engine import CallFacts, Policy
from mcp_codetools.policy.gate import PermissionGate
from mcp_codetools.policy.rules import parse_rule
from mcp_codetools.session import CodeSession
from mcp_codetools.tools import default_tools
from tests.conftest import Caller


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every command line bashlex is asked to parse, whoever asks."""
    seen: list[str] = []
    real = parsing.parse

    def counting(command: str) -> parsing.Parsed:
        seen.append(command)
        return real(command)

    for module in (analysis, classify, parts):
        monkeypatch.setattr(module, "parse", counting)
    yield seen


def test_the_analysis_parses_once(parses: list[str]) -> None:
    found = analyse("git status | head -5 && cat a.txt > b.txt")
    assert parses == ["git status | head -5 && cat a.txt > b.txt"]
    assert not found.read_only and found.verdict.reason == "redirection >"
    assert found.parts.write_targets == ("b.txt",) and found.parts.read_targets == ("a.txt",)


def test_a_nested_command_line_is_parsed_on_its_own(parses: list[str]) -> None:
    analyse("bash -c 'git push'")
    assert parses == ["bash -c 'git push'", "git push"]


def test_the_engine_reads_the_analysis_it_is_given(parses: list[str]) -> None:
    found = analyse("git push origin")
    parses.clear()
    root = Path("/ws")
    policy = Policy(roots=(root,), deny=(parse_rule("Bash(git push *)", "deny", source="t", base=root),))
    facts = CallFacts("Bash", False, cwd=root, analysis=found)
    assert facts.command == "git push origin" and facts.analysis is found
    assert policy.decide(facts).behaviour == "deny" and parses == []
    assert policy.decide(CallFacts("Bash", False, command="git push origin", cwd=root)).behaviour == "deny"
    assert parses == ["git push origin"]  # given only the text: analysed where the facts are made


def test_facts_refuse_an_analysis_of_another_command() -> None:
    with pytest.raises(ValueError, match="another command"):
        CallFacts("Bash", False, command="git status", analysis=analyse("git push"))


def test_nothing_is_remembered_between_analyses(parses: list[str]) -> None:
    assert analyse("git status") is not analyse("git status") and parses == ["git status", "git status"]


def test_a_long_or_empty_command_is_not_parsed(parses: list[str]) -> None:
    assert not analyse("").read_only and not analyse("x" * (classify.MAX_PARSED_CHARS + 1)).parts.complete
    assert parses == []


@pytest.mark.anyio
async def test_a_bash_call_parses_its_command_once(parses: list[str], session: CodeSession, root: Path) -> None:
    rule = parse_rule("Bash(git push *)", "deny", source="test.toml", base=root)
    gate = PermissionGate(Policy(roots=(root,), deny=(rule,)), unanswered="allow")
    call = Caller(Pipeline(default_tools(), gate), session)
    assert await call.ok("Bash", {"command": "echo hi | cat"}) == "hi"
    assert parses == ["echo hi | cat"]
    denied = await call("Bash", {"command": "git push"})
    assert denied.is_error and "Bash(git push *)" in denied.text
    assert parses == ["echo hi | cat", "git push"]


@pytest.mark.anyio
async def test_plan_mode_reads_the_calls_analysis(parses: list[str], session: CodeSession, root: Path) -> None:
    gate = PermissionGate(Policy(roots=(root,), mode="plan"), unanswered="allow")
    call = Caller(Pipeline(default_tools(), gate), session)
    assert await call.ok("Bash", {"command": "echo hi"}) == "hi"
    refused = await call("Bash", {"command": "echo hi > out.txt"})
    assert refused.is_error and "plan mode" in refused.text and not (root / "out.txt").exists()
    assert await call.ok("Bash", {"command": "echo hi"}) == "hi"  # a repeated command: analysed again, once
    assert parses == ["echo hi", "echo hi > out.txt", "echo hi"]
