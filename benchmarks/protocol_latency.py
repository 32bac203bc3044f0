"""One Read over HTTP at 2026-07-28 against one at 2025-11-25: `python -m benchmarks.protocol_latency [--calls N]`.

One server process (`mcp-codetools --transport http` on loopback), two SDK clients in this process: one
that opens a handshake session (2025-11-25) and one that speaks 2026-07-28, passing back the state_id
its first Read was given, as a model does. Calls alternate between the clients (which one goes first
alternates too), so both see the same machine load. A third client at 2026-07-28 that never passes a
state_id (each call a new state) is measured in the same rounds for the record.

Per call: wall time of `call_tool`, from this process. Target: the 2026-07-28 p50 within 1.2× the
2025-11-25 p50. The machine's load average is printed with the numbers.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

TARGET = 1.2


@contextmanager
def http_server(root: Path) -> Iterator[str]:
    """The server on an ephemeral loopback port; yields its URL (from its start-up line on stderr)."""
    script = Path(sys.executable).parent / "mcp-codetools"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "mcp_codetools"]
    env = {k: v for k, v in os.environ.items() if k != "MCP_CODETOOLS_HTTP_TOKEN"}
    proc = subprocess.Popen(
        [*command, "--transport", "http", "--port", "0", "--root", str(root)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        bufsize=0,
    )
    assert proc.stderr is not None
    try:
        line = ""
        deadline = time.monotonic() + 30
        while "http://" not in line:
            readable, _, _ = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
            raw = proc.stderr.readline() if readable else b""
            if not raw:
                raise RuntimeError(f"the server did not start: {line!r}")
            line = raw.decode(errors="replace")
        yield line[line.index("http://") :].split(";")[0].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    result = await call()
    elapsed = (time.perf_counter() - start) * 1000
    if result.is_error:
        raise RuntimeError(f"a call failed: {result.content}")
    return elapsed


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"p50 {statistics.median(ordered):7.2f} ms   p90 {p90:7.2f} ms   (n={len(ordered)})"


async def measure(url: str, target: Path, calls: int, warmup: int) -> dict[str, list[float]]:
    read = {"file_path": str(target)}
    async with (
        Client(url, mode="legacy") as legacy,
        Client(url) as modern,
        Client(url) as fresh,
    ):
        assert legacy.protocol_version == "2025-11-25" and modern.protocol_version == "2026-07-28"
        first = await modern.call_tool("Read", read)
        state = (first.meta or {})["codetools/stateId"]
        variants: dict[str, Callable[[], Awaitable[Any]]] = {
            "2025-11-25 Read (session)": lambda: legacy.call_tool("Read", read),
            "2026-07-28 Read (state_id)": lambda: modern.call_tool("Read", {**read, "state_id": state}),
            "2026-07-28 Read (no state_id: a new state each call)": lambda: fresh.call_tool("Read", read),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        for round_no in range(warmup + calls):
            order = names if round_no % 2 == 0 else names[::-1]
            for name in order:
                elapsed = await timed(variants[name])
                if round_no >= warmup:
                    times[name].append(elapsed)
        return times


def main() -> int:
    """Run the measurement and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="measured calls per variant (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="calls per variant before measuring")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="protocol-latency-") as folder:
        root = Path(folder).resolve()
        target = root / "small.py"
        target.write_text("".join(f"line_{i} = {i}\n" for i in range(50)), encoding="utf-8")
        load_before = os.getloadavg()[0]
        with http_server(root) as url:
            times = anyio.run(measure, url, target, args.calls, args.warmup)
        load_after = os.getloadavg()[0]
    for name, values in times.items():
        print(f"{name:55s} {summary(values)}")
    legacy, modern = (statistics.median(times[name]) for name in list(times)[:2])
    ratio = modern / legacy
    verdict = "yes" if ratio <= TARGET else "NO"
    print(f"ratio 2026-07-28 / 2025-11-25 at p50: {ratio:.2f}x (target <= {TARGET}x: {verdict})")
    print(f"load average (1 min): {load_before:.2f} at start, {load_after:.2f} at end; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
