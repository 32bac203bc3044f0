"""One analysis per Bash call: the command is parsed once, and every step reads that one value.

The dispatcher's safety decision, the permission step (rules, plan mode), validation and the call itself
all read the `CommandAnalysis` that `BashTool.classify` built off the event loop; the analyses of lately seen
short lines are kept, by their text alone (`commands.analysis`).
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
    analysis._kept.cache_clear()  # what other tests analysed is not counted out here
    yield seen
    analysis._kept.cache_clear()  # nor what the counting parser built kept for them


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
    assert policy.decide(CallFacts("Bash", False, command="git push origin main", cwd=root)).behaviour == "deny"
    assert parses == ["git push origin main"]  # given only the text: analysed where the facts are made


def test_facts_refuse_an_analysis_of_another_command() -> None:
    with pytest.raises(ValueError, match="another command"):
        CallFacts("Bash", False, command="git status", analysis=analyse("git push"))


def test_a_line_analysed_lately_is_not_analysed_again(parses: list[str]) -> None:
    first = analyse("git status")
    assert analyse("git status") is first and parses == ["git status"]
    for other in ("git status ", "git  status", "git status\n", "git statuss"):  # any other text: its own analysis
        assert analyse(other) is not first
    assert parses == ["git status", "git status ", "git  status", "git status\n", "git statuss"]


def test_the_oldest_analysis_goes_past_the_bound(parses: list[str]) -> None:
    first = analyse("echo 0")
    for number in range(1, analysis.CACHE_SIZE + 1):
        analyse(f"echo {number}")
    assert analyse(f"echo {analysis.CACHE_SIZE}") is analyse(f"echo {analysis.CACHE_SIZE}")
    parses.clear()
    again = analyse("echo 0")
    assert parses == ["echo 0"] and again is not first and again == first


def test_a_long_line_is_analysed_at_every_call(parses: list[str]) -> None:
    line = "echo " + "x" * analysis.CACHED_MAX_CHARS
    assert analyse(line) is not analyse(line) and parses == [line, line]


def test_an_analysis_depends_on_the_text_alone(
    parses: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the cache keys on: built again in another folder with another environment, it is the same value.
    lines = ["cat a.txt > b.txt", "git -C sub push", "cd x && rm -rf *", "PATH=/x ls ~", "bash -c 'sed -i s/a/b/ f'"]
    built = [analyse(line) for line in lines]
    analysis._kept.cache_clear()
    monkeypatch.chdir(tmp_path)
    for name in ("HOME", "PATH", "PWD", "CDPATH", "GIT_DIR", "SHELL"):
        monkeypatch.setenv(name, str(tmp_path / "elsewhere"))
    assert [analyse(line) for line in lines] == built


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
    assert await call.ok("Bash", {"command": "echo hi"}) == "hi"  # a repeated command: its analysis is kept
    assert parses == ["echo hi", "echo hi > out.txt"]
