"""Where one burst of concurrent Reads spends its time on the server (issue 38).

`python -m benchmarks.burst_trace [--rounds N] [--burst 64] [--lines 200]` spawns our server through the
SDK client, as the benchmark does, with the fast lane instrumented in the server process: when each request
line is taken, when its call starts and ends in the pipeline, and when each write goes out (how many answers,
how many bytes). The server writes its timestamps to a file at exit; this prints them per round, relative to
the first line read, with the client's own view (when it sent the first request and got the last answer).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TRACE_ENV = "MCP_CODETOOLS_BURST_TRACE"
BOUND_ENV = "MCP_CODETOOLS_BURST_BOUND"


def _serve_traced(out: str) -> int:
    """The server's main with the lane's steps timed (runs in the server process)."""
    from mcp_codetools.cli import main
    from mcp_codetools.protocol import fast_lane

    events: list[tuple[float, str, Any]] = []
    clock = time.perf_counter
    lane_init = fast_lane.FastLane.__init__
    take = fast_lane.FastLane.take

    def init(self: Any, app: Any, wiring: Any) -> None:
        say = wiring.say

        async def traced_say(data: bytes) -> None:
            events.append((clock(), "write", [data.count(b"\n"), len(data)]))
            await say(data)

        wiring.say = traced_say
        pipeline = app.pipeline
        run = pipeline.run

        async def traced_run(session: Any, name: str, arguments: Any, **kw: Any) -> Any:
            ticket = kw.get("ticket")
            seq = ticket.seq if ticket is not None else -1
            events.append((clock(), "start", seq))
            try:
                return await run(session, name, arguments, **kw)
            finally:
                events.append((clock(), "end", seq))

        pipeline.run = traced_run
        lane_init(self, app, wiring)

    def traced_take(self: Any, line: bytes) -> bool:
        events.append((clock(), "line", len(line)))
        return take(self, line)

    fast_lane.FastLane.__init__ = init  # type: ignore[method-assign]
    fast_lane.FastLane.take = traced_take  # type: ignore[method-assign]
    fast_lane.STREAM_AFTER_S = float(os.environ.get(BOUND_ENV, fast_lane.STREAM_AFTER_S))

    def dump() -> None:
        Path(out).write_text(json.dumps({"events": events, "cpu": time.process_time()}))

    atexit.register(dump)
    return main()


def _summary(events: list[tuple[float, str, Any]], sent: float, done: float) -> str:
    t0 = next(t for t, kind, _ in events if kind == "line")
    lines = [t for t, kind, _ in events if kind == "line"]
    starts = [t for t, kind, _ in events if kind == "start"]
    ends = [t for t, kind, _ in events if kind == "end"]
    writes = [(t, info) for t, kind, info in events if kind == "write"]

    def ms(t: float) -> str:
        return f"{(t - t0) * 1000:7.2f}"

    out = [
        f"lines  first {ms(lines[0])} last {ms(lines[-1])} ms ({len(lines)})",
        f"starts first {ms(starts[0])} last {ms(starts[-1])}",
        f"ends   first {ms(ends[0])} last {ms(ends[-1])}",
        f"writes {len(writes)}: " + ", ".join(f"{ms(t).strip()}ms:{n}" for t, (n, _) in writes[:20]),
        f"client burst wall {(done - sent) * 1000:.2f} ms",
    ]
    order = [kind[0] for _, kind, _ in events]
    out.append("sequence " + "".join(order)[:200])
    return "\n".join(out)


async def _client(out: str, rounds: int, burst: int, n_lines: int, bounds: list[str], show: bool) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from benchmarks import fixtures
    from benchmarks.stats import median

    with tempfile.TemporaryDirectory() as scratch:
        async with contextlib.AsyncExitStack() as stack:
            root = Path(scratch)
            sets = [
                (
                    fixtures.many_files(root / f"s{r}", burst, n_lines, seed=40 + r),
                    fixtures.many_files(root / f"r{r}", burst, n_lines, seed=90 + r),
                )
                for r in range(rounds)
            ]
            clients = {}
            for bound in bounds:
                env = {**os.environ, TRACE_ENV: f"{out}.{bound}", BOUND_ENV: bound}
                env |= {"MCP_CODETOOLS_START_SNAPSHOT": "0", "MCP_CODETOOLS_SANDBOX": "0"}
                args = ["-m", "benchmarks.burst_trace", "--serve", "--root", str(root)]
                params = StdioServerParameters(command=sys.executable, args=args, env=env)
                clients[bound] = await stack.enter_async_context(
                    Client(stdio_client(params), mode="legacy", cache=None)
                )
                await clients[bound].list_tools()
            marks: dict[str, list[tuple[float, float]]] = {bound: [] for bound in bounds}
            speedups: dict[str, list[float]] = {bound: [] for bound in bounds}
            for seq_files, files in sets:
                for bound, client in clients.items():  # round by round, so a busy moment falls on every setting
                    start = time.perf_counter()
                    for path in seq_files:
                        await client.call_tool("Read", {"file_path": str(path)})
                    sent = time.perf_counter()
                    await asyncio.gather(*(client.call_tool("Read", {"file_path": str(p)}) for p in files))
                    done = time.perf_counter()
                    marks[bound].append((sent, done))
                    speedups[bound].append((sent - start) / (done - sent))
        traces = {bound: json.loads(Path(f"{out}.{bound}").read_text()) for bound in bounds}
        for bound in bounds:
            Path(f"{out}.{bound}").unlink()
    for bound in bounds:
        walls = [(done - sent) * 1000 for sent, done in marks[bound]]
        print(
            f"STREAM_AFTER_S={bound}: speedup median x{median(speedups[bound]):.2f} "
            f"({', '.join(f'{x:.2f}' for x in speedups[bound])}), burst median {median(walls):.1f} ms"
        )
        if show:
            events = traces[bound]["events"]
            # perf_counter is the system's monotonic clock on Linux and macOS: one time base for both processes.
            for number, (sent, done) in enumerate(marks[bound]):
                print(f"--- round {number}")
                print(_summary([e for e in events if sent <= e[0] <= done], sent, done))


def main() -> None:
    if "--serve" in sys.argv:
        sys.argv.remove("--serve")
        sys.argv[0] = "mcp-codetools"
        raise SystemExit(_serve_traced(os.environ[TRACE_ENV]))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burst", type=int, default=64)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--bounds", default="0.001", help="comma-separated STREAM_AFTER_S values, one server each")
    parser.add_argument("--trace", action="store_true", help="print each burst's server events")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    try:
        asyncio.run(_client(out, args.rounds, args.burst, args.lines, args.bounds.split(","), args.trace))
    finally:
        Path(out).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
