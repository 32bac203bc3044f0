"""
Property-based fuzzing of every tool's arguments through the pipeline, and through the MCP client.

Every call ends with a result or an error result (never an exception, never an internal error),
nothing outside the root changes, no temporary file is left, and the session keeps answering. The
tools are taken from `default_tools()`, so a new tool is fuzzed from its schema as soon as it is listed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from mcp_codetools.pipeline import META_KEY
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.settings import Settings
from mcp_codetools.tools.base import ToolOutput
from tests.reliability.harness import Arena, ErrorLog, describe, known_bug, no_live_children, tool_named, tool_names
from tests.reliability.report import FIGURES, Figures
from tests.reliability.strategies import arguments_for, json_values, plausible_calls, unknown_tool_names
from tests.reliability.workspace import SECRET_MARKERS, Layout

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:Generating overly large repr")]

FUZZ = settings(
    # Each run draws its own seed, so CI runs add up: 25 examples a tool (40 cost 10.4 CPU-s in a whole run).
    max_examples=800 if FIGURES.long_mode else 25,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
Call = tuple[str, Any]


def calls_to(name: str) -> st.SearchStrategy[list[Call]]:
    """One to four calls to `name` with schema-drawn arguments, or a set-up sequence that can get past its checks."""
    tool = tool_named(name)
    drawn = st.lists(arguments_for(tool), min_size=1, max_size=4).map(lambda many: [(name, a) for a in many])
    plausible = plausible_calls(name)
    if plausible is None:
        return drawn
    return st.one_of(drawn, st.lists(plausible, min_size=1, max_size=3).map(lambda runs: [c for r in runs for c in r]))


def any_call() -> st.SearchStrategy[Call]:
    known = st.sampled_from(tool_names()).flatmap(lambda n: st.tuples(st.just(n), arguments_for(tool_named(n))))
    unknown = st.tuples(unknown_tool_names(), st.one_of(st.none(), st.dictionaries(st.text(max_size=8), json_values())))
    return st.one_of(known, known, known, unknown)


def fuzz_tool(name: str) -> Any:
    """The fuzz test of one tool (one per tool, each with its own example budget)."""

    @FUZZ
    @given(calls=calls_to(name))
    async def test(arena: Arena, calls: list[Call]) -> None:
        for call_name, args in calls:
            await arena.call(call_name, args)
        await arena.check_world(f"after {name} calls")

    test.__name__ = test.__qualname__ = f"test_{name.lower()}_survives_hostile_arguments"
    test.__doc__ = f"Hostile arguments for {name} end as results, confined, with the session still answering."
    return test


for _name in tool_names():
    _test = fuzz_tool(_name)
    globals()[_test.__name__] = _test


@FUZZ
@given(calls=st.lists(any_call(), min_size=2, max_size=6))
async def test_mixed_sequences_across_all_tools(arena: Arena, calls: list[Call]) -> None:
    for name, args in calls:
        await arena.call(name, args)
    await arena.check_world("after a mixed sequence")


# Through the real MCP client, in memory (legacy handshake, JSON-RPC framing): fewer examples.


@pytest.fixture
async def client(layout: Layout) -> AsyncIterator[Client]:
    app = CodeToolsServer(Settings(roots=(layout.root,)))
    async with Client(app.server, mode="legacy") as connected:
        yield connected
    await no_live_children()


@settings(FUZZ, max_examples=400 if FIGURES.long_mode else 25)
@given(calls=st.lists(any_call(), min_size=1, max_size=4))
async def test_hostile_calls_through_the_mcp_client(
    client: Client, layout: Layout, figures: Figures, suite: str, calls: list[Call]
) -> None:
    before = Arena.outside(layout)
    log = ErrorLog()
    logging.getLogger("mcp_codetools").addHandler(log)
    try:
        for name, args in calls:
            args = layout.expand(args)
            with anyio.fail_after(60):
                result = await client.call_tool(name, args)
            figures.count(suite, calls=1, inputs=1)
            assert_not_internal(result, log, figures, describe(name, args))
        with anyio.fail_after(10):
            assert (await client.list_tools()).tools, "the server stopped answering"
    finally:
        logging.getLogger("mcp_codetools").removeHandler(log)
    assert not before.changes(Arena.outside(layout))


def assert_not_internal(result: Any, log: ErrorLog, figures: Figures, shown: str) -> None:
    meta = (result.meta or {}).get(META_KEY, {})
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    leaked = [marker for marker in SECRET_MARKERS if marker in text]
    assert not leaked, f"{shown} leaked outside content {leaked}: {text[:300]}"
    bug = known_bug(ToolOutput(text, meta=dict(meta), is_error=bool(result.is_error)), log.records)
    records = [r.getMessage() for r in log.records]
    log.records.clear()
    if bug is not None:
        figures.known_bug(bug)
        return
    assert meta.get("errorCode") != "internal_error", f"{shown}: {text} {records}"
    assert not records, f"{shown} logged errors: {records}"
