"""The ordering rule for one session's calls, carried over from the seed to MCP.

Calls are numbered as they arrive. A concurrency-safe call starts once every earlier unsafe call has
finished, no earlier safe call is still waiting, and fewer than `limit` safe calls are running. Any
other call starts only when every earlier call has finished, and nothing later starts until it has
finished. Session changes a call produces are committed in arrival order, whatever order calls end in.

A transport that hands calls to two handlers (stdio's fast lane and the SDK) numbers each call when its
line is read (`reserve`); the handler that runs it later takes that ticket by the request's id (`claim`),
so the order is the order of the lines, whichever handler gets there first.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from mcp_codetools.errors import QueueTimeoutError

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class Ticket:
    """One call's place in the order."""

    seq: int
    label: str = "?"
    safe: bool = False
    ready: bool = False
    started: bool = False
    finished: bool = False
    arrived: float = field(default_factory=time.perf_counter)
    start_time: float | None = None
    changes: list[Callable[[], None]] = field(default_factory=list)
    held: bool = False
    """Kept for the handler that will `claim` it: finishing it is that handler's."""
    _go: anyio.Event | None = None

    @property
    def queued_ms(self) -> float:
        """How long the call waited for its slot, in ms (so far, while it still waits)."""
        end = self.start_time if self.start_time is not None else time.perf_counter()
        return (end - self.arrived) * 1000


class Dispatcher:
    """Admits calls in arrival order and hands out slots by the rule above."""

    def __init__(self, limit: int = 10, queue_timeout_s: float = 600.0) -> None:
        self.limit = max(1, limit)
        self.queue_timeout_s = queue_timeout_s
        self._next_seq = 0
        self._active: OrderedDict[int, Ticket] = OrderedDict()
        self._commit_queue: deque[Ticket] = deque()
        self._running_safe = 0
        self._reserved: dict[object, Ticket] = {}

    def admit(self, label: str = "?") -> Ticket:
        """Number a call. Synchronous, so nothing can reorder calls between arrival and numbering."""
        self._next_seq += 1
        ticket = Ticket(self._next_seq, label)
        self._active[ticket.seq] = ticket
        self._commit_queue.append(ticket)
        return ticket

    def reserve(self, key: object, label: str = "?") -> Ticket:
        """Number a call now (as `admit`) for the handler that will `claim` it by `key` (a request id)."""
        ticket = self.admit(label)
        self.hold(ticket, key)
        return ticket

    def hold(self, ticket: Ticket, key: object) -> None:
        """Keep `ticket`, with its place and any slot it has, for the handler that will `claim` it by `key`.

        Until then leaving its slot or discarding it does not finish it: the call goes on elsewhere.
        """
        self.release(key)  # a stale one under the same key would block every later call
        ticket.held = True
        self._reserved[key] = ticket

    def claim(self, key: object) -> Ticket | None:
        """The ticket kept under `key`, now the caller's to finish; None if there is none (or it was released)."""
        ticket = self._reserved.pop(key, None)
        if ticket is not None:
            ticket.held = False
        return ticket

    def release(self, key: object) -> None:
        """Finish the ticket kept under `key` that no handler will claim (its request was answered or cancelled)."""
        ticket = self._reserved.pop(key, None)
        if ticket is not None:
            ticket.held = False
            self._finish(ticket)

    @asynccontextmanager
    async def slot(self, ticket: Ticket, *, safe: bool) -> AsyncIterator[Ticket]:
        """Wait for the ticket's turn, run the body, then let later calls go.

        Raises:
            QueueTimeoutError: the call waited longer than the queue bound.
        """
        if not ticket.started:  # a held ticket keeps the slot it had
            ticket.safe = safe
        ticket.ready = True
        try:
            self._schedule()
            if not ticket.started:
                ticket._go = anyio.Event()
                with anyio.move_on_after(self.queue_timeout_s) as waited:
                    await ticket._go.wait()
                if waited.cancelled_caught and not ticket.started:
                    raise QueueTimeoutError(
                        f"This call waited {self.queue_timeout_s:g} s for a slot and was not run. "
                        f"It was waiting for: {self._blockers(ticket)}. Try again when those have finished."
                    )
            yield ticket
        finally:
            self._finish(ticket)

    def discard(self, ticket: Ticket) -> None:
        """Release a ticket that never asked for a slot."""
        self._finish(ticket)

    def _finish(self, ticket: Ticket) -> None:
        if ticket.finished or ticket.held:
            return
        ticket.finished = True
        if ticket.started and ticket.safe:
            self._running_safe -= 1
        self._active.pop(ticket.seq, None)
        self._commit()
        self._schedule()

    def _commit(self) -> None:
        while self._commit_queue and self._commit_queue[0].finished:
            done = self._commit_queue.popleft()
            for change in done.changes:
                try:
                    change()
                except Exception:
                    logger.exception("committing a session change of call #%d failed", done.seq)
            done.changes.clear()

    def _schedule(self) -> None:
        """Start every ticket the rule allows; stops at the first that must wait (at most limit+1 steps)."""
        first = True
        for ticket in self._active.values():
            if ticket.started:
                if not ticket.safe:
                    return
                first = False
                continue
            if not ticket.ready:
                return
            if ticket.safe:
                if self._running_safe >= self.limit:
                    return
                self._start(ticket)
                self._running_safe += 1
                first = False
                continue
            if first:
                self._start(ticket)
            return

    def _start(self, ticket: Ticket) -> None:
        ticket.started = True
        ticket.start_time = time.perf_counter()
        if ticket._go is not None:
            ticket._go.set()

    def _blockers(self, ticket: Ticket) -> str:
        earlier = [t for t in self._active.values() if t.seq < ticket.seq and (t.started or not t.safe)]
        if not earlier:
            return f"one of {self.limit} concurrent slots"
        shown = ", ".join(f"#{t.seq} {t.label} ({'running' if t.started else 'queued'})" for t in earlier[:5])
        more = f" and {len(earlier) - 5} more" if len(earlier) > 5 else ""
        return shown + more

    def snapshot(self) -> list[tuple[int, str, bool, bool]]:
        """(seq, label, safe, started) of every call not yet finished, for logs and tests."""
        return [(t.seq, t.label, t.safe, t.started) for t in self._active.values()]
