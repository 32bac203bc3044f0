"""The HTTP session registry: one CodeSession per id, idle only with nothing in flight, ended for good."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest

from mcp_codetools.protocol.http_sessions import SessionEnded, SessionRegistry
from mcp_codetools.settings import Settings, settings_from_env

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry(settings: Settings, clock: Clock) -> SessionRegistry:
    return SessionRegistry(dataclasses.replace(settings, session_idle_timeout_s=60), clock=clock)


async def test_each_id_has_its_own_session(registry: SessionRegistry) -> None:
    a, b = registry.session("a"), registry.session("b")
    assert a is not b and registry.session("a") is a
    await registry.aclose()


async def test_a_session_with_a_request_in_flight_never_idles(registry: SessionRegistry, clock: Clock) -> None:
    registry.session("a")
    with registry.activity("a"):
        clock.now += 3600
        assert registry.idle_keys() == []
    assert registry.idle_keys() == [], "idle counts from the end of the last request"
    clock.now += 60
    assert registry.idle_keys() == ["a"]


async def test_ending_closes_the_session_and_refuses_its_id(registry: SessionRegistry, clock: Clock) -> None:
    closed: list[str] = []
    session = registry.session("a")

    async def closer() -> None:
        closed.append("a")

    session.on_close(closer)
    clock.now += 61
    await registry.reap_idle()
    assert closed == ["a"] and len(registry) == 0
    assert registry.has_ended("a")
    with pytest.raises(SessionEnded):
        registry.session("a")


async def test_a_request_that_comes_while_another_session_is_ending_keeps_its_own(
    registry: SessionRegistry, clock: Clock
) -> None:
    a, b = registry.session("a"), registry.session("b")
    requests = contextlib.ExitStack()

    async def a_request_for_b_arrives() -> None:
        requests.enter_context(registry.activity("b"))

    a.on_close(a_request_for_b_arrives)
    clock.now += 61
    with requests:
        await registry.reap_idle()
        assert registry.has_ended("a") and registry.session("b") is b
    await registry.aclose()


async def test_requests_for_ids_without_state_leave_nothing_behind(registry: SessionRegistry) -> None:
    for n in range(100):
        with registry.activity(f"unknown-{n}"):
            pass
    assert registry.idle_keys() == [] and len(registry) == 0


def test_the_idle_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CODETOOLS_SESSION_IDLE_TIMEOUT_S", "90")
    assert settings_from_env().session_idle_timeout_s == 90
    for bad in ("-1", "0", "nan", "soon"):  # refused, naming the variable, never replaced by the default
        monkeypatch.setenv("MCP_CODETOOLS_SESSION_IDLE_TIMEOUT_S", bad)
        with pytest.raises(ValueError, match="MCP_CODETOOLS_SESSION_IDLE_TIMEOUT_S"):
            settings_from_env()
