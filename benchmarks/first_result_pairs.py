"""Spawn → first Read, paired: `python -m benchmarks.first_result_pairs [--rounds N] [--against REF]`.

The cold-start workload times each start through the SDK's client, whose own start-up work shares the
two cores with the server's; on a loaded machine its spread hides a difference of 100–200 ms. Here a
plain JSON-RPC client (a few lines over pipes) starts ours (snapshot warm), ours at REF (snapshot warm)
and server-filesystem in turn, reversing the order each round, and prints the medians and the median of
the per-round ratios, which a load that drifts between rounds moves less. The servers get only HOME and
PATH from the environment, as the SDK's client gives them.
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
from pathlib import Path
from typing import Any

from benchmarks import fixtures, peers, servers
from benchmarks.run import _against
from benchmarks.stats import median

HANDSHAKE = (
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
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
)


def _first_result(spec: servers.ServerSpec, call: dict[str, Any]) -> tuple[float, float]:
    """Seconds from spawn to the `tools/list` answer and to the answer of `call`."""
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
    listed = 0.0
    try:
        for message in (*HANDSHAKE, call):
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                answer = json.loads(process.stdout.readline())
                if "result" not in answer or answer["result"].get("isError"):
                    raise RuntimeError(f"{spec.label}: {str(answer)[:300]}")
                if message["id"] == 1:
                    listed = time.perf_counter() - started
        return listed, time.perf_counter() - started
    finally:
        process.stdin.close()
        process.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.first_result_pairs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--against", metavar="REF", help="also our server at git REF (column 'before')")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="first-result-") as scratch_name:
        scratch = Path(scratch_name)
        (target,) = fixtures.many_files(scratch / "root", 1, 50, seed=38)
        roots = [scratch / "root"]
        specs = {"ours": servers.ours(roots, cache=scratch / "cache")}
        if args.against:
            specs["before"] = _against(args.against, scratch / "against", roots)
        specs.update({spec.key: spec for spec in peers.specs(roots, scratch) if spec.key == "fs"})
        for key in ("ours", "before"):
            if key in specs:
                env = {**specs[key].env, "MCP_CODETOOLS_START_SNAPSHOT": "1", "XDG_CACHE_HOME": str(scratch / key)}
                specs[key] = dataclasses.replace(specs[key], env=env)
        calls = {
            key: {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "read_text_file", "arguments": {"path": str(target)}}
                if key == "fs"
                else {"name": "Read", "arguments": {"file_path": str(target)}},
            }
            for key in specs
        }
        for key, spec in specs.items():
            _first_result(spec, calls[key])  # records the snapshot; warms the page cache
        first: dict[str, list[float]] = {key: [] for key in specs}
        listed: dict[str, list[float]] = {key: [] for key in specs}
        loads = [os.getloadavg()[0]]
        for index in range(args.rounds):
            for key in list(specs) if index % 2 == 0 else list(reversed(specs)):
                to_list, to_first = _first_result(specs[key], calls[key])
                listed[key].append(to_list)
                first[key].append(to_first)
            loads.append(os.getloadavg()[0])
    print(f"{args.rounds} rounds; 1-minute load average {min(loads):.1f}–{max(loads):.1f} (median {median(loads):.1f})")
    for key in specs:
        line = f"  {specs[key].label:40s} tools/list {median(listed[key]) * 1000:6.0f} ms"
        line += f"   first Read {median(first[key]) * 1000:6.0f} ms"
        for base in ("fs", "before"):
            if base in first and base != key:
                ratios = [a / b for a, b in zip(first[key], first[base], strict=True)]
                line += f"   / {base} {median(first[key]) / median(first[base]):.2f}× (per round {median(ratios):.2f}×)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
