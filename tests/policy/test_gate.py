"""The gate's own choices: the sandbox answers unmatched Bash questions, never a rule's; asking is awaited."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest

from mcp_codetools.errors import PermissionDeniedError
from mcp_codetools.policy.engine import CallFacts, Policy
from mcp_codetools.policy.gate import SHOWN_MAX_CHARS, SHOWN_MAX_LINES, PermissionGate, Question, shown_whole
from mcp_codetools.policy.rules import Behaviour, parse_rule

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


def test_the_question_escapes_what_would_hide_or_reorder_text() -> None:
    command = "git push origin main\r\x1b[2K# harmless\u202e\u200b\U000e0041"
    shown, note = shown_whole(command)
    assert note == "" and "\x1b" not in shown and "\r" not in shown
    assert shown == "git push origin main\\r\\x1b[2K# harmless\\u202e\\u200b\\U000e0041"


def test_every_invisible_or_reordering_character_is_escaped() -> None:
    hiding = {"Cc", "Cf", "Zl", "Zp", "Co", "Cs"}
    chars = (chr(code) for code in range(sys.maxunicode + 1))
    hidden = [c for c in chars if c not in "\n\t" and unicodedata.category(c) in hiding]
    missed = [hex(ord(c)) for c in hidden if shown_whole(c)[0] == c]
    assert missed == []


def test_a_long_or_many_lined_call_keeps_its_start_and_end_and_says_how_much_is_hidden() -> None:
    many_lines = "git push origin main\n" + "true\n" * 500 + "rm -rf ~"
    shown, note = shown_whole(many_lines)
    assert shown.startswith("git push origin main\n") and shown.endswith("\nrm -rf ~")
    assert shown.count("\n") <= SHOWN_MAX_LINES + 2 and "NOT shown" in note and "502 lines" in note
    one_line = "git push " + "a" * 10_000 + " ; rm -rf ~"
    shown, note = shown_whole(one_line)
    assert shown.startswith("git push ") and shown.endswith(" ; rm -rf ~") and len(shown) <= SHOWN_MAX_CHARS + 100
    assert f"{len(one_line) - SHOWN_MAX_CHARS:,} characters" in note


def test_the_key_binds_the_input_not_the_subject() -> None:
    one = Question("Bash", "git push origin main", "asked", "git push origin main", "digest-1")
    other = Question("Bash", "git push origin main", "asked", "git push origin main; rm x", "digest-2")
    assert one.key != other.key
    assert one.key == Question("Bash", "git push origin main", "asked", "git push origin main", "digest-1").key


@pytest.mark.parametrize(
    "facts",
    [
        CallFacts("Bash", False, command="printf '[sandbox]\\nenabled = false\\n' >> mcp-codetools.toml", cwd=ROOT),
        CallFacts("Bash", False, command="git config core.hooksPath hooks", cwd=ROOT),
        CallFacts("Write", False, write_paths=(ROOT / ".claude" / "settings.json",)),
        CallFacts("Edit", False, write_paths=(ROOT / ".git" / "hooks" / "pre-commit",)),
        CallFacts("Write", False, write_paths=(ROOT / ".mcp.json",)),
    ],
    ids=["bash-config", "bash-git-config", "write-claude", "edit-git-hook", "write-mcp-json"],
)
@pytest.mark.parametrize("sandboxed", [False, True])
async def test_unanswered_ask_allow_never_answers_a_protected_path_question(facts: CallFacts, sandboxed: bool) -> None:
    """`unanswered_ask = "allow"` lets an unanswerable ask-rule question through, never a protected path's."""
    gate = PermissionGate(Policy(roots=(ROOT,)), unanswered="allow", sandboxed_bash=sandboxed)
    with pytest.raises(PermissionDeniedError, match=r"protected path.*`unanswered_ask` never does.*ask the user"):
        await gate.check(facts, {}, session_id="s", ask=None)
    rule = parse_rule("Write", "ask", source="cfg.toml", base=ROOT)
    asking = PermissionGate(Policy(roots=(ROOT,), ask=(rule,)), unanswered="allow", sandboxed_bash=sandboxed)
    await asking.check(CallFacts("Write", False, write_paths=(ROOT / "notes.txt",)), {}, session_id="s", ask=None)


READ = CallFacts("Read", True, read_paths=(ROOT / "src" / "a.py",))


async def test_a_read_with_no_rule_to_weigh_is_let_through_without_deciding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing can refuse or ask about it: the rule engine is not run (~15 µs of a small Read's server time)."""

    def decide(self: Policy, facts: CallFacts) -> None:
        raise AssertionError("decided")

    monkeypatch.setattr(Policy, "decide", decide)
    for mode in ("default", "plan", "bypassPermissions", "acceptEdits"):
        gate = PermissionGate(Policy(roots=(ROOT,), mode=mode, ask_unmatched=True))
        await gate.check(READ, {}, session_id="s", ask=None)


@pytest.mark.parametrize(
    ("behaviour", "refusal"), [("deny", "denied by the rule"), ("ask", "cannot be asked")], ids=["deny", "ask"]
)
async def test_a_read_a_rule_names_is_still_refused_or_asked_about(behaviour: Behaviour, refusal: str) -> None:
    rule = parse_rule("Read(src/**)", behaviour, source="cfg.toml", base=ROOT)
    gate = PermissionGate(Policy(roots=(ROOT,), **{behaviour: (rule,)}))
    with pytest.raises(PermissionDeniedError, match=refusal):
        await gate.check(READ, {}, session_id="s", ask=None)


@pytest.mark.parametrize(
    "facts",
    [
        CallFacts("Write", False, write_paths=(ROOT / ".mcp.json",)),
        CallFacts("Grep", True, read_paths=(ROOT,), write_paths=(ROOT / ".mcp.json",)),
    ],
    ids=["write", "read-only-that-writes"],
)
async def test_a_call_that_writes_is_weighed_even_with_no_rules(facts: CallFacts) -> None:
    gate = PermissionGate(Policy(roots=(ROOT,)))
    with pytest.raises(PermissionDeniedError, match="protected path"):
        await gate.check(facts, {}, session_id="s", ask=None)
