"""7. Bash `echo hi` round trip over stdio, against a bare fork+exec of `sh -c 'echo hi'` (issue 5).

Rounds of back-to-back calls: a block through our server, then the same number of `sh -c` and `bash -c`
(what the Bash tool runs) spawned from this process, so load from elsewhere on the machine falls on all
of them alike. A slow peer (a call of tens of ms) runs after the rounds.

`echo hi` is a lone builtin, which our waiting bash runs itself (`shell/in_place.py`); a command that runs a
program is started in a bash of its own. So each round also times `/bin/echo hi` through our server and as
`bash -c '/bin/echo hi'`: that row has no target, and shows what every other command pays.
"""

from __future__ import annotations

from benchmarks import procs
from benchmarks.core import Context, Row
from benchmarks.servers import Conn
from benchmarks.stats import median, percentile

NAME = "bash"
TITLE = "7. Bash `echo hi`"
P50_TARGET_MS = 5.0
WARMUP = 5
BLOCK = 20
SLOW_S = 0.02


PROGRAM = "/bin/echo hi"
"""A command that runs a program (the lone builtin `echo hi` does not)."""


async def _echo(conn: Conn, command: str = "echo hi") -> float:
    outcome = await conn.spec.adapter.bash(conn, command)
    if outcome.is_error or "hi" not in outcome.text:
        raise RuntimeError(f"{command} failed: {outcome.text[:300]}")
    return outcome.seconds


async def _block(
    ctx: Context, conns: dict[str, Conn], samples: dict[str, list[float]], key: str, count: int, cpu: dict[str, float]
) -> None:
    if key not in conns:
        return
    async with ctx.attempt(key, TITLE):
        for _ in range(count):
            before = conns[key].cpu_seconds() or 0.0
            samples[key].append(await _echo(conns[key]))
            cpu[key] = cpu.get(key, 0.0) + (conns[key].cpu_seconds() or 0.0) - before
            if ctx.enough(len(samples[key]), sum(samples[key])):
                return
        return
    del conns[key]


async def run(ctx: Context) -> None:
    n = ctx.scale(100, 10)
    conns: dict[str, Conn] = {}
    slow: list[str] = []
    for key in ["ours", *ctx.peers]:
        async with ctx.attempt(key, TITLE):
            conn = await ctx.conn(key)
            if conn.spec.adapter.can(conn, "bash"):
                warm = [await _echo(conn) for _ in range(WARMUP)]
                if median(warm) > SLOW_S:
                    slow.append(key)
                conns[key] = conn
    samples: dict[str, list[float]] = {key: [] for key in conns}
    cpu: dict[str, float] = {}
    base: list[float] = []
    with_bash: list[float] = []
    program: list[float] = []
    program_bash: list[float] = []
    for start in range(0, n, BLOCK):
        count = min(BLOCK, n - start)
        for key in [key for key in conns if key not in slow]:
            await _block(ctx, conns, samples, key, count, cpu)
        if "ours" in conns:
            async with ctx.attempt("ours", TITLE):
                program += [await _echo(conns["ours"], PROGRAM) for _ in range(count)]
        base += [procs.run_timed(["sh", "-c", "echo hi"])[0] for _ in range(count)]
        with_bash += [procs.run_timed(["bash", "-c", "echo hi"])[0] for _ in range(count)]
        program_bash += [procs.run_timed(["bash", "-c", PROGRAM])[0] for _ in range(count)]
    for key in slow:
        await _block(ctx, conns, samples, key, n, cpu)
    results: dict[str, float | None] = {}
    for key, values in samples.items():
        if values:
            ctx.record(TITLE, ctx.label(key), "echo hi", values)
            results[key] = percentile(values, 50) * 1000
    ctx.record(TITLE, "sh -c 'echo hi'", "fork+exec, read output, wait", base)
    ctx.record(TITLE, "bash -c 'echo hi'", "fork+exec, read output, wait", with_bash)
    if program:
        ctx.record(TITLE, ctx.label("ours"), PROGRAM, program)
        ctx.record(TITLE, f"bash -c '{PROGRAM}'", "fork+exec, read output, wait", program_bash)
    ours = results.get("ours")
    bash_floor = percentile(with_bash, 50) * 1000
    cpu_ms = {key: cpu[key] * 1000 / len(values) for key, values in samples.items() if values and key in cpu}
    ctx.add(
        Row(
            TITLE,
            f"p50 over {n} calls (ms)",
            ours,
            percentile(base, 50) * 1000,
            "fork+exec `sh -c` (spawn, read, wait)",
            {key: results.get(key) for key in ctx.peers},
            target=f"< {P50_TARGET_MS:g} ms",
            met=None if ours is None else ours < P50_TARGET_MS,
            note=f"the same with `bash -c` (what the Bash tool runs): {bash_floor:.2f} ms",
        )
    )
    ctx.add(
        Row(
            TITLE,
            "p50 against `bash -c` (ms)",
            ours,
            bash_floor,
            "fork+exec `bash -c` (spawn, read, wait)",
            {key: results.get(key) for key in ctx.peers},
            target="≤ 1.5×",
            met=None if ours is None else ours <= 1.5 * bash_floor,
        )
    )
    if program:
        ctx.add(
            Row(
                TITLE,
                f"`{PROGRAM}` (runs a program) p50 against `bash -c` (ms)",
                percentile(program, 50) * 1000,
                percentile(program_bash, 50) * 1000,
                f"fork+exec `bash -c '{PROGRAM}'`",
                {},
                note="a command that runs a program starts a bash of its own; only a lone builtin is run in place",
            )
        )
    ctx.add(
        Row(
            TITLE,
            "server CPU per call (ms)",
            cpu_ms.get("ours"),
            None,
            "",
            {key: cpu_ms.get(key) for key in ctx.peers},
            note="all threads of the server process, from /proc schedstat (bash's own CPU is not in it)",
        )
    )
