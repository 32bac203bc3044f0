"""What a 2026-07-28 HTTP client keeps between calls: state handles it holds, not a session (SEP-2567).

Such a request says nothing about who sent it: no session id, and a bearer token that every holder
shares. So a later call finds its state only through a handle the client passes back: a `state_id`
(`st_` and 128 random bits) names one CodeSession, with its reads (read-before-edit), working
directory, file history, saved output and jobs. A job id (`bash_` and 128 random bits) names a job
within its state: sent with another state (or none) it is refused, never served. A call without a
handle runs in a fresh state; the state is kept and its id handed out only if the call left something
a later call could need.

A handle is bound to the credentials it was made with (a digest of the Authorization header): the same
id sent with other credentials is refused, never served. Without credentials (loopback, no token) the
id is itself the capability, which the 128 bits make unguessable. A state ends after the idle period
of the HTTP transport (`session_idle_timeout_s`) without a call, which stops its jobs; its id and its
jobs' ids are then answered "expired" (the last `ENDED_KEYS_KEPT` of them), unknown ids "not found".

Behind a load balancer each replica holds its own states. With `[http] replica` set, a state id names
its replica (`st_<replica>_<random>`, the random part still 128 bits), and the `state_id` argument is
mirrored by clients into the `Mcp-Param-State-Id` header (`x-mcp-header`), so the balancer routes on the
header alone (deploy/haproxy); an id naming another replica is answered "wrong replica" (that replica
is down, or the balancer does not route by the header), never "not found". At most `[http] max_states`
states live at once (their own cap: the SDK counts handshake sessions, `max_sessions`, itself). A call
that would make one more ends one to make room (`SessionRegistry.evictable`): a state no one came back to,
of the credentials holding the most, so a burst of calls without a handle ends its own states; else one
idle for minutes. A call naming an ended one is told it was "evicted". Only when every state is in use is
the call refused ("at_capacity") and told to pass its state_id or wait.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio

from mcp_codetools.protocol.http_sessions import ENDED_KEYS_KEPT, EVICTED, SessionRegistry
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings

logger = logging.getLogger(__name__)

STATE_PREFIX = "st_"
HANDLE_BYTES = 16
"""128 bits, the least SEP-2567 asks of an unauthenticated handle."""


class HandleError(LookupError):
    """A handle that does not name a live state this caller may use; the message says what to do."""

    kind = "unknown"


class HandleExpired(HandleError):
    """The state (or the job's state) ended: idle for too long, or the server restarted."""

    kind = "expired"


class HandleEvicted(HandleExpired):
    """The state was ended to make room for new ones (`[http] max_states` were live)."""

    kind = "evicted"


class HandleMisrouted(HandleError):
    """The state id names another replica: this one never held it."""

    kind = "wrong_replica"


class StatesFull(HandleError):
    """No new state can be made: `[http] max_states` are live."""

    kind = "at_capacity"


class HandleForeign(HandleError):
    """The handle was made with other credentials."""

    kind = "foreign"


def principal_of(authorization: str | None) -> str:
    """Who a request is, as far as handles care: a digest of its credentials ("" without any)."""
    if not authorization:
        return ""
    return hashlib.sha256(authorization.encode("latin-1", "replace")).hexdigest()


def state_name(key: str) -> str:
    """A state as logs name it: a digest, since INFO logs reach every client and the id is the capability."""
    return "state #" + hashlib.sha256(key.encode()).hexdigest()[:12]


class StateRegistry:
    """The live states of 2026-07-28 HTTP clients, by state id, each bound to the principal that made it."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_timeout_s = settings.session_idle_timeout_s
        self.replica = settings.http_replica
        self.max_states = settings.http_max_states
        self._prefix = STATE_PREFIX + (f"{self.replica}_" if self.replica else "")
        self._states = SessionRegistry(
            settings,
            clock=clock,
            make=lambda: CodeSession(settings, unguessable_job_ids=True),
            name=state_name,
            log_level=logging.DEBUG,  # one per stateless call that kept nothing: noise at INFO, which clients get
        )
        self._principals: dict[str, str] = {}
        self._ended_jobs: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def live(self) -> list[CodeSession]:
        """The states open now."""
        return self._states.live()

    def mint(self, principal: str, *, beyond_cap: bool = False) -> tuple[str, CodeSession]:
        """A new state for `principal`, and its id (`st_[<replica>_]<128 random bits>`).

        `beyond_cap`: for a call that keeps nothing (a search), whose state ends with the call, so the
        live states are bounded by the calls in flight instead.

        Raises:
            StatesFull: `max_states` states are live.
        """
        if not beyond_cap and len(self._states) >= self.max_states:
            victim = self._states.evictable(owner=lambda key: self._principals.get(key, ""))
            if victim is not None:
                self._principals.pop(victim, None)
                self._states.evict(victim)
        if not beyond_cap and len(self._states) >= self.max_states:
            logger.info("refused a new state: %d states live, the cap ([http] max_states)", len(self._states))
            raise StatesFull(
                f"No new state can be made: this server keeps at most {self.max_states} states at once ([http] "
                "max_states, MCP_CODETOOLS_HTTP_MAX_STATES), and that many are live. If an earlier result gave you "
                "a state_id, pass it: your state is still there. Otherwise retry later: a state ends after "
                f"{self.idle_timeout_s:g} s without a call, freeing its place."
            )
        key = self._prefix + secrets.token_hex(HANDLE_BYTES)
        self._principals[key] = principal
        return key, self._states.session(key)

    def state(self, key: str, principal: str) -> CodeSession:
        """The state `key` names, for `principal`.

        Raises:
            HandleError: it is unknown, has expired, or belongs to other credentials.
        """
        key = key.strip()
        if self._states.why_ended(key) == EVICTED:
            raise HandleEvicted(
                f"State {key} was ended to make room for new states: this server keeps at most {self.max_states} "
                "at once ([http] max_states, MCP_CODETOOLS_HTTP_MAX_STATES), and calls without a state_id filled "
                "them. Its reads, working directory and file history are gone. Omit state_id to start a new state "
                "(Read files again before you edit them)."
            )
        if self._states.has_ended(key):
            raise HandleExpired(self._expired(f"state {key}"))
        if not self._states.is_open(key) and (elsewhere := self._replica_of(key)) is not None:
            here = f"replica {self.replica!r}" if self.replica else "a server without a replica name"
            raise HandleMisrouted(
                f"State {key} was made by replica {elsewhere!r}, but this request reached {here}: "
                f"{elsewhere} is down (then the state is lost, with its reads, working directory and background "
                "shells), or the load balancer does not route by the Mcp-Param-State-Id header. Start a new state: "
                "omit state_id (Read files again before you edit them)."
            )
        if not self._states.is_open(key):
            raise HandleError(
                f"No state {key!r} exists: state ids come from an earlier result of this server. Omit state_id "
                "to start a new state (Read files again before you edit them)."
            )
        if not secrets.compare_digest(self._principals.get(key, "\0"), principal):
            raise HandleForeign(
                f"State {key} was made with other credentials; it cannot be used with these. Omit state_id to start "
                "a new state."
            )
        return self._states.session(key)

    def _replica_of(self, key: str) -> str | None:
        """The other replica a state id names (None: it names this one, none, or is not a state id at all)."""
        if not key.startswith(STATE_PREFIX):
            return None
        name, sep, _ = key.removeprefix(STATE_PREFIX).partition("_")
        return name if sep and name and name != self.replica else None

    def job_elsewhere(self, job_id: str) -> HandleError | None:
        """Why job `job_id`, not in the caller's state, cannot be served: another state's, or ended (None: unknown).

        A job belongs to the state that started it: its id found in another state is never served, even
        with the same credentials (two clients share a token, or none), since holding an id is not being
        the client that started the job.
        """
        job_id = job_id.strip()
        for key in self._principals:
            if self._states.is_open(key) and job_id in self._states.session(key).job_ids():
                return HandleForeign(
                    f"Shell {job_id} was started in another state, not in this one; it is not served here. Pass the "
                    "state_id of the call that started it."
                )
        if job_id in self._ended_jobs:
            return HandleExpired(self._expired(f"shell {job_id}"))
        return None

    @contextmanager
    def activity(self, key: str) -> Iterator[None]:
        """A call runs in state `key` for the duration (it does not idle out meanwhile)."""
        with self._states.activity(key):
            yield

    async def end(self, key: str, reason: str) -> None:
        """End state `key` now: its jobs are stopped, its id and its jobs' ids answered "expired" from now on."""
        if self._states.is_open(key):
            for job_id in self._states.session(key).job_ids():
                self._ended_jobs[job_id] = None
            while len(self._ended_jobs) > ENDED_KEYS_KEPT:
                self._ended_jobs.popitem(last=False)
        self._principals.pop(key, None)
        await self._states.end(key, reason)

    async def reap_idle(self) -> None:
        """End every state idle for the timeout (each looked at again just before: see `SessionRegistry.reap_idle`)."""
        for key in self._states.idle_keys():
            if self._states.is_idle(key):
                await self.end(key, f"idle for {self.idle_timeout_s:g} s")

    async def run_reaper(self) -> None:
        """End idle states until cancelled (the server's lifespan runs this)."""
        interval = min(max(self.idle_timeout_s / 4, 0.01), 30.0)
        while True:
            await anyio.sleep(interval)
            await self.reap_idle()

    async def aclose(self) -> None:
        """End every state (the server is stopping)."""
        for key in list(self._principals):
            await self.end(key, "server stopping")

    def _expired(self, what: str) -> str:
        return (
            f"{what.capitalize()} has expired: a state ends after {self.idle_timeout_s:g} s without a call, or when "
            "the server restarts, and its background shells are stopped then. Omit state_id to start a new state "
            "(Read files again before you edit them)."
        )
