"""The live `CodeSession`s of the HTTP server, one per `Mcp-Session-Id`, and when each one ends.

A session ends when its client deletes it (HTTP DELETE), when it idles out, or when the server stops;
ending it closes the `CodeSession`, which kills its jobs. Idle means what the SDK's session manager
means by it, measured on the same requests: no HTTP request for the session in flight (an open GET
stream counts as one) for `session_idle_timeout_s`. The SDK is given the same period, so the SDK's
transport and our state end together; whichever notices first, the id is then refused.

The same registry holds the 2026-07-28 states (`state_handles.py`), which are capped: to make room for a
new one, `evictable` names the state to end, so that a burst of calls without a handle ends its own states
rather than keeping everyone else out (see there).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio

from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings

logger = logging.getLogger(__name__)

ENDED_KEYS_KEPT = 4096
"""How many ended session ids are remembered and refused (the SDK forgets them too; this covers the race)."""
RECENT_USE_S = 300.0
"""A state a client used again within this long is never ended to make room for another (it is being worked with)."""
EVICTED = "evicted to make room"
"""The reason `end` records for a state `evictable` chose."""


class SessionEnded(LookupError):
    """A request named a session that has already ended."""


@dataclass
class _Entry:
    idle_since: float
    busy: int = 0
    session: CodeSession | None = field(default=None)
    uses: int = 0
    """Requests (calls) that ran in it: 1 for a state no one has come back to."""


class SessionRegistry:
    """CodeSessions by session id, with the activity that keeps each one alive."""

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        make: Callable[[], CodeSession] | None = None,
        name: Callable[[str], str] | None = None,
        log_level: int = logging.INFO,
    ) -> None:
        self.settings = settings
        self._make = make or (lambda: CodeSession(settings))
        self._name = name or (lambda key: f"session {key[:16]}")
        """How the log names a session: what it logs at INFO also goes to clients, so never a whole secret key."""
        self._log_level = log_level
        self.idle_timeout_s = settings.session_idle_timeout_s
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()
        self._evicted: list[CodeSession] = []
        """Sessions `evict` took out, closed by the next `end` (eviction happens where nothing may wait)."""

    def __len__(self) -> int:
        return sum(1 for entry in self._entries.values() if entry.session is not None)

    def live(self) -> list[CodeSession]:
        """The sessions open now."""
        return [entry.session for entry in self._entries.values() if entry.session is not None]

    def is_open(self, key: str) -> bool:
        """Whether `key` names a live session that has made its state."""
        entry = self._entries.get(key)
        return entry is not None and entry.session is not None

    def has_ended(self, key: str) -> bool:
        """Whether `key` named a session that has ended, so a request with it is refused, not given a new one."""
        return key in self._ended

    def why_ended(self, key: str) -> str | None:
        """The reason `key`'s session ended (`EVICTED`, idle, deleted...), or None when it has not (or is forgotten)."""
        return self._ended.get(key)

    @contextmanager
    def activity(self, key: str) -> Iterator[None]:
        """One HTTP request for session `key` is in flight for the duration."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(idle_since=self._clock())
        entry.busy += 1
        entry.uses += 1
        try:
            yield
        finally:
            entry.busy -= 1
            entry.idle_since = self._clock()
            if entry.busy == 0 and entry.session is None and self._entries.get(key) is entry:
                del self._entries[key]  # no state was ever made: nothing to keep (also unknown ids)

    def session(self, key: str) -> CodeSession:
        """The session's CodeSession, made on first use. Raises `SessionEnded` for an ended session."""
        if key in self._ended:
            raise SessionEnded(key)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(idle_since=self._clock())
        if entry.session is None:
            entry.session = self._make()
            logger.log(self._log_level, "%s: opened", self._name(key))
        return entry.session

    def evictable(self, owner: Callable[[str], str] | None = None) -> str | None:
        """The session to end so that a new one fits, or None when each one is in use.

        Never one with a call running, a background job, or none run in it yet (it is being made), nor one
        used again within `RECENT_USE_S`. First those no one came back to (a burst of calls without a
        handle makes many), of the `owner` holding the most sessions, least recently used first; then those
        idle for `RECENT_USE_S`, least recently used first.
        """
        now = self._clock()
        once: list[str] = []
        idle: list[str] = []
        for key, entry in self._entries.items():
            if entry.session is None or entry.busy or not entry.uses or entry.session.job_ids():
                continue
            if entry.uses == 1:
                once.append(key)
            elif now - entry.idle_since >= RECENT_USE_S:
                idle.append(key)
        if once:
            owner_of = owner or (lambda key: "")
            held = Counter(owner_of(key) for key in self._entries)
            return min(once, key=lambda k: (-held[owner_of(k)], self._entries[k].idle_since))
        return min(idle, key=lambda k: self._entries[k].idle_since) if idle else None

    def evict(self, key: str) -> None:
        """End session `key` now, without waiting: its id is refused at once, its CodeSession closed by the next `end`.

        For a session `evictable` named: no call runs in it and it has no job, so closing it later holds nothing up.
        """
        entry = self._forget(key, EVICTED)
        if entry is not None and entry.session is not None:
            self._evicted.append(entry.session)

    def _forget(self, key: str, reason: str) -> _Entry | None:
        self._ended[key] = reason
        while len(self._ended) > ENDED_KEYS_KEPT:
            self._ended.popitem(last=False)
        entry = self._entries.pop(key, None)
        if entry is not None and entry.session is not None:
            logger.log(self._log_level, "%s: closed (%s)", self._name(key), reason)
        return entry

    async def end(self, key: str, reason: str) -> None:
        """End session `key` for good: refuse its id from now on and close its CodeSession."""
        entry = self._forget(key, reason)
        closing = [entry.session] if entry is not None and entry.session is not None else []
        closing += self._evicted
        self._evicted = []
        with anyio.CancelScope(shield=True):
            for session in closing:
                await session.aclose()

    def idle_keys(self) -> list[str]:
        """The sessions with no call running that have been idle for the timeout."""
        return [key for key in self._entries if self.is_idle(key)]

    def is_idle(self, key: str) -> bool:
        """Whether session `key` has no call running and has been idle for the timeout."""
        entry = self._entries.get(key)
        return entry is not None and entry.busy == 0 and self._clock() - entry.idle_since >= self.idle_timeout_s

    async def reap_idle(self) -> None:
        """End every session idle for the timeout.

        Each is looked at again just before it ends: ending one waits (its jobs are stopped), and a call may
        have come for the next one meanwhile, which must not find its session closed under it.
        """
        for key in self.idle_keys():
            if self.is_idle(key):
                await self.end(key, f"idle for {self.idle_timeout_s:g} s")

    async def run_reaper(self) -> None:
        """Close idle sessions until cancelled (the server's lifespan runs this)."""
        interval = min(max(self.idle_timeout_s / 4, 0.01), 30.0)
        while True:
            await anyio.sleep(interval)
            await self.reap_idle()

    async def aclose(self) -> None:
        """End every session (the server is stopping)."""
        for key in list(self._entries):
            await self.end(key, "server stopping")
        evicted, self._evicted = self._evicted, []
        with anyio.CancelScope(shield=True):
            for session in evicted:
                await session.aclose()
