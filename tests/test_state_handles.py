"""2026-07-28 HTTP states: handles bound to their credentials, 128 random bits, and their own errors on expiry."""

from __future__ import annotations

import dataclasses
import re

import pytest

from mcp_codetools.protocol.state_handles import (
    HandleError,
    HandleExpired,
    HandleForeign,
    StateRegistry,
    principal_of,
)
from mcp_codetools.settings import Settings
from tests.test_session_registry import Clock

pytestmark = pytest.mark.anyio


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def states(settings: Settings, clock: Clock) -> object:
    registry = StateRegistry(dataclasses.replace(settings, session_idle_timeout_s=60), clock=clock)
    yield registry
    await registry.aclose()


async def test_ids_carry_128_random_bits_and_name_their_own_state(states: StateRegistry) -> None:
    keys = {states.mint("")[0] for _ in range(200)}
    assert len(keys) == 200 and all(re.fullmatch(r"st_[0-9a-f]{32}", key) for key in keys)
    key, session = states.mint("")
    assert states.state(key, "") is session and states.state(f"  {key}\n", "") is session


async def test_other_credentials_never_reach_a_state(states: StateRegistry) -> None:
    alice, bob = principal_of("Bearer alice"), principal_of("Bearer bob")
    assert alice != bob and principal_of(None) == ""
    key, _ = states.mint(alice)
    for who in (bob, ""):
        with pytest.raises(HandleForeign, match="other credentials"):
            states.state(key, who)


async def test_an_idle_state_expires_and_says_so_for_itself_and_its_jobs(states: StateRegistry, clock: Clock) -> None:
    key, session = states.mint("")
    assert session.unguessable_job_ids
    job_id = "bash_" + "a" * 32
    session.job_ids = lambda: [job_id]  # type: ignore[method-assign]  # a job of its own; only the id matters
    clock.now += 59
    await states.reap_idle()
    assert states.state(key, "") is session, "not idle for the whole period yet"
    with states.activity(key):
        clock.now += 3600
        await states.reap_idle()
    assert states.state(key, "") is session, "a call in flight keeps it"
    clock.now += 61
    await states.reap_idle()
    with pytest.raises(HandleExpired, match="has expired: a state ends after 60 s without a call"):
        states.state(key, "")
    assert isinstance(states.job_elsewhere(job_id), HandleExpired)


async def test_unknown_ids_and_other_states_jobs(states: StateRegistry) -> None:
    with pytest.raises(HandleError, match="No state 'st_nope' exists") as caught:
        states.state("st_nope", "")
    assert caught.value.kind == "unknown"
    _, session = states.mint("")
    job_id = "bash_" + "b" * 32
    session.job_ids = lambda: [job_id]  # type: ignore[method-assign]
    assert isinstance(states.job_elsewhere(job_id), HandleForeign)
    assert states.job_elsewhere("bash_1") is None
