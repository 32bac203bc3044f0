"""Asking the user to confirm a call, through MCP elicitation, on either protocol era.

Up to 2025-11-25 the server sends `elicitation/create` in the middle of the call and waits. From
2026-07-28 there is no such back-channel: the call ends with `input_required` naming the question, and
the client sends the same call again with the answer in `input_responses`; the question's key is a
digest of the call's whole input (`Question.key`), so the answer is found on the second round and binds
that exact call: it answers no other call, even one whose triggering part is the same. A client that declared no
elicitation capability is not asked at all (the permission step then refuses, or allows if configured).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import is_version_at_least

from mcp_codetools.policy.gate import AnswerNeeded, Asker, Question

logger = logging.getLogger(__name__)

ALLOW = "allow once"
DENY = "deny"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "description": "Allow this one call, or deny it.",
            "enum": [ALLOW, DENY],
        }
    },
    "required": ["decision"],
}
INPUT_REQUIRED_VERSION = "2026-07-28"


def can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the client takes form elicitation, so a permission question can be put to the user."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    # An empty `elicitation: {}` means form mode (the spec's default for older clients).
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def permission_asker(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Asker:
    """The `Asker` for one `tools/call` request."""
    answers = params.input_responses or {}
    rounds = is_version_at_least(ctx.protocol_version, INPUT_REQUIRED_VERSION)

    async def ask(question: Question) -> bool | None:
        if not can_elicit(ctx):
            return None
        if rounds:
            answer = answers.get(question.key)
            if answer is None:
                raise AnswerNeeded(question)
            return _allowed(answer)
        try:
            result = await ctx.session.elicit_form(question.message, SCHEMA, related_request_id=ctx.request_id)
        except Exception as exc:  # the client refused the request itself: nobody could be asked
            logger.info("elicitation failed (%s); treating the client as unable to ask", exc)
            return None
        return _allowed(result)

    return ask


def input_required(question: Question) -> types.InputRequiredResult:
    """The 2026-07-28 answer to a call that needs the user: the question, for the client to ask and retry."""
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=question.message, requested_schema=SCHEMA)
    )
    return types.InputRequiredResult(input_requests={question.key: request})


def _allowed(answer: object) -> bool:
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
        return False
    content = answer.content or {}
    return content.get("decision") == ALLOW
