"""Small Reads, paired: `python -m benchmarks.read_pairs --against REF [--rounds N] [--block N] [--lines N]`.

The small-read workload goes through the SDK's client, which uses as much CPU per call as our server and
shares the two cores with it. Here a plain JSON-RPC client (`bash_pairs.Server`: a line written, a line
read) keeps this tree's server and REF's open at once over one folder of distinct files and alternates
blocks of back-to-back Reads between them, so the load that comes falls on both alike. It prints each
one's p50 and CPU per call (every thread, from /proc schedstat), and this tree's ratios to REF's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import fixtures, servers
from benchmarks.bash_pairs import Server
from benchmarks.run import _against
from benchmarks.stats import percentile

WARMUP = 100


class ReadingServer(Server):
    """A server that answers Reads."""

    def read(self, path: Path) -> float:
        """Seconds for one Read of `path`, request written to answer read."""
        self.next_id += 1
        request = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": "Read", "arguments": {"file_path": str(path)}},
        }
        started = time.perf_counter()
        self._send(request)
        answer = self._answer()
        elapsed = time.perf_counter() - started
        if (answer.get("result") or {}).get("isError", True):
            raise RuntimeError(f"{self.label}: {str(answer)[:300]}")
        return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.read_pairs", description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REF", required=True, help="our server at git REF (column 'before')")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--lines", type=int, default=50, help="lines per file (each Read is of a new file)")
    args = parser.parse_args(argv)
    calls = args.rounds * args.block
    with tempfile.TemporaryDirectory(prefix="read-pairs-") as scratch_name:
        scratch = Path(scratch_name)
        roots = [scratch / "root"]
        # Distinct files: a repeated Read of an unchanged file would get the short "unchanged" notice.
        files = fixtures.many_files(roots[0] / "small", 2 * (WARMUP + calls), args.lines, seed=2)
        specs = {"ours": servers.ours(roots), "before": _against(args.against, scratch / "against", roots)}
        running = {key: ReadingServer(spec) for key, spec in specs.items()}
        todo = {key: iter(files[i * (WARMUP + calls) : (i + 1) * (WARMUP + calls)]) for i, key in enumerate(running)}
        try:
            for key, server in running.items():
                for _ in range(WARMUP):
                    server.read(next(todo[key]))
            times: dict[str, list[float]] = {key: [] for key in running}
            cpu = dict.fromkeys(running, 0.0)
            loads = [os.getloadavg()[0]]
            for index in range(args.rounds):
                for key in list(running) if index % 2 == 0 else list(reversed(running)):
                    before = running[key].cpu()
                    times[key] += [running[key].read(next(todo[key])) for _ in range(args.block)]
                    cpu[key] += running[key].cpu() - before
                loads.append(os.getloadavg()[0])
        finally:
            for server in running.values():
                server.close()
    print(f"{calls} Reads of {args.lines}-line files each; 1-minute load average {min(loads):.1f}-{max(loads):.1f}")
    p50 = {key: percentile(values, 50) * 1000 for key, values in times.items()}
    per_call = {key: total * 1000 / calls for key, total in cpu.items()}
    for key in running:
        print(f"  {key:7s} p50 {p50[key]:6.3f} ms   server CPU {per_call[key]:6.3f} ms/call   ({specs[key].label})")
    print(f"  ours / before: p50 {p50['ours'] / p50['before']:.3f}×, CPU {per_call['ours'] / per_call['before']:.3f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
