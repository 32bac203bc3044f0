"""
Gated test tools: a call runs until the test opens the gate named by its `key`, and records what it did.

Tests order calls by these records instead of by sleeps or by peeking at the event loop: `until` waits for
a condition, `submit` starts a call and records its arrival and its end, and `quiet` says when nothing can
move any more without the test (every call has arrived, every call the dispatcher let go is inside its
body, every opened body has ended, every cancelled call has ended). The `gates` fixture (tests/conftest.py)
gives a fresh set to each test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup
from pydantic import Field

from mcp_codetools.dispatcher import Dispatcher
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


class GateInput(ToolInput):
    key: str = Field(description="which gate to wait for")


class Gates:
    """The gates the test opens, and the log of what the gated calls did."""

    def __init__(self) -> None:
        self._gates: dict[str, anyio.Event] = {}
        self._changed = anyio.Event()
        self.log: list[str] = []
        """`start KEY` and `cleanup KEY`, in the order the bodies did them."""
        self.started: list[str] = []
        self.finished: list[str] = []
        self.cleaned: list[str] = []
        self.committed: list[str] = []
        """Keys whose deferred session change the dispatcher committed, in commit order."""
        self.running: set[str] = set()
        self.max_running = 0
        self.submitted: dict[str, anyio.CancelScope] = {}
        self.arrived: list[str] = []
        self.outputs: dict[str, ToolOutput] = {}
        self.ended: set[str] = set()
        """Submitted calls that are over: answered or cancelled."""

    def gate(self, key: str) -> anyio.Event:
        return self._gates.setdefault(key, anyio.Event())

    def open(self, key: str) -> None:
        self.gate(key).set()

    def tool(self, tool_name: str = "Wait", *, safe: bool = False) -> Tool[GateInput]:
        """A tool named `tool_name` whose calls wait for their gate; `safe` answers is_concurrency_safe."""
        gates = self

        class Gated(Tool[GateInput]):
            name = tool_name
            title = tool_name
            description = "Waits until the test opens the gate named by `key` (test tool)."
            input_model = GateInput

            def is_concurrency_safe(self, args: GateInput) -> bool:
                return safe

            async def call(self, args: GateInput, ctx: CallContext, prepared: object = None) -> ToolOutput:
                # `prepared`: what validate_input handed over, once the typed hand-off lands (issue 11); none here.
                return await gates._body(args.key, ctx)

        return Gated()

    async def _body(self, key: str, ctx: CallContext) -> ToolOutput:
        self.log.append(f"start {key}")
        self.started.append(key)
        self.running.add(key)
        self.max_running = max(self.max_running, len(self.running))
        ctx.defer(lambda: self.committed.append(key))
        self._notify()
        try:
            await self.gate(key).wait()
        finally:
            self.running.discard(key)
            self.cleaned.append(key)
            self.log.append(f"cleanup {key}")
            self._notify()
        self.finished.append(key)
        return ToolOutput(f"done {key}")

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait until `condition` holds; it is checked again after each thing a gated call or `submit` records.

        Bound it with `anyio.fail_after` (a condition that never holds waits forever).
        """
        while not condition():
            await self._changed.wait()

    def submit(
        self,
        tg: TaskGroup,
        pipeline: Pipeline,
        session: CodeSession,
        tool: str,
        key: str,
        arguments: Mapping[str, Any] | None = None,
    ) -> anyio.CancelScope:
        """Start a call of `tool` with `{"key": key}` (or `arguments`); returns the scope that cancels it."""
        scope = anyio.CancelScope()
        self.submitted[key] = scope
        tg.start_soon(self._run, scope, pipeline, session, tool, key, {"key": key} if arguments is None else arguments)
        return scope

    async def _run(
        self,
        scope: anyio.CancelScope,
        pipeline: Pipeline,
        session: CodeSession,
        tool: str,
        key: str,
        arguments: Mapping[str, Any],
    ) -> None:
        # Arrival is recorded in the same step as the pipeline numbers the call and asks for a slot (there is
        # no await between them), so an arrived call is known to the dispatcher.
        self.arrived.append(key)
        self._notify()
        try:
            with scope:
                self.outputs[key] = await pipeline.run(session, tool, arguments)
        finally:
            self.ended.add(key)
            self._notify()

    def quiet(self, dispatcher: Dispatcher) -> bool:
        """Nothing can happen any more until the test opens a gate or cancels a call."""
        let_go = sum(1 for *_, started in dispatcher.snapshot() if started)
        return (
            len(self.arrived) == len(self.submitted)
            and let_go == len(self.running)
            and not any(self.gate(key).is_set() for key in self.running)
            and all(key in self.ended for key, scope in self.submitted.items() if scope.cancel_called)
        )

    async def settle(self, dispatcher: Dispatcher) -> None:
        await self.until(lambda: self.quiet(dispatcher))
