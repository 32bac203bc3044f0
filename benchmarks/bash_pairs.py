"""Bash `echo hi`, paired: `python -m benchmarks.bash_pairs [--against REF] [--rounds N] [--block N] [--pause-ms MS]
[--command CMD]`.

The bash workload times calls through the SDK's client, whose own work per call shares the two cores with
the server's; on a shared machine the load drifts between its blocks. Here a plain JSON-RPC client (a line
written, a line read) keeps both of our servers (this tree and REF) open at once and alternates blocks of
back-to-back calls between them, `bash -c 'echo hi'` and `sh -c 'echo hi'` spawned from this process, so
whatever load comes falls on all of them alike. It prints the p50 of each, the median of the per-round
ratios, and each server's CPU per call (every thread, from /proc schedstat; bash's own CPU is not in it).
`--sandbox` runs both servers with the Bash sandbox on (where bwrap works). `--pause-ms` waits that long
before each call (untimed), as an agent that thinks between commands: what starts after an answer is ready then.
`--command` times another command (its output must be `hi`), e.g. `/bin/echo hi`, which runs a program: a lone
builtin such as `echo hi` is run by the waiting bash itself (`shell/in_place.py`), any other command by a bash of
its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import procs, servers
from benchmarks.first_result_pairs import INITIALIZE
from benchmarks.run import _against
from benchmarks.stats import median, percentile


class Server:
    """One server over pipes, answering one request at a time."""

    def __init__(self, spec: servers.ServerSpec) -> None:
        env = {key: os.environ[key] for key in ("HOME", "PATH") if key in os.environ} | spec.env
        self.label = spec.label
        self.process = subprocess.Popen(
            [spec.command, *spec.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=spec.cwd,
        )
        self.next_id = 1
        for message in INITIALIZE:
            self._send(message)
            if "id" in message:
                self._answer()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def echo(self, command: str = "echo hi") -> float:
        """Seconds for one call of `command` (`echo hi`), request written to answer read."""
        self.next_id += 1
        request = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": "Bash", "arguments": {"command": command}},
        }
        started = time.perf_counter()
        self._send(request)
        answer = self._answer()
        elapsed = time.perf_counter() - started
        result = answer.get("result") or {}
        if result.get("isError") or "hi" not in json.dumps(result):
            raise RuntimeError(f"{self.label}: {str(answer)[:300]}")
        return elapsed

    def cpu(self) -> float:
        return procs.cpu_seconds(self.process.pid) or 0.0

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def _timed(argv: list[str]) -> float:
    return procs.run_timed(argv)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bash_pairs", description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REF", help="also our server at git REF (column 'before')")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=10)
    parser.add_argument("--sandbox", action="store_true", help="the Bash sandbox on in both servers")
    parser.add_argument("--pause-ms", type=float, default=0.0, help="an untimed pause before each call")
    parser.add_argument("--command", default="echo hi", help="the command timed (it prints `hi`)")
    args = parser.parse_args(argv)
    pause = args.pause_ms / 1000

    def paused(call: Callable[[], float]) -> float:
        if pause:
            time.sleep(pause)
        return call()

    with tempfile.TemporaryDirectory(prefix="bash-pairs-") as scratch_name:
        scratch = Path(scratch_name)
        (scratch / "root").mkdir()
        roots = [scratch / "root"]
        specs = {"ours": servers.ours(roots)}
        if args.against:
            specs["before"] = _against(args.against, scratch / "against", roots)
        if args.sandbox:
            specs = {
                key: dataclasses.replace(spec, env={**spec.env, "MCP_CODETOOLS_SANDBOX": "1"})
                for key, spec in specs.items()
            }
        running = {key: Server(spec) for key, spec in specs.items()}
        try:
            times: dict[str, list[float]] = {key: [] for key in [*running, "bash -c", "sh -c"]}
            cpu: dict[str, float] = dict.fromkeys(running, 0.0)
            per_round: dict[str, list[float]] = {key: [] for key in times}
            for server in running.values():
                for _ in range(5):
                    server.echo(args.command)
            loads = [os.getloadavg()[0]]
            for index in range(args.rounds):
                order = list(times) if index % 2 == 0 else list(reversed(times))
                for key in order:
                    if key in running:
                        before = running[key].cpu()
                        block = [paused(partial(running[key].echo, args.command)) for _ in range(args.block)]
                        cpu[key] += running[key].cpu() - before
                    else:
                        shell = [key.split()[0], "-c", args.command]
                        block = [paused(partial(_timed, shell)) for _ in range(args.block)]
                    times[key] += block
                    per_round[key].append(median(block))
                loads.append(os.getloadavg()[0])
        finally:
            for server in running.values():
                server.close()
    calls = args.rounds * args.block
    paused_note = f", {args.pause_ms:g} ms pause before each" if pause else ""
    load = f"{min(loads):.1f}–{max(loads):.1f} (median {median(loads):.1f})"
    print(f"`{args.command}`, {calls} calls each{paused_note}; 1-minute load average {load}")
    for key, values in times.items():
        line = f"  {key:8s} p50 {percentile(values, 50) * 1000:6.2f} ms"
        if key in cpu:
            line += f"   server CPU {cpu[key] * 1000 / calls:5.2f} ms/call"
        for base in ("bash -c", "before"):
            if base in per_round and base != key and key not in ("bash -c", "sh -c"):
                ratios = [a / b for a, b in zip(per_round[key], per_round[base], strict=True)]
                line += f"   / {base} {percentile(values, 50) / percentile(times[base], 50):.2f}×"
                line += f" (per round {median(ratios):.2f}×)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
