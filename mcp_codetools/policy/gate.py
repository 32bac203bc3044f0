"""The permission step as the pipeline runs it: rules and mode, then hooks, then asking the user.

Order for one call: the policy decides (deny rules, the mode, ask rules, protected paths, allow rules);
a deny ends it. PreToolUse hooks run next: a hook's block or deny ends the call, a hook's ask turns an
allow into a question, a hook's allow answers a question, but never lifts a deny rule. A question goes
to the user through the client (`Asker`); when the client cannot be asked, the call is refused with the
reason, unless `unanswered_ask = "allow"`. With the Bash sandbox on, a command no rule denies or asks
about runs without a question (the sandbox confines it), as Claude Code's `autoAllowBashIfSandboxed`;
one that writes a protected path is still asked about.

Every refusal names what refused: the rule and its file, the mode and where it was set, or the hook.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_codetools.errors import PermissionDeniedError
from mcp_codetools.policy.engine import CallFacts, Decision, Policy
from mcp_codetools.policy.hooks import HookOutcome, Hooks
from mcp_codetools.policy.rules import Behaviour

logger = logging.getLogger(__name__)

RESPONSE_KEEP_CHARS = 20_000
"""What a PostToolUse hook sees of the result at most."""
_ROOT_SETS_KEPT = 64
"""Policies compiled for other sets of roots (HTTP sessions whose clients added roots), kept for reuse."""


@dataclass(frozen=True, slots=True)
class Question:
    """A call the user must confirm: what it is, and why it is asked."""

    tool: str
    subject: str
    reason: str

    @property
    def key(self) -> str:
        """Stable across a retried call, so an answer given on one round is found on the next."""
        digest = hashlib.sha256(f"{self.tool}\0{self.subject}\0{self.reason}".encode()).hexdigest()
        return f"permission-{digest[:24]}"

    @property
    def message(self) -> str:
        """The question as the user sees it: the tool, what it touches, and why it is asked."""
        what = f"{self.tool}: {self.subject}" if self.subject else self.tool
        return f"Allow this call? {what}\n(Asked because {self.reason}.)"


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
    ) -> None:
        """Let the call go on, or raise. `roots`: the folders the calling session serves now.

        Raises:
            PermissionDeniedError: a rule, the mode, a hook or the user refused; the message says which.
        """
        decision = self.policy_for(roots).decide(facts)
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
            await self._ask(facts, decision, ask)

    async def _ask(self, facts: CallFacts, decision: Decision, ask: Asker | None) -> None:
        question = Question(facts.tool, decision.subject or (facts.command or ""), decision.reason)
        answer = await ask(question) if ask is not None else None
        if answer is True:
            logger.info("permission: the user allowed %s (%s)", facts.tool, decision.reason)
            return
        if answer is False:
            raise PermissionDeniedError(
                f"The user declined this {facts.tool} call (asked because {decision.reason}). "
                "Do not retry it as it is; ask the user how to go on."
            )
        if self.unanswered == "allow":
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


def _refusal(tool: str, reason: str) -> str:
    return f"Permission to use {tool} was denied: {reason}. The call was not run."


def _with_hook(decision: Decision, outcome: HookOutcome, facts: CallFacts) -> Decision:
    if outcome.blocked:
        return Decision("deny", f"A PreToolUse hook blocked this {facts.tool} call: {outcome.message}")
    if outcome.decision == "deny":
        return Decision("deny", _refusal(facts.tool, f"a PreToolUse hook said no ({outcome.reason})"))
    if outcome.decision == "ask" and decision.behaviour == "allow":
        return Decision("ask", f"a PreToolUse hook asks ({outcome.reason})", None, decision.subject)
    if outcome.decision == "allow" and decision.behaviour == "ask":
        return Decision("allow", f"a PreToolUse hook allowed it ({outcome.reason})")
    return decision
