"""The gate's own choices: the sandbox answers unmatched Bash questions, never a rule's; asking is awaited."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_codetools.errors import PermissionDeniedError
from mcp_codetools.policy.engine import CallFacts, Policy
from mcp_codetools.policy.gate import PermissionGate, Question
from mcp_codetools.policy.rules import parse_rule

pytestmark = pytest.mark.anyio

ROOT = Path("/ws/proj")
MAKE = CallFacts("Bash", False, command="make", cwd=ROOT)


async def test_a_sandboxed_command_no_rule_matches_runs_without_a_question() -> None:
    gate = PermissionGate(Policy(roots=(ROOT,), ask_unmatched=True), sandboxed_bash=True)
    await gate.check(MAKE, {}, session_id="s", ask=None)


async def test_without_the_sandbox_the_same_command_needs_an_answer() -> None:
    gate = PermissionGate(Policy(roots=(ROOT,), ask_unmatched=True))
    with pytest.raises(PermissionDeniedError, match="cannot be asked"):
        await gate.check(MAKE, {}, session_id="s", ask=None)


async def test_the_sandbox_does_not_answer_an_ask_rule() -> None:
    rule = parse_rule("Bash(make *)", "ask", source="cfg.toml", base=ROOT)
    gate = PermissionGate(Policy(roots=(ROOT,), ask=(rule,)), sandboxed_bash=True)
    asked: list[Question] = []

    async def ask(question: Question) -> bool:
        asked.append(question)
        return False

    with pytest.raises(PermissionDeniedError, match="declined"):
        await gate.check(MAKE, {}, session_id="s", ask=ask)
    assert len(asked) == 1 and "Bash(make *)" in asked[0].message


@pytest.mark.parametrize(
    "command",
    [
        "printf '[sandbox]\\nenabled = false\\n' >> mcp-codetools.toml",
        "echo x > .git/hooks/pre-commit",
        "echo '{}' > .claude/settings.json",
    ],
)
async def test_the_sandbox_does_not_answer_a_protected_path_question(command: str) -> None:
    """The sandbox keeps protected paths read-only, but saying yes to changing them is the user's call."""
    facts = CallFacts("Bash", False, command=command, cwd=ROOT)
    gate = PermissionGate(Policy(roots=(ROOT,)), sandboxed_bash=True)
    with pytest.raises(PermissionDeniedError, match="protected path.*cannot be asked"):
        await gate.check(facts, {}, session_id="s", ask=None)
    asked: list[Question] = []

    async def ask(question: Question) -> bool:
        asked.append(question)
        return True

    await gate.check(facts, {}, session_id="s", ask=ask)
    assert len(asked) == 1 and "protected path" in asked[0].message


async def test_the_sandbox_still_answers_an_unmatched_command_with_ask_unmatched_off() -> None:
    gate = PermissionGate(Policy(roots=(ROOT,)), sandboxed_bash=True)
    await gate.check(CallFacts("Bash", False, command="echo x > build/out.txt", cwd=ROOT), {}, session_id="s", ask=None)


def test_the_policy_follows_the_roots_a_session_serves() -> None:
    """Root-relative rules are anchored at each session's roots; each set is compiled once."""
    added = Path("/ws/client")
    rule = parse_rule("Read(.env)", "deny", source="cfg.toml", base=ROOT)
    gate = PermissionGate(Policy(roots=(ROOT,), deny=(rule,)))
    facts = CallFacts("Read", True, read_paths=(added / "sub" / ".env",), cwd=ROOT)
    assert gate.policy_for(None).decide(facts).behaviour == "allow"  # the configured roots only
    served = gate.policy_for((ROOT, added))
    assert served.decide(facts).behaviour == "deny"
    assert gate.policy_for((ROOT, added)) is served
    assert gate.policy_for((ROOT,)) is gate.policy
