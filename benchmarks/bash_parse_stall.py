"""Classifying a Bash command must not stall other sessions: a small Read's latency meanwhile.

`python -m benchmarks.bash_parse_stall [--chars N]` starts the server over streamable HTTP (as
`benchmarks.notebook_stall` does) and, while session B Reads a small file in a loop, session A runs the
process's first Bash call (bashlex builds its parser tables then) and a Bash call whose command is N
characters long (default: the longest command that is parsed, `MAX_PARSED_CHARS`). It prints B's Read
latency when idle (the same-run baseline) and during each call (median, p99, max). The target: no Read
during a call takes more than 100 ms over the idle median.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.notebook_stall import TARGET_MS, _client, _free_port, _listening, _pct, _start_server, procs_stop
from benchmarks.stats import median
from mcp_codetools.shell.classify import MAX_PARSED_CHARS


async def measure(root: Path, chars: int, idle_reads: int) -> dict[str, float | int | str]:
    """Run the scenario once against a server on `root`; the figures, in ms."""
    small = root / "small.txt"
    small.write_text("one small line\n", encoding="utf-8")
    port, token = _free_port(), secrets.token_hex(16)
    proc = _start_server(root, port, token)
    try:
        await _listening(port)
        url = f"http://127.0.0.1:{port}/mcp"
        async with _client(url, token) as runner, _client(url, token) as reader:
            read_args = {"file_path": str(small)}
            await reader.call_tool("Read", read_args)  # warm
            idle: list[float] = []
            for _ in range(idle_reads):
                start = time.perf_counter()
                await reader.call_tool("Read", read_args)
                idle.append((time.perf_counter() - start) * 1000)
            long_command = "true" + " a" * ((chars - 4) // 2)  # one-letter words: bashlex's slowest text
            runs = {
                "first Bash call": await _bash_while_reading(runner, reader, "echo hi", read_args),
                f"{len(long_command):,}-char command": await _bash_while_reading(
                    runner, reader, long_command, read_args
                ),
            }
    finally:
        procs_stop(proc)
    base = median(idle)
    figures: dict[str, float | int | str] = {
        "idle read median ms": round(base, 2),
        "idle read p99 ms": round(_pct(idle, 0.99), 2),
    }
    for label, (call_ms, during) in runs.items():
        figures |= {
            f"{label}: call ms": round(call_ms, 1),
            f"{label}: reads during call": len(during),
            f"{label}: read during call median ms": round(median(during), 2) if during else 0.0,
            f"{label}: read during call p99 ms": round(_pct(during, 0.99), 2) if during else 0.0,
            f"{label}: read during call max ms": round(max(during), 2) if during else 0.0,
            f"{label}: added over idle median ms": round(max(during) - base, 2) if during else 0.0,
        }
    return figures


async def _bash_while_reading(
    runner: Client, reader: Client, command: str, read_args: dict[str, str]
) -> tuple[float, list[float]]:
    """Bash `command` in one session, small Reads in the other until it answers: (call ms, read ms each)."""
    reads: list[float] = []
    done = anyio.Event()
    took = 0.0

    async def run() -> None:
        nonlocal took
        start = time.perf_counter()
        result = await runner.call_tool("Bash", {"command": command})
        took = (time.perf_counter() - start) * 1000
        if result.is_error:
            raise RuntimeError(f"Bash failed: {result.content}")
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not done.is_set():
            start = time.perf_counter()
            await reader.call_tool("Read", read_args)
            reads.append((time.perf_counter() - start) * 1000)
    return took, reads


def main() -> None:
    """Run the check and print the figures; exit 1 when a Read during a call took over the target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chars", type=int, default=MAX_PARSED_CHARS, help="length of the long command")
    parser.add_argument("--idle-reads", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bash-stall-") as scratch:
        figures = anyio.run(measure, Path(scratch).resolve(), args.chars, args.idle_reads)
    for key, value in figures.items():
        print(f"{key}: {value}")
    worst = max(float(value) for key, value in figures.items() if key.endswith("added over idle median ms"))
    met = worst <= TARGET_MS
    print(
        f"target: no Read during a call more than {TARGET_MS:g} ms over the idle median: {'met' if met else 'NOT met'}"
    )
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
