"""6. Edit of one string in a 10 MB file, against a plain read-replace-write of the same file."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from benchmarks import fixtures
from benchmarks.core import Context, Row
from benchmarks.servers import Conn
from benchmarks.stats import median

NAME = "edit"
TITLE = "6. Edit in a 10 MB file"
RATIO_TARGET = 2.0


def _plain(path: Path, old: str, new: str) -> float:
    start = time.perf_counter()
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(old, new, 1))
    return time.perf_counter() - start


def _plain_durable(path: Path, old: str, new: str) -> float:
    """The same, written the crash-safe way: a temporary file, fsync, rename."""
    start = time.perf_counter()
    text = path.read_text(encoding="utf-8")
    temp = path.with_name(f".{path.name}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.replace(old, new, 1).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    return time.perf_counter() - start


def _swap(i: int) -> tuple[str, str]:
    a, b = fixtures.EDIT_MARKER, fixtures.EDIT_REPLACEMENT
    return (a, b) if i % 2 == 0 else (b, a)


async def run(ctx: Context) -> None:
    size_mb = ctx.scale(10, 1)
    n = ctx.scale(10, 3)
    folder = ctx.root / "edit"
    folder.mkdir(parents=True, exist_ok=True)
    original = fixtures.edit_target(folder / "original.py", size_mb * 1024 * 1024)
    conns: dict[str, Conn] = {}
    targets: dict[str, Path] = {}
    for key in ["ours", *ctx.peers]:
        async with ctx.attempt(key, TITLE):
            conn = await ctx.conn(key)
            if conn.spec.adapter.can(conn, "edit"):
                targets[key] = shutil.copyfile(original, folder / f"{key}.py")
                await conn.spec.adapter.prepare_edit(conn, targets[key])
                conns[key] = conn
    samples: dict[str, list[float]] = {key: [] for key in conns}
    plain_file = shutil.copyfile(original, folder / "plain.py")
    durable_file = shutil.copyfile(original, folder / "durable.py")
    plain: list[float] = []
    durable: list[float] = []

    async def edit(key: str, i: int) -> None:
        if key not in conns:
            return
        async with ctx.attempt(key, TITLE):
            outcome = await conns[key].spec.adapter.edit(conns[key], targets[key], *_swap(i))
            if outcome.is_error:
                raise RuntimeError(f"Edit failed: {outcome.text[:300]}")
            samples[key].append(outcome.seconds)
            return
        del conns[key]

    # Ours and both baselines in turn, edit by edit; the peers (hundreds of ms an edit) after them.
    for i in range(n):
        await edit("ours", i)
        plain.append(_plain(plain_file, *_swap(i)))
        durable.append(_plain_durable(durable_file, *_swap(i)))
    for key in ctx.peers:
        for i in range(n):
            await edit(key, i)
    results: dict[str, float | None] = {}
    for key, values in samples.items():
        if len(values) == n:
            ctx.record(TITLE, ctx.label(key), "Edit", values)
            results[key] = median(values) * 1000
    ctx.record(TITLE, "plain read-replace-write", "in-process", plain)
    ctx.record(TITLE, "temp + fsync + rename", "in-process", durable)
    base = median(plain) * 1000
    ours = results.get("ours")
    ratio = ours / base if ours is not None else None
    ctx.add(
        Row(
            TITLE,
            f"Edit one string, {size_mb} MB file, median of {n} (ms)",
            ours,
            base,
            "plain read-replace-write (in-process)",
            {key: results.get(key) for key in ctx.peers},
            target=f"≤ {RATIO_TARGET:g}× baseline",
            met=None if ratio is None else ratio <= RATIO_TARGET,
            note=f"crash-safe baseline (temp + fsync + rename): {median(durable) * 1000:.1f} ms",
        )
    )
