"""The permission step as the pipeline runs it: rules and mode, then hooks, then asking the user.

Order for one call: the policy decides (deny rules, the mode, ask rules, protected paths, allow rules);
a deny ends it. PreToolUse hooks run next: a hook's block or deny ends the call, a hook's ask turns an
allow into a question, a hook's allow answers a question, but never lifts a deny rule. A question goes
to the user through the client (`Asker`); when the client cannot be asked, the call is refused with the
reason, unless `unanswered_ask = "allow"`, which never answers a question a deny rule or a protected
path raised: those need a person. With the Bash sandbox on, a command no rule denies or asks
about runs without a question (the sandbox confines it), as Claude Code's `autoAllowBashIfSandboxed`;
one that writes a protected path is still asked about.

Every refusal names what refused: the rule and its file, the mode and where it was set, or the hook.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_codetools.errors import PermissionDeniedError
from mcp_codetools.policy.engine import CallFacts, Decision, Policy
from mcp_codetools.policy.hooks import HookOutcome, Hooks
from mcp_codetools.policy.rules import Behaviour, RuleFamilies

logger = logging.getLogger(__name__)

RESPONSE_KEEP_CHARS = 20_000
"""What a PostToolUse hook sees of the result at most."""
_ROOT_SETS_KEPT = 64
"""Policies compiled for other sets of roots (HTTP sessions whose clients added roots), kept for reuse."""


SHOWN_MAX_CHARS = 2_000
"""A command longer than this is shown as its start and its end, with how much lies between."""
SHOWN_MAX_LINES = 40
"""Likewise for lines: a command of many short lines must not push its end out of the dialog."""
_HEAD_SHARE = 0.7
"""How much of the bound the start gets; the end gets the rest (a tacked-on `; rm …` sits at the end)."""


@dataclass(frozen=True, slots=True)
class Question:
    """A call the user must confirm: what it is, and why it is asked.

    `subject` is the part that triggered the question (the rule's match, the protected path); `call` is the
    whole of what runs (a Bash command whole); `binding` is a digest of the call's exact, complete input, so
    an answer binds that call and no other with the same subject.
    """

    tool: str
    subject: str
    reason: str
    call: str = ""
    binding: str = ""

    @property
    def key(self) -> str:
        """Stable across a retried call, so an answer given on one round is found on the next.

        It digests the whole input (or, without a binding, the whole call as shown), never the subject alone:
        an answer for `git push origin main` is no answer for `git push origin main; rm -rf ~`.
        """
        bound = self.binding or f"{self.subject}\0{self.call}"
        digest = hashlib.sha256(f"{self.tool}\0{bound}\0{self.reason}".encode()).hexdigest()
        return f"permission-{digest[:24]}"

    @property
    def message(self) -> str:
        """The question as the user sees it: the tool, the whole call, the part that triggered it, and why."""
        whole = self.call or self.subject
        if not whole:
            return f"Allow this {self.tool} call?\n(Asked because {self.reason}.)"
        shown, note = shown_whole(whole)
        lines = [f"Allow this {self.tool} call?"]
        if note:
            lines.append(note)
        lines.append(shown)
        if self.subject and self.subject.strip() != whole.strip():
            part, _ = shown_whole(self.subject, max_chars=300, max_lines=5)
            lines.append(f">> Asked about this part: {part}")
            lines.append(">> That is only part of the call: allowing it runs all of it.")
        lines.append(f"(Asked because {self.reason}.)")
        return "\n".join(lines)


def input_digest(data: bytes) -> str:
    """The binding of a question to one call's exact input (its arguments as JSON bytes)."""
    return hashlib.sha256(data).hexdigest()


def shown_whole(text: str, *, max_chars: int = SHOWN_MAX_CHARS, max_lines: int = SHOWN_MAX_LINES) -> tuple[str, str]:
    """`text` as a dialog can show it, and a note when it had to be cut (else "").

    Control and format characters (terminal escapes, carriage returns, bidirectional overrides, zero-width
    marks) are written as escapes, so nothing can hide or reorder what the user reads. A text over the
    bounds keeps its start and its end and says how much of the middle is not shown: the end is where an
    appended command would sit.
    """
    visible = _escaped(text)
    lines = visible.count("\n") + 1
    if len(visible) <= max_chars and lines <= max_lines:
        return visible, ""
    head_room = max(1, int(max_chars * _HEAD_SHARE))
    head_lines = max(1, int(max_lines * _HEAD_SHARE))
    head_end = _prefix_length(visible, head_room, head_lines)
    tail_start = len(visible) - _prefix_length(visible[::-1], max_chars - head_room, max_lines - head_lines)
    tail_start = max(tail_start, head_end)
    middle = visible[head_end:tail_start]
    note = (
        f"[The whole call is {len(visible):,} characters in {lines:,} line{'s' if lines != 1 else ''}, too long to "
        "show whole. Below are its "
        f"start and its end; the {len(middle):,} characters between them are NOT shown, and they run too. "
        "Deny unless you know what the whole call does.]"
    )
    hidden_lines = middle.count("\n") + 1
    gap = f"[… {len(middle):,} characters ({hidden_lines:,} line{'s' if hidden_lines != 1 else ''}) not shown …]"
    return f"{visible[:head_end]}\n{gap}\n{visible[tail_start:]}", note


def _prefix_length(text: str, max_chars: int, max_lines: int) -> int:
    """How much of the start of `text` fits in `max_chars` characters and `max_lines` lines."""
    end = min(len(text), max_chars)
    newline = -1
    for _ in range(max_lines):
        newline = text.find("\n", newline + 1, end)
        if newline < 0:
            return end
    return newline


_HIDING = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\uf8ff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000f0000-\U0010ffff]"
)
"""Characters that draw nothing or move what follows: controls (but newline and tab), format characters
(bidirectional overrides, zero-width marks, tag characters), line and paragraph separators, surrogates
and private use. A regex, so a megabyte of command is escaped at C speed."""


def _escaped(text: str) -> str:
    return _HIDING.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


Asker = Callable[[Question], Awaitable[bool | None]]
"""Asks the user; True allows once, False refuses, None means the client cannot be asked."""


class AnswerNeeded(Exception):
    """Raised by an asker that cannot wait for the answer within this request.

    Under 2026-07-28 the server returns `input_required`, and the client sends the call again with the answer.
    """

    def __init__(self, question: Question) -> None:
        super().__init__(question.message)
        self.question = question


@dataclass
class PermissionGate:
    """The policy, the hooks and what to do when a question cannot be asked."""

    policy: Policy
    hooks: Hooks = field(default_factory=lambda: Hooks(()))
    unanswered: Behaviour = "deny"
    sandboxed_bash: bool = False
    _by_roots: dict[tuple[Path, ...], Policy] = field(default_factory=dict, repr=False, compare=False)

    def for_tools(self, families: RuleFamilies) -> PermissionGate:
        """This gate judging tools whose rule families are `families` (the pipeline's tools, as they declare them)."""
        if families == self.policy.families:
            return self
        return dataclasses.replace(self, policy=self.policy.with_families(families), _by_roots={})

    def policy_for(self, roots: tuple[Path, ...] | None) -> Policy:
        """The policy anchored at the roots a session serves now (compiled once per set of roots)."""
        if roots is None or roots == self.policy.roots:
            return self.policy
        policy = self._by_roots.get(roots)
        if policy is None:
            if len(self._by_roots) >= _ROOT_SETS_KEPT:
                self._by_roots.clear()
            policy = self._by_roots[roots] = self.policy.with_roots(roots)
        return policy

    async def check(
        self,
        facts: CallFacts,
        tool_input: Mapping[str, Any],
        *,
        session_id: str,
        ask: Asker | None,
        roots: tuple[Path, ...] | None = None,
        input_json: Callable[[], bytes] | None = None,
    ) -> None:
        """Let the call go on, or raise. `roots`: the folders the calling session serves now.

        `input_json` gives the call's complete input as JSON bytes, asked for only when a question is put:
        the answer binds that exact input (a retried round must send the same call to find it).

        Raises:
            PermissionDeniedError: a rule, the mode, a hook or the user refused; the message says which.
        """
        policy = self.policy_for(roots)
        if _only_reads(facts) and not (policy.deny or policy.ask or self.hooks):
            return  # nothing could refuse it or ask about it: `decide` would allow it (~15 µs a Read saved)
        decision = policy.decide(facts)
        if decision.behaviour == "deny":
            raise PermissionDeniedError(_refusal(facts.tool, decision.reason))
        # Only a command no rule allows: a protected path or an ask rule stays a question (the sandbox keeps
        # protected paths read-only, but the user is the one to say yes to changing them).
        if decision.behaviour == "ask" and decision.unmatched and self.sandboxed_bash and facts.tool == "Bash":
            decision = Decision("allow", "the Bash sandbox confines it")
        if self.hooks:
            outcome = await self.hooks.run(
                "PreToolUse",
                {"session_id": session_id, "cwd": str(facts.cwd or ""), "tool_name": facts.tool,
                 "tool_input": dict(tool_input)},
            )  # fmt: skip
            decision = _with_hook(decision, outcome, facts)
            if decision.behaviour == "deny":
                raise PermissionDeniedError(decision.reason)
        if decision.behaviour == "ask":
            await self._ask(facts, decision, ask, input_json)

    async def _ask(
        self, facts: CallFacts, decision: Decision, ask: Asker | None, input_json: Callable[[], bytes] | None
    ) -> None:
        subject = decision.subject or (facts.command or "")
        call = facts.command if facts.command is not None else subject
        binding = input_digest(input_json()) if input_json is not None else ""
        question = Question(facts.tool, subject, decision.reason, call, binding)
        answer = await ask(question) if ask is not None else None
        if answer is True:
            logger.info("permission: the user allowed %s (%s)", facts.tool, decision.reason)
            return
        if answer is False:
            raise PermissionDeniedError(
                f"The user declined this {facts.tool} call (asked because {decision.reason}). "
                "Do not retry it as it is; ask the user how to go on."
            )
        if decision.protected:
            raise PermissionDeniedError(
                f"This {facts.tool} call writes a protected path and needs the user's confirmation "
                f"({decision.reason}), but this client cannot be asked (it does not support elicitation). "
                "It was not run. A protected path (the server's config files, .claude/, .mcp.json, .git/hooks, "
                ".git/config, .vscode/, shell start-up files, ...) changes how tools run later, so only the user "
                "can allow the change, and `unanswered_ask` never does. Do not look for another way to make it; "
                "ask the user to make this change themselves, or to use a client that can ask them."
            )
        if self.unanswered == "allow" and not _deny_rule_may_hold(decision):
            logger.info("permission: %s allowed without asking (the client cannot be asked)", facts.tool)
            return
        raise PermissionDeniedError(
            f"This {facts.tool} call needs the user's confirmation ({decision.reason}), but this client cannot "
            "be asked (it does not support elicitation). It was not run. The user can allow it in the server's "
            "permission rules (allow list) or run it themselves."
        )

    async def after(
        self, facts: CallFacts, tool_input: Mapping[str, Any], response: str, *, session_id: str
    ) -> list[str]:
        """Run PostToolUse hooks; what they say to the model (context, or why they objected)."""
        if not self.hooks:
            return []
        outcome = await self.hooks.run(
            "PostToolUse",
            {"session_id": session_id, "cwd": str(facts.cwd or ""), "tool_name": facts.tool,
             "tool_input": dict(tool_input), "tool_response": response[:RESPONSE_KEEP_CHARS]},
        )  # fmt: skip
        notes = list(outcome.context)
        if outcome.blocked:
            notes.append(f"A PostToolUse hook objected to this result: {outcome.message}")
        return notes


def _only_reads(facts: CallFacts) -> bool:
    """A call that writes nothing and runs no command: with no deny or ask rule, every mode lets it go."""
    return facts.read_only and facts.command is None and not facts.write_paths


def _deny_rule_may_hold(decision: Decision) -> bool:
    """A question asked because a deny rule could apply (`$(echo git) push`): only a person answers it."""
    return decision.rule is not None and decision.rule.behaviour == "deny"


def _refusal(tool: str, reason: str) -> str:
    return f"Permission to use {tool} was denied: {reason}. The call was not run."


def _with_hook(decision: Decision, outcome: HookOutcome, facts: CallFacts) -> Decision:
    if outcome.blocked:
        return Decision("deny", f"A PreToolUse hook blocked this {facts.tool} call: {outcome.message}")
    if outcome.decision == "deny":
        return Decision("deny", _refusal(facts.tool, f"a PreToolUse hook said no ({outcome.reason})"))
    if outcome.decision == "ask" and decision.behaviour == "allow":
        return Decision("ask", f"a PreToolUse hook asks ({outcome.reason})", None, decision.subject)
    if outcome.decision == "allow" and decision.behaviour == "ask" and not _deny_rule_may_hold(decision):
        return Decision("allow", f"a PreToolUse hook allowed it ({outcome.reason})")
    return decision
