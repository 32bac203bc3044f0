"""Asking a server that may still be cold: a first call ends within its budget, and its work is never lost.

A language server's first answers cost the most: jedi parses every module a question touches, which on a
25k-line project took 3 to 23 s here. A call to a server that has not answered yet waits at most
`lsp.first_call_s` (start included), sending progress while it waits; then it says "still indexing, ask again in
about N s" and leaves the request running, so the server keeps warming and the same question asked again
collects that answer instead of starting over. A server that has answered before is bounded by the
`lsp.timeout_s` setting as usual: a late answer is cancelled.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mcp_codetools.lsp.wire import Connection, Pending

PROGRESS_EVERY_S = 1.0
"""How often a waiting call tells the client it is still waiting."""
GIVE_UP_S = 120.0
"""A request left running longer than this is cancelled: the server is stuck rather than indexing."""
BYTES_PER_S = 250_000
"""Source a cold jedi works through per second on a core of its own: 930 kB of `rich` (its first
findReferences of `Console.print`, start included) took 7.7 s at a load of 5 and 19 s at 9 on 2 cores, about
3.5 s each once divided by the contention. Only the estimate of when to ask again uses it."""
_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages", "dist", "build", "target"})
_MAX_FILES = 20_000
_MAX_WALK_S = 0.25

Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class StillIndexing(Exception):
    """A cold server has not answered within the first-call budget; its request keeps running."""

    def __init__(self, since_start_s: float, retry_after_s: int) -> None:
        super().__init__(f"still indexing after {since_start_s:.1f} s")
        self.since_start_s = since_start_s
        self.retry_after_s = retry_after_s


@dataclass
class _Left:
    pending: Pending
    sent: float


@dataclass
class Warming:
    """One server's requests left running past a call, keyed by the question and the document's version."""

    conn: Connection
    root: Path
    extensions: Collection[str]
    born: float = field(default_factory=time.monotonic)
    left: dict[str, _Left] = field(default_factory=dict)
    source_bytes: int | None = None

    async def ask(
        self, method: str, params: Any, version: int | None, *, deadline: float, cold: bool, progress: Progress
    ) -> Any:
        """The answer to `method`, collected from a request left running when the same one was asked before.

        Raises:
            StillIndexing: `cold`, and no answer by `deadline` (the request keeps running).
            TimeoutError: not `cold`, and no answer by `deadline` (the request is cancelled).
            ServerError, ServerGone: as `Connection.request`.
        """
        self._forget_old()
        key = json.dumps([method, params, version], sort_keys=True)
        left = self.left.pop(key, None) or _Left(self.conn.send_request(method, params), time.monotonic())
        try:
            while True:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    raise TimeoutError
                try:
                    return await left.pending.result(min(wait, PROGRESS_EVERY_S))
                except TimeoutError:
                    if cold:
                        since = time.monotonic() - self.born
                        await progress(since, None, f"the language server is indexing the project ({since:.0f} s)")
                        await self._measure()  # while waiting, so the "indexing" answer is not late
        except BaseException as exc:
            if cold and isinstance(exc, (TimeoutError, anyio.get_cancelled_exc_class())):
                self.left[key] = left  # the server keeps warming on it; asking again collects it
                if isinstance(exc, TimeoutError):
                    since = time.monotonic() - self.born
                    raise StillIndexing(since, await self._retry_after(since)) from None
            else:
                left.pending.cancel()
            raise

    def _forget_old(self) -> None:
        """Give up requests left running for longer than GIVE_UP_S, answered (nobody came back) or not (stuck)."""
        now = time.monotonic()
        for key in [key for key, left in self.left.items() if now - left.sent > GIVE_UP_S]:
            self.left.pop(key).pending.cancel()

    async def _retry_after(self, since_start_s: float) -> int:
        return retry_after(await self._measure(), since_start_s)

    async def _measure(self) -> int:
        """The project's source size, walked once (in a thread: up to `_MAX_WALK_S`)."""
        if self.source_bytes is None:
            self.source_bytes = await anyio.to_thread.run_sync(source_bytes, self.root, self.extensions)
        return self.source_bytes


def retry_after(size: int, since_start_s: float, contention: float | None = None) -> int:
    """Seconds until a server that started `since_start_s` ago has likely read `size` bytes of source.

    The reading slows with the machine's load (`contention`: runnable processes per core, at least 1). Past
    that estimate, half the time so far (the server is slower than estimated, by an unknown factor).
    """
    share = _contention() if contention is None else contention
    remaining = size / BYTES_PER_S * share - since_start_s
    return max(2, math.ceil(remaining if remaining >= 1 else since_start_s / 2))


def _contention() -> float:
    """The 1-minute load per core, at least 1 (1 where the system does not say: Windows)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def source_bytes(root: Path, extensions: Collection[str]) -> int:
    """The size of the files a server reads under `root` (hidden and build folders skipped; walk bounded)."""
    total, files, stop = 0, 0, time.monotonic() + _MAX_WALK_S
    folders = [root]
    while folders and files < _MAX_FILES and time.monotonic() < stop:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.name.startswith(".") or entry.name in _SKIPPED:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(Path(entry.path))
                    elif os.path.splitext(entry.name)[1].lower() in extensions:
                        files += 1
                        total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total
