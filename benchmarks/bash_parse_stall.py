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
import functools
import tempfile
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.stall import during_figures, idle_figures, idle_reads, reads_during, report, two_sessions
from benchmarks.stats import median
from mcp_codetools.commands.classify import MAX_PARSED_CHARS


async def measure(root: Path, chars: int, idle_count: int) -> dict[str, float | int | str]:
    """Run the scenario once against a server on `root`; the figures, in ms."""
    small = root / "small.txt"
    small.write_text("one small line\n", encoding="utf-8")
    read_args = {"file_path": str(small)}
    long_command = "true" + " a" * ((chars - 4) // 2)  # one-letter words: bashlex's slowest text
    commands = {"first Bash call": "echo hi", f"{len(long_command):,}-char command": long_command}
    async with two_sessions(root) as (runner, reader, _proc):
        idle = await idle_reads(reader, read_args, idle_count)
        runs = {
            label: await reads_during(reader, read_args, functools.partial(_bash, runner, command))
            for label, command in commands.items()
        }
    base = median(idle)
    figures = idle_figures(idle)
    for label, (_, call_ms, during) in runs.items():
        figures |= {f"{label}: call ms": round(call_ms, 1)} | during_figures(label, "call", during, base)
    return figures


async def _bash(runner: Client, command: str) -> None:
    result = await runner.call_tool("Bash", {"command": command})
    if result.is_error:
        raise RuntimeError(f"Bash failed: {result.content}")


def main() -> None:
    """Run the check and print the figures; exit 1 when a Read during a call took over the target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chars", type=int, default=MAX_PARSED_CHARS, help="length of the long command")
    parser.add_argument("--idle-reads", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bash-stall-") as scratch:
        figures = anyio.run(measure, Path(scratch).resolve(), args.chars, args.idle_reads)
    report(figures, "a call")


if __name__ == "__main__":
    main()
