"""2026-07-28 HTTP states: handles bound to their credentials, 128 random bits, and their own errors on expiry."""

from __future__ import annotations

import contextlib
import dataclasses
import re

import pytest

from mcp_codetools.protocol.http_sessions import RECENT_USE_S
from mcp_codetools.protocol.state_handles import (
    HandleError,
    HandleEvicted,
    HandleExpired,
    HandleForeign,
    HandleMisrouted,
    StateRegistry,
    StatesFull,
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


async def test_a_call_that_comes_while_another_state_is_ending_keeps_its_own(
    states: StateRegistry, clock: Clock
) -> None:
    """Ending one idle state waits (its jobs stop); a call for the next idle one may come meanwhile."""
    first, a = states.mint("")
    second, b = states.mint("")
    calls = contextlib.ExitStack()

    async def a_call_for_b_arrives() -> None:
        calls.enter_context(states.activity(second))

    a.on_close(a_call_for_b_arrives)
    clock.now += 61
    with calls:
        await states.reap_idle()
        with pytest.raises(HandleExpired):
            states.state(first, "")
        assert states.state(second, "") is b, "the reaper ended a state with a call running in it"
    clock.now += 61
    await states.reap_idle()
    with pytest.raises(HandleExpired):
        states.state(second, "")


async def test_unknown_ids_and_other_states_jobs(states: StateRegistry) -> None:
    with pytest.raises(HandleError, match="No state 'st_nope' exists") as caught:
        states.state("st_nope", "")
    assert caught.value.kind == "unknown"
    _, session = states.mint("")
    job_id = "bash_" + "b" * 32
    session.job_ids = lambda: [job_id]  # type: ignore[method-assign]
    assert isinstance(states.job_elsewhere(job_id), HandleForeign)
    assert states.job_elsewhere("bash_1") is None


async def test_a_replica_names_itself_in_the_ids_it_mints_with_128_random_bits(settings: Settings) -> None:
    """`st_<replica>_<random>`: the balancer routes by the second `_` field, the random part stays 128 bits."""
    states = StateRegistry(dataclasses.replace(settings, http_replica="r-2"))
    try:
        keys = {states.mint("")[0] for _ in range(200)}
        assert len(keys) == 200 and all(re.fullmatch(r"st_r-2_[0-9a-f]{32}", key) for key in keys)
        key = next(iter(keys))
        assert key.split("_")[1] == "r-2" and states.state(key, "") is not None
    finally:
        await states.aclose()


async def test_an_id_of_another_replica_is_answered_wrong_replica_not_unknown(settings: Settings) -> None:
    here = StateRegistry(dataclasses.replace(settings, http_replica="r1"))
    unnamed = StateRegistry(settings)
    try:
        for states, where in ((here, "reached replica 'r1'"), (unnamed, "reached a server without a replica name")):
            with pytest.raises(HandleMisrouted, match=where) as caught:
                states.state("st_r2_" + "0" * 32, "")
            assert caught.value.kind == "wrong_replica"
            assert "Mcp-Param-State-Id" in str(caught.value) and "omit state_id" in str(caught.value)
        with pytest.raises(HandleError, match="No state") as unknown:  # its own name, but not a live state
            here.state("st_r1_" + "0" * 32, "")
        assert unknown.value.kind == "unknown"
    finally:
        await here.aclose()
        await unnamed.aclose()


async def test_states_past_the_cap_are_refused_with_what_to_do(settings: Settings, clock: Clock) -> None:
    """`[http] max_states`: the next new state is refused; the live ones still serve; an ended one frees a place."""
    states = StateRegistry(dataclasses.replace(settings, http_max_states=2, session_idle_timeout_s=60), clock=clock)
    try:
        first, _ = states.mint("")
        second, _ = states.mint("")
        with pytest.raises(StatesFull) as caught:
            states.mint("")
        message = str(caught.value)
        assert caught.value.kind == "at_capacity" and len(states) == 2
        assert "at most 2 states" in message and "[http] max_states" in message
        assert "pass it: your state is still there" in message and "after 60 s without a call" in message
        assert states.state(first, "") is not None and states.state(second, "") is not None
        searched, _ = states.mint("", beyond_cap=True)  # a search keeps nothing: its state ends with the call
        await states.end(searched, "the call left nothing to keep")
        clock.now += 61
        await states.reap_idle()
        assert len(states) == 0
        states.mint("")  # room again
    finally:
        await states.aclose()


def _called(states: StateRegistry, principal: str, key: str | None = None) -> str:
    """One call as the server makes it: in the state `key` names, or in a new one, for `principal`."""
    if key is None:
        key, _ = states.mint(principal)
    else:
        states.state(key, principal)
    with states.activity(key):
        pass
    return key


async def test_a_flood_of_new_states_evicts_its_own_and_refuses_no_one(settings: Settings, clock: Clock) -> None:
    """Issue 35: 300 Reads without state_id filled `[http] max_states`; every other client was then refused."""
    states = StateRegistry(dataclasses.replace(settings, http_max_states=8), clock=clock)
    alice, mallory = principal_of("Bearer alice"), principal_of("Bearer mallory")
    try:
        working = _called(states, alice)
        _called(states, alice, working)  # passed back: a client works with it
        clock.now += 5
        flood = [_called(states, mallory) for _ in range(300)]
        assert len(states) == 8
        assert states.state(working, alice) is not None, "a state used in the last minutes is kept"
        _called(states, alice, working)
        first_call = _called(states, principal_of("Bearer carol"))  # another client's first call
        _called(states, carol := principal_of("Bearer carol"), first_call)
        assert states.state(first_call, carol) is not None
        assert states.state(flood[-1], mallory) is not None, "the newest of the flood are the last to go"
        with pytest.raises(HandleEvicted) as caught:
            states.state(flood[0], mallory)
        message = str(caught.value)
        assert caught.value.kind == "evicted" and "[http] max_states" in message
        assert "Read files again" in message
    finally:
        await states.aclose()


async def test_states_in_use_are_never_evicted_and_an_idle_one_goes_first(settings: Settings, clock: Clock) -> None:
    states = StateRegistry(dataclasses.replace(settings, http_max_states=2, session_idle_timeout_s=3600), clock=clock)
    try:
        old = _called(states, "")
        _called(states, "", old)
        recent = _called(states, "")
        _called(states, "", recent)
        with states.activity(recent):
            with pytest.raises(StatesFull):  # both reused within the last minutes: nothing may go
                states.mint("")
            clock.now += RECENT_USE_S + 1  # `old` idle that long; `recent` is busy
            _called(states, "")
        assert states.state(recent, "") is not None
        with pytest.raises(HandleEvicted):
            states.state(old, "")
    finally:
        await states.aclose()
