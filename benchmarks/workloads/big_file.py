"""4. The last 100 lines of a 200 MB file: first and repeated read, and the server's peak memory.

Each server gets a fresh process, so its VmHWM (peak resident set, from /proc) belongs to this workload.
The page cache is warm (the file was just written), for the servers and the `tail` baseline alike.
"""

from __future__ import annotations

from benchmarks import fixtures, procs
from benchmarks.core import Context, Row, nth
from benchmarks.stats import median

NAME = "big-file"
TITLE = "4. Tail of a 200 MB file"
TAIL = 100


async def run(ctx: Context) -> None:
    size_mb = ctx.scale(200, 8)
    repeats = ctx.scale(6, 2)
    big = fixtures.big_file(ctx.root / "big.log", size_mb * 1024 * 1024)
    last_line = f"record {big.lines:09d}"
    results: dict[str, tuple[float, float, float, float] | None] = {}
    for key in ["ours", *ctx.peers]:
        results[key] = None
        async with ctx.attempt(key, TITLE), ctx.fresh(key) as conn:
            adapter = conn.spec.adapter
            if not adapter.can(conn, "read"):
                continue
            idle_kib = conn.peak_rss_kib() or 0
            first = await adapter.read_tail(conn, big.path, big.lines, TAIL)
            if first.is_error or last_line not in first.text:
                raise RuntimeError(f"the first tail read did not end at line {big.lines}: {first.text[-200:]!r}")
            again: list[float] = []
            for i in range(repeats):
                # Alternate between two windows one line apart, so each call returns the lines: a Read of
                # the very range just read gets our short "unchanged" notice instead.
                outcome = await adapter.read_tail(conn, big.path, big.lines, TAIL, shift=(i + 1) % 2)
                if outcome.is_error:
                    raise RuntimeError(f"tail read failed: {outcome.text[:300]}")
                again.append(outcome.seconds)
            peak_kib = conn.peak_rss_kib() or 0
            ctx.record(TITLE, conn.spec.label, "repeated tail read", again)
            results[key] = (first.seconds * 1000, median(again) * 1000, idle_kib / 1024, peak_kib / 1024)

    tail_first, _, _ = procs.run_timed(["tail", "-n", str(TAIL), str(big.path)])
    tail_again = [procs.run_timed(["tail", "-n", str(TAIL), str(big.path)])[0] for _ in range(repeats)]
    ctx.record(TITLE, f"tail -n {TAIL}", "repeated", tail_again)
    big.path.unlink()

    peers = ctx.peers
    label = f"{size_mb} MB, {big.lines:,} lines"
    ctx.add(
        Row(
            TITLE,
            f"first read of the last {TAIL} lines ({label}) (ms)",
            nth(results, "ours", 0),
            tail_first * 1000,
            f"tail -n {TAIL} (spawned)",
            {key: nth(results, key, 0) for key in peers},
        )
    )
    ctx.add(
        Row(
            TITLE,
            f"repeated read, median of {repeats} (ms)",
            nth(results, "ours", 1),
            median(tail_again) * 1000,
            f"tail -n {TAIL} (spawned)",
            {key: nth(results, key, 1) for key in peers},
        )
    )
    ctx.add(
        Row(
            TITLE,
            "server peak RSS after the reads, VmHWM (MiB)",
            nth(results, "ours", 3),
            nth(results, "ours", 2),
            "same server before the reads",
            {key: nth(results, key, 3) for key in peers},
        )
    )
