"""Every exit of the pipeline: unexpected exceptions, cancellation, and the permission step."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import Field

from mcp_codetools.pipeline import Pipeline, format_validation_error
from mcp_codetools.session import CodeSession
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput
from tests.gates import Gates

pytestmark = pytest.mark.anyio


class BoomInput(ToolInput):
    file_path: str | None = Field(default=None, description="a path")


class Boom(Tool[BoomInput]):
    name = "Boom"
    title = "Boom"
    description = "Raises (test tool)."
    input_model = BoomInput
    path_fields = ("file_path",)
    validated: list[str] = []

    async def validate_input(self, args: BoomInput, ctx: CallContext) -> None:
        self.validated.append(str(ctx.paths.get("file_path")))

    async def call(self, args: BoomInput, ctx: CallContext, prepared: None) -> ToolOutput:
        raise RuntimeError("secret internals")


class Unsure(Tool[BoomInput]):
    name = "Unsure"
    title = "Unsure"
    description = "Cannot decide its safety (test tool)."
    input_model = BoomInput

    def is_concurrency_safe(self, args: BoomInput) -> bool:
        raise ValueError("parser broke")

    async def call(self, args: BoomInput, ctx: CallContext, prepared: None) -> ToolOutput:
        return ToolOutput("ran")


async def test_unexpected_exception_is_logged_and_answered(
    session: CodeSession, caplog: pytest.LogCaptureFixture
) -> None:
    pipe = Pipeline([Boom(), *default_tools()])
    with caplog.at_level(logging.ERROR):
        out = await pipe.run(session, "Boom", {})
    assert out.is_error and out.meta["errorCode"] == "internal_error"
    assert "secret internals" not in out.text
    assert "secret internals" in caplog.text and "Traceback" in caplog.text
    assert not (await pipe.run(session, "Boom", {})).text.startswith("No such tool")


async def test_permission_runs_before_state_checks(session: CodeSession, outside: Path) -> None:
    boom = Boom()
    boom.validated = []
    out = await Pipeline([boom]).run(session, "Boom", {"file_path": str(outside / "secret.txt")})
    assert out.meta["errorCode"] == "permission_denied"
    assert boom.validated == [], "validate_input must not see a path outside the roots"


async def test_call_gets_what_validate_input_returned(session: CodeSession) -> None:
    checked = object()

    class Handoff(Tool[BoomInput, object]):
        name = "Handoff"
        title = "Handoff"
        description = "Hands a value from the state check to the call (test tool)."
        input_model = BoomInput

        async def validate_input(self, args: BoomInput, ctx: CallContext) -> object:
            return checked

        async def call(self, args: BoomInput, ctx: CallContext, prepared: object) -> ToolOutput:
            return ToolOutput("same" if prepared is checked else f"got {prepared!r}")

    out = await Pipeline([Handoff()]).run(session, "Handoff", {})
    assert out.text == "same"


async def test_failing_safety_decision_still_runs_the_call(session: CodeSession) -> None:
    out = await Pipeline([Unsure()]).run(session, "Unsure", {})
    assert out.text == "ran"


async def test_cancellation_propagates(session: CodeSession, gates: Gates) -> None:
    pipe = Pipeline([gates.tool("Hang")])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            gates.submit(tg, pipe, session, "Hang", "never opened")
            await gates.until(lambda: "never opened" in gates.started)
            tg.cancel_scope.cancel()
    assert gates.ended == {"never opened"} and gates.outputs == {}, "a cancelled call returns no result"
    assert gates.log == ["start never opened", "cleanup never opened"]
    assert session.dispatcher.snapshot() == []


def test_validation_messages_name_each_problem() -> None:
    from pydantic import ValidationError

    from mcp_codetools.tools.edit import EditInput

    with pytest.raises(ValidationError) as caught:
        EditInput.model_validate({"file_path": 3, "old_string": "a", "replace_all": "maybe", "x": 1})
    text = format_validation_error("Edit", caught.value)
    assert text.splitlines() == [
        "Edit failed due to the following issues:",
        "The parameter `file_path` must be a string, but a number was provided.",
        "The required parameter `new_string` is missing.",
        "The parameter `replace_all` must be a boolean, but a string was provided.",
        "An unexpected parameter `x` was provided.",
    ]


async def test_progress_values_only_increase() -> None:
    from mcp_codetools.pipeline import ProgressReporter

    sent: list[float] = []

    async def send(value: float, total: float | None, message: str | None) -> None:
        sent.append(value)

    reporter = ProgressReporter(send)
    for value in (5.0, 3.0, 3.0, 10.0):
        await reporter(value, None, "x")
    assert sent == [5.0, 6.0, 7.0, 10.0]


def _plain_text(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and "enum" not in schema


async def test_unpaired_surrogates_are_refused_for_every_tool(session: CodeSession, root: Path) -> None:
    pipe = Pipeline(default_tools())
    cases = {
        "Read": {"file_path": "a\ud800b"},
        "Write": {"file_path": str(root / "w.txt"), "content": "bad \ud800"},
        "Edit": {"file_path": str(root / "w.txt"), "old_string": "\udfff", "new_string": "x"},
    }
    for tool in default_tools():  # every tool: a lone surrogate in each of its plain text fields
        properties = tool.input_model.model_json_schema()["properties"]
        texts = [key for key, prop in properties.items() if any(_plain_text(p) for p in [prop, *prop.get("anyOf", [])])]
        assert texts, f"{tool.name} has no text field to try"
        cases.update({f"{tool.name}.{key}": {key: "a\ud800b"} for key in texts})
    tried = set()
    for case, arguments in cases.items():
        name = case.split(".")[0]
        out = await pipe.run(session, name, arguments)
        assert out.is_error and out.meta["errorCode"] == "invalid_input", (case, out.text)
        # Fields with a pattern constraint are refused by pydantic-core's own check ("... a unicode string").
        assert "unpaired surrogate" in out.text or "unicode string" in out.text, (case, out.text)
        tried.add(name)
    assert tried == {tool.name for tool in default_tools()}
    assert not (root / "w.txt").exists()
