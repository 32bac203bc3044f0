"""3. 64 concurrent Reads of different files, issued at once, against 64 sequential Reads in the same run."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from benchmarks import fixtures
from benchmarks.core import Context, Row, nth
from benchmarks.servers import Conn
from benchmarks.stats import median

NAME = "concurrent"
TITLE = "3. 64 concurrent Reads"
BURST = 64
LINES = 200
SLOW_S = 2.0


async def _sequential(conn: Conn, files: list[Path]) -> float:
    start = time.perf_counter()
    for path in files:
        outcome = await conn.spec.adapter.read(conn, path)
        if outcome.is_error:
            raise RuntimeError(f"Read failed: {outcome.text[:300]}")
    return time.perf_counter() - start


async def _concurrent(conn: Conn, files: list[Path]) -> float:
    start = time.perf_counter()
    outcomes = await asyncio.gather(*(conn.spec.adapter.read(conn, path) for path in files))
    elapsed = time.perf_counter() - start
    failed = [o.text[:300] for o in outcomes if o.is_error]
    if failed:
        raise RuntimeError(f"{len(failed)} concurrent Reads failed: {failed[0]}")
    return elapsed


async def run(ctx: Context) -> None:
    rounds = ctx.scale(5, 1)
    sets = [
        (
            fixtures.many_files(ctx.root / "burst" / f"r{r}" / "seq", BURST, LINES, seed=30 + r),
            fixtures.many_files(ctx.root / "burst" / f"r{r}" / "par", BURST, LINES, seed=60 + r),
        )
        for r in range(rounds)
    ]
    conns: dict[str, Conn] = {}
    for key in ["ours", "bare", *ctx.peers]:
        async with ctx.attempt(key, TITLE):
            conn = await ctx.conn(key)
            if conn.spec.adapter.can(conn, "read"):
                conns[key] = conn
    seq: dict[str, list[float]] = {key: [] for key in conns}
    par: dict[str, list[float]] = {key: [] for key in conns}

    async def one_round(key: str, seq_files: list[Path], par_files: list[Path]) -> None:
        if key not in conns:
            return
        async with ctx.attempt(key, TITLE):
            seq[key].append(await _sequential(conns[key], seq_files))
            par[key].append(await _concurrent(conns[key], par_files))
            if sum(seq[key]) + sum(par[key]) > ctx.budget_s:
                del conns[key]  # a slow server: the rounds it had are enough
            return
        del conns[key]

    # Round by round, every fast server in turn, so a busy moment on the machine falls on all of them
    # alike; a slow one (its first round over SLOW_S) does its rounds after the others.
    slow: list[str] = []
    for seq_files, par_files in sets:
        for key in [key for key in list(conns) if key not in slow]:
            await one_round(key, seq_files, par_files)
            if seq[key] and seq[key][0] > SLOW_S:
                slow.append(key)
    for key in slow:
        for seq_files, par_files in sets[len(seq[key]) :]:
            await one_round(key, seq_files, par_files)
    walls: dict[str, tuple[float, float] | None] = {}
    for key in seq:
        if seq[key] and par[key]:
            ctx.record(TITLE, ctx.label(key), f"{BURST} sequential", seq[key])
            ctx.record(TITLE, ctx.label(key), f"{BURST} concurrent", par[key])
            walls[key] = (median(seq[key]) * 1000, median(par[key]) * 1000)

    def speedup(key: str) -> float | None:
        value = walls.get(key)
        return value[0] / value[1] if value else None

    ctx.add(
        Row(
            TITLE,
            f"wall, {BURST} concurrent {LINES}-line Reads, median of {rounds} (ms)",
            nth(walls, "ours", 1),
            nth(walls, "ours", 0),
            f"{BURST} sequential, same server",
            {key: nth(walls, key, 1) for key in ctx.peers},
        )
    )
    ctx.add(
        Row(
            TITLE,
            "speedup of concurrent over sequential (×)",
            speedup("ours"),
            speedup("bare"),
            "bare SDK server's speedup",
            {key: speedup(key) for key in ctx.peers},
            note="ratio here is ours/bare speedup (higher is better)",
        )
    )
