"""Spawn → first Read, paired: `python -m benchmarks.first_result_pairs [--rounds N] [--against REF] [--first]
[--call-at MS]`.

The cold-start workload times each start through the SDK's client, whose own start-up work shares the
two cores with the server's; on a loaded machine its spread hides a difference of 100–200 ms. Here a
plain JSON-RPC client (a few lines over pipes) starts ours (snapshot warm), ours at REF (snapshot warm),
server-filesystem and the bare SDK server in turn, rotating the order each round, and prints the medians
and the median of the per-round ratios, which a load that drifts between rounds moves less. `--first`
adds ours (and ours at REF) as a first start: the snapshot folder emptied before each spawn. The servers
get only HOME and PATH from the environment, as the SDK's client gives them. `--call-at MS` sends the Read
MS after the spawn (at the `tools/list` answer if that is later), as a client that does some work first:
then the figure of interest is the Read's own latency (sent → answered), printed too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import fixtures, peers, servers
from benchmarks.run import _against
from benchmarks.stats import median

INITIALIZE = (
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "pairs", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
)
HANDSHAKE = (*INITIALIZE, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def _cpu_s(pid: int) -> float:
    """The CPU seconds (user and system, every thread) process `pid` has used so far; NaN without /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _first_result(
    spec: servers.ServerSpec, call: dict[str, Any], call_at_s: float = 0.0
) -> tuple[float, float, float, float]:
    """Seconds from spawn to the `tools/list` answer and to the answer of `call`, the server's CPU seconds
    by then (on a loaded machine the wall times wait for the cores, the CPU time much less), and the seconds
    from sending `call` (`call_at_s` after the spawn at the earliest) to its answer."""
    env = {key: os.environ[key] for key in ("HOME", "PATH") if key in os.environ} | spec.env
    started = time.perf_counter()
    process = subprocess.Popen(
        [spec.command, *spec.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=spec.cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    listed = sent = 0.0
    try:
        for message in (*HANDSHAKE, call):
            if message is call:
                time.sleep(max(0.0, started + call_at_s - time.perf_counter()))
                sent = time.perf_counter()
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                answer = json.loads(process.stdout.readline())
                if "result" not in answer or answer["result"].get("isError"):
                    raise RuntimeError(f"{spec.label}: {str(answer)[:300]}")
                if message["id"] == 1:
                    listed = time.perf_counter() - started
        answered = time.perf_counter()
        return listed, answered - started, _cpu_s(process.pid), answered - sent
    finally:
        process.stdin.close()
        process.wait(timeout=60)


FIRST_SUFFIX = "-first"
"""The key of a first start (no snapshot) of ours or ours at REF: the base key and this."""
BASES = ("fs", "bare", "before")
"""Each figure's ratios against these, where present."""


def _call(key: str, target: Path) -> dict[str, Any]:
    if key == "fs":
        params = {"name": "read_text_file", "arguments": {"path": str(target)}}
    elif key == "bare":
        params = {"name": "read", "arguments": {"path": str(target)}}
    else:
        params = {"name": "Read", "arguments": {"file_path": str(target)}}
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}


def _specs(args: argparse.Namespace, scratch: Path, roots: list[Path]) -> dict[str, servers.ServerSpec]:
    """The servers to start, by key; ours (and ours at REF) with the snapshot on, each in a cache of its own."""
    specs = {"ours": servers.ours(roots, cache=scratch / "cache")}
    if args.against:
        specs["before"] = _against(args.against, scratch / "against", roots)
    if peers.install():
        specs.update({spec.key: spec for spec in peers.specs(roots, scratch) if spec.key == "fs"})
    specs["bare"] = servers.bare(roots)
    for key in ("ours", "before"):
        if key not in specs:
            continue
        env = {**specs[key].env, "MCP_CODETOOLS_START_SNAPSHOT": "1", "XDG_CACHE_HOME": str(scratch / key)}
        specs[key] = dataclasses.replace(specs[key], env=env)
        if args.first:
            first_env = {**env, "XDG_CACHE_HOME": str(scratch / (key + FIRST_SUFFIX))}
            label = specs[key].label + ", first start"
            specs[key + FIRST_SUFFIX] = dataclasses.replace(specs[key], env=first_env, label=label)
    return specs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.first_result_pairs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--against", metavar="REF", help="also our server at git REF (column 'before')")
    parser.add_argument("--first", action="store_true", help="also a first start (no snapshot) of ours")
    parser.add_argument("--call-at", type=float, default=0.0, metavar="MS", help="send the Read MS after the spawn")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="first-result-") as scratch_name:
        scratch = Path(scratch_name)
        (target,) = fixtures.many_files(scratch / "root", 1, 50, seed=38)
        specs = _specs(args, scratch, [scratch / "root"])
        for key, spec in specs.items():
            _first_result(spec, _call(key, target))  # records the snapshot; warms the page cache
        first: dict[str, list[float]] = {key: [] for key in specs}
        listed: dict[str, list[float]] = {key: [] for key in specs}
        cpu: dict[str, list[float]] = {key: [] for key in specs}
        latency: dict[str, list[float]] = {key: [] for key in specs}
        loads = [os.getloadavg()[0]]
        order = list(specs)
        for index in range(args.rounds):
            shift = index % len(order)  # each server follows each other equally often, a first start too
            for key in order[shift:] + order[:shift]:
                if key.endswith(FIRST_SUFFIX):
                    shutil.rmtree(scratch / key, ignore_errors=True)
                to_list, to_first, cpu_s, took = _first_result(specs[key], _call(key, target), args.call_at / 1000)
                latency[key].append(took)
                listed[key].append(to_list)
                first[key].append(to_first)
                cpu[key].append(cpu_s)
            loads.append(os.getloadavg()[0])
    at = f"; the Read sent {args.call_at:g} ms after the spawn at the earliest" if args.call_at else ""
    spread = f"{min(loads):.1f}–{max(loads):.1f} (median {median(loads):.1f})"
    print(f"{args.rounds} rounds{at}; 1-minute load average {spread}")
    for key in specs:
        line = f"  {specs[key].label:40s} tools/list {median(listed[key]) * 1000:6.0f} ms"
        line += f"   first Read {median(first[key]) * 1000:6.0f} ms"
        for base in BASES:
            if base in first and base != key and not (base == "before" and key.startswith("before")):
                ratios = [a / b for a, b in zip(first[key], first[base], strict=True)]
                line += f"   / {base} {median(first[key]) / median(first[base]):.2f}× (per round {median(ratios):.2f}×)"
        print(line)
        line = f"  {'':40s} server CPU by then {median(cpu[key]) * 1000:6.0f} ms"
        for base in BASES:
            if base in cpu and base != key and not (base == "before" and key.startswith("before")):
                line += f"   / {base} {median(cpu[key]) / median(cpu[base]):.2f}×"
        print(line)
        if args.call_at:
            line = f"  {'':40s} the Read's own latency {median(latency[key]) * 1000:6.1f} ms"
            for base in BASES:
                if base in latency and base != key and not (base == "before" and key.startswith("before")):
                    line += f"   / {base} {median(latency[key]) / median(latency[base]):.2f}×"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
