"""8. Result size: characters returned for a fixed set of typical calls (the model's context cost)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from benchmarks import fixtures, procs
from benchmarks.adapters import Outcome
from benchmarks.core import Context, Row
from benchmarks.servers import Conn

NAME = "result-size"
TITLE = "8. Result size"

Probe = Callable[[Conn], Awaitable[Outcome | None]]


async def _measure(ctx: Context, probe: Probe, what: str) -> dict[str, float | None]:
    sizes: dict[str, float | None] = {}
    for key in ["ours", *ctx.peers]:
        sizes[key] = None
        async with ctx.attempt(key, f"{TITLE}: {what}"):
            outcome = await probe(await ctx.conn(key))
            sizes[key] = float(len(outcome.text)) if outcome is not None else None
    return sizes


async def run(ctx: Context) -> None:
    folder = ctx.root / "sizes"
    long_file = fixtures.write_source(folder / "long_module.py", 2000, 11)
    edit_file = fixtures.write_source(folder / "edit_me.py", 200, 12)

    async def read_long(conn: Conn) -> Outcome | None:
        adapter = conn.spec.adapter
        return await adapter.read(conn, long_file) if adapter.can(conn, "read") else None

    async def grep_common(conn: Conn) -> Outcome | None:
        adapter = conn.spec.adapter
        if not adapter.can(conn, "grep"):
            return None
        try:
            return await adapter.grep(conn, fixtures.COMMON_WORD, ctx.corpus, "files", default_page=True)
        except NotImplementedError:
            return await adapter.grep(conn, fixtures.COMMON_WORD, ctx.corpus, "content", default_page=True)

    async def failing_edit(conn: Conn) -> Outcome | None:
        adapter = conn.spec.adapter
        if not adapter.can(conn, "edit"):
            return None
        await adapter.prepare_edit(conn, edit_file)
        outcome = await adapter.edit(conn, edit_file, "this string is not in the file", "anything")
        if not outcome.is_error and "not found" not in outcome.text.lower():
            raise RuntimeError(f"an edit of a missing string did not fail: {outcome.text[:200]}")
        return outcome

    raw_read = len(long_file.read_text(encoding="utf-8"))
    what = "Read a 2,000-line file (chars)"
    sizes = await _measure(ctx, read_long, what)
    ctx.add(_row(what, sizes, float(raw_read), "the file itself", ctx))

    raw_grep: float | None = None
    if ctx.rg:
        raw_grep = float(len(procs.run_timed([ctx.rg, "-l", fixtures.COMMON_WORD, str(ctx.corpus)])[2]))
    what = f"Grep `{fixtures.COMMON_WORD}` in the tree, default mode (chars)"
    sizes = await _measure(ctx, grep_common, what)
    ctx.add(_row(what, sizes, raw_grep, "rg -l output", ctx))

    what = "a failing Edit: string not found (chars)"
    sizes = await _measure(ctx, failing_edit, what)
    ctx.add(_row(what, sizes, None, "", ctx))


def _row(metric: str, sizes: dict[str, float | None], base: float | None, label: str, ctx: Context) -> Row:
    return Row(TITLE, metric, sizes.get("ours"), base, label, {key: sizes.get(key) for key in ctx.peers})
