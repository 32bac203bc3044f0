"""5. Grep over a real source tree, through the server over stdio, against raw `rg` run the same way.

The baseline runs the search the server runs: the same rg binary and flags (hidden files, VCS folders
excluded; files mode lists with --null and then sorts by mtime, newest first; content mode searches in
parallel with NUL-led field separators, numbers lines and caps columns), spawned from this process with
every byte of output read. So the ratio is what our server adds, putting content back in path order
included. Plain `rg -l` / `rg -n` (rg's own defaults, parallel) is shown in the note.
Completeness: the server's reported total must equal rg's count.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from benchmarks import procs
from benchmarks.adapters import GrepMode
from benchmarks.core import Context, Row
from benchmarks.stats import median
from mcp_codetools.search.path_order import CONTEXT_SEPARATOR, MATCH_SEPARATOR

NAME = "grep"
TITLE = "5. Grep over a source tree"
RATIO_TARGET = 1.10
PATTERN = r"raise \w+Error\("
TINY_PATTERN = r"TODO: handle"
_COMMON = ["--no-config", "--color=never", "--hidden"]
_VCS = [f"--glob=!{name}" for name in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")]


def server_equivalent(rg: str, mode: GrepMode, pattern: str, tree: Path) -> list[str]:
    """The rg command line our Grep builds for this search (see mcp_codetools/search/grep_args.py)."""
    if mode == "files":
        flags = [*_COMMON, *_VCS, "--files-with-matches", "--null"]
    else:
        flags = [*_COMMON, *_VCS, "--no-heading", "--max-columns=500", "--max-columns-preview"]
        flags += [MATCH_SEPARATOR, CONTEXT_SEPARATOR, "--line-number"]
    return [rg, *flags, "-e", pattern, "--", str(tree)]


def plain(rg: str, mode: GrepMode, pattern: str, tree: Path) -> list[str]:
    return [rg, "-l" if mode == "files" else "-n", "-e", pattern, "--", str(tree)]


def _newest_first(names: list[bytes]) -> list[bytes]:
    keyed = []
    for name in names:
        try:
            mtime = os.stat(name, follow_symlinks=False).st_mtime_ns
        except OSError:
            mtime = 0
        keyed.append((-mtime, name))
    keyed.sort()
    return [name for _, name in keyed]


def raw_search(argv: list[str], mode: GrepMode) -> tuple[float, int]:
    """Spawn rg, read all of its output, and (files mode) sort by mtime: (seconds, results)."""
    elapsed, _, out = procs.run_timed(argv)
    if mode == "files":
        start = time.perf_counter()
        names = [name for name in out.split(b"\0") if name]
        _newest_first(names)
        return elapsed + time.perf_counter() - start, len(names)
    return elapsed, out.count(b"\n")


async def run(ctx: Context) -> None:
    if ctx.rg is None:
        ctx.note("Grep: rg not found, workload skipped.")
        return
    pattern = TINY_PATTERN if ctx.quick else PATTERN
    # One search is ~0.5 s and varies by ±10% between rounds here; 15 rounds keep the median's ratio within a few %.
    n = ctx.scale(15, 2)
    tree = ctx.corpus
    for mode in ("files", "content"):
        await _mode(ctx, mode, pattern, tree, n)


async def _mode(ctx: Context, mode: GrepMode, pattern: str, tree: Path, n: int) -> None:
    rg = ctx.rg
    assert rg is not None
    same = server_equivalent(rg, mode, pattern, tree)
    raw_search(same, mode)  # warm the page cache for everyone
    base: list[float] = []
    plain_runs: list[float] = []
    ours: list[float] = []
    peers: dict[str, list[float]] = {key: [] for key in ctx.peers}
    expected = 0
    reported: object = None
    label = "files_with_matches" if mode == "files" else "content"
    what = f"{TITLE} ({label})"
    dropped: set[str] = set()
    for _ in range(n):
        # Interleaved: baseline, plain rg, ours, peers, then again.
        seconds, expected = raw_search(same, mode)
        base.append(seconds)
        plain_runs.append(procs.run_timed(plain(rg, mode, pattern, tree))[0])
        for key in ["ours", *ctx.peers]:
            if key in dropped:
                continue
            samples = ours if key == "ours" else peers[key]
            dropped.add(key)  # until this call succeeds
            async with ctx.attempt(key, what):
                conn = await ctx.conn(key)
                if not conn.spec.adapter.can(conn, "grep"):
                    continue
                try:
                    outcome = await conn.spec.adapter.grep(conn, pattern, tree, mode)
                except NotImplementedError:
                    continue
                if outcome.is_error:
                    raise RuntimeError(f"Grep failed: {outcome.text[:300]}")
                samples.append(outcome.seconds)
                if key == "ours":
                    result = outcome.meta.get("codetools/result", {})
                    reported = (result.get("total"), result.get("totalComplete"))
                # A slow peer gets fewer rounds (at least one).
                if key == "ours" or sum(samples) < ctx.budget_s:
                    dropped.discard(key)
    ctx.record(TITLE, "rg, server's flags", label, base)
    ctx.record(TITLE, "rg, plain", label, plain_runs)
    ctx.record(TITLE, "mcp-codetools", label, ours)
    for key, samples in peers.items():
        ctx.record(TITLE, ctx.label(key), label, samples)
    ours_ms = median(ours) * 1000 if ours else None
    base_ms = median(base) * 1000
    complete = reported == (expected, True)
    ratio = ours_ms / base_ms if ours_ms is not None else None
    unit = "files" if mode == "files" else "lines"
    flag = "-l" if mode == "files" else "-n"
    plain_ms = median(plain_runs) * 1000
    note = f"rg finds {expected} {unit}; plain `rg {flag}`: {plain_ms:.1f} ms"
    if ours_ms is not None:
        note += f" (ours {ours_ms / plain_ms:.2f}× that)"
    if ours_ms is not None:
        note += f"; server's total: {reported}" + ("" if complete else " — INCOMPLETE")
    ctx.add(
        Row(
            TITLE,
            f"{label} `{pattern}`, median of {n} (ms)",
            ours_ms,
            base_ms,
            "rg, same flags" + (" + mtime sort" if mode == "files" else "") + " (spawned)",
            {key: (median(s) * 1000 if s else None) for key, s in peers.items()},
            target=f"≤ {RATIO_TARGET:g}× rg, complete",
            met=None if ratio is None else ratio <= RATIO_TARGET and complete,
            note=note,
        )
    )
