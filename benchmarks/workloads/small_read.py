"""2. Small Read: a 50-line file, p50 and p99 over sequential calls, each call a different file.

The fast servers (ours, the bare SDK server, server-filesystem) take turns in blocks of 25 back-to-back
calls, so a busy moment on a shared machine hits all of them alike; a slow one (tens of ms a call) runs
after them. Besides wall time, the CPU each call cost the server (all its threads, from /proc schedstat)
and the client (this process, `time.process_time`) is summed call by call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import fixtures
from benchmarks.core import Context, Row, nth
from benchmarks.servers import Conn
from benchmarks.stats import median, percentile

NAME = "small-read"
TITLE = "2. Small Read (50 lines)"
P50_TARGET_MS = 1.0
WARMUP = 20
BLOCK = 25
SLOW_S = 0.02


@dataclass
class _Subject:
    conn: Conn
    wall: list[float] = field(default_factory=list)
    server_cpu: float = 0.0
    client_cpu: float = 0.0

    async def read(self, path: Path) -> None:
        server0 = self.conn.cpu_seconds() or 0.0
        client0 = time.process_time()
        outcome = await self.conn.spec.adapter.read(self.conn, path)
        self.client_cpu += time.process_time() - client0
        self.server_cpu += (self.conn.cpu_seconds() or 0.0) - server0
        if outcome.is_error:
            raise RuntimeError(f"Read failed: {outcome.text[:300]}")
        self.wall.append(outcome.seconds)


async def _block(ctx: Context, subjects: dict[str, _Subject], key: str, paths: list[Path]) -> None:
    subject = subjects.get(key)
    if subject is None:
        return
    async with ctx.attempt(key, TITLE):
        for path in paths:
            await subject.read(path)
            if ctx.enough(len(subject.wall), sum(subject.wall)):
                return
        return
    del subjects[key]


async def run(ctx: Context) -> None:
    n = ctx.scale(300, 20)
    # Distinct files: a repeated Read of an unchanged file would get our short "unchanged" notice instead.
    files = fixtures.many_files(ctx.root / "small", WARMUP + n, 50, seed=2)
    subjects: dict[str, _Subject] = {}
    slow: list[str] = []
    for key in ["ours", "bare", *ctx.peers]:
        async with ctx.attempt(key, TITLE):
            conn = await ctx.conn(key)
            if conn.spec.adapter.can(conn, "read"):
                warm = _Subject(conn)
                for path in files[:WARMUP]:
                    await warm.read(path)
                if median(warm.wall) > SLOW_S:
                    slow.append(key)
                subjects[key] = _Subject(conn)
    fast = [key for key in subjects if key not in slow]
    todo = files[WARMUP:]
    # Fast servers take turns in blocks of calls, so a busy moment on the machine falls on all of them
    # alike while each block still measures back-to-back calls. Slow ones (a call of tens of ms) go after.
    for start in range(0, len(todo), BLOCK):
        for key in fast:
            await _block(ctx, subjects, key, todo[start : start + BLOCK])
    for key in slow:
        await _block(ctx, subjects, key, todo)

    ms: dict[str, tuple[float, float, float, float] | None] = {}
    for key, subject in subjects.items():
        ctx.record(TITLE, subject.conn.spec.label, "Read 50 lines", subject.wall)
        per_call = 1000 / len(subject.wall)
        ms[key] = (
            percentile(subject.wall, 50) * 1000,
            percentile(subject.wall, 99) * 1000,
            subject.server_cpu * per_call,
            subject.client_cpu * per_call,
        )

    p50 = nth(ms, "ours", 0)
    ctx.add(
        Row(
            TITLE,
            f"p50 over {n} calls (ms)",
            p50,
            nth(ms, "bare", 0),
            "bare SDK server",
            {key: nth(ms, key, 0) for key in ctx.peers},
            target=f"< {P50_TARGET_MS:g} ms",
            met=None if p50 is None else p50 < P50_TARGET_MS,
        )
    )
    ctx.add(
        Row(
            TITLE,
            f"p99 over {n} calls (ms)",
            nth(ms, "ours", 1),
            nth(ms, "bare", 1),
            "bare SDK server",
            {key: nth(ms, key, 1) for key in ctx.peers},
        )
    )
    client = nth(ms, "ours", 3)
    others = ", ".join(
        f"{subjects[key].conn.spec.label} {value:.3f}"
        for key in ["bare", *ctx.peers]
        if key in subjects and (value := nth(ms, key, 3)) is not None
    )
    ctx.add(
        Row(
            TITLE,
            "server CPU per call (ms)",
            nth(ms, "ours", 2),
            nth(ms, "bare", 2),
            "bare SDK server",
            {key: nth(ms, key, 2) for key in ctx.peers},
            note="all threads of the server process, from /proc schedstat; the SDK client in this process used "
            + (f"{client:.3f} ms of CPU per call to our server" if client is not None else "n/a")
            + (f" (to {others})" if others else "")
            + ": sequential wall time is about client CPU + server CPU + two pipe wake-ups",
        )
    )
