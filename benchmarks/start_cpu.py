"""CPU of a first start: `python -m benchmarks.start_cpu [--rounds N] [--against REF] [--transport stdio,http]`.

Most of the test suite's CPU goes to servers it starts without a start snapshot, each for a few calls. This
times the server's whole life for such a use: spawn, `initialize`, `tools/list`, one 50-line Read, exit.
The figure is the CPU (user and system, every thread, children it reaped) the kernel reports when the
process is reaped, so the machine's load moves it much less than a wall time. Ours and ours at REF run in
turn, the order rotating each round; it prints the medians and the median of the per-round ratios.
Over HTTP the server listens on a free port (`--port 0`), the client posts the same calls and a SIGTERM ends it.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks import fixtures, servers
from benchmarks.first_result_pairs import HANDSHAKE
from benchmarks.run import _against
from benchmarks.stats import median

URL_MARK = b"serving MCP over HTTP at "
TIMEOUT_S = 60.0


def _read_call(target: Path) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "Read", "arguments": {"file_path": str(target)}},
    }


def _checked(answer: dict[str, Any], label: str) -> None:
    if "result" not in answer or answer["result"].get("isError"):
        raise RuntimeError(f"{label}: {str(answer)[:300]}")


def _spawn(spec: servers.ServerSpec, extra: list[str], stderr: int) -> subprocess.Popen[bytes]:
    env = {key: os.environ[key] for key in ("HOME", "PATH") if key in os.environ} | spec.env
    return subprocess.Popen(
        [spec.command, *spec.args, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
        cwd=spec.cwd,
    )


def _stdio(spec: servers.ServerSpec, target: Path) -> float:
    process = _spawn(spec, [], subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    try:
        for message in (*HANDSHAKE, _read_call(target)):
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                _checked(json.loads(process.stdout.readline()), spec.label)
        process.stdin.close()  # end of input: the server exits
        return _reap(process)
    finally:
        _kill(process)


def _post(url: str, message: dict[str, Any], session: str | None) -> tuple[dict[str, Any] | None, str | None]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    request = urllib.request.Request(url, json.dumps(message).encode(), headers, method="POST")
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        body = response.read().decode()
        session = response.headers.get("Mcp-Session-Id") or session
    if "id" not in message:
        return None, session
    if body.lstrip().startswith("{"):
        return json.loads(body), session
    data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]
    return json.loads(data[-1]), session


def _http(spec: servers.ServerSpec, target: Path) -> float:
    process = _spawn(spec, ["--transport", "http", "--port", "0"], subprocess.PIPE)
    assert process.stderr is not None
    try:
        url = ""
        for raw in process.stderr:  # the server names its URL on stderr once it listens
            if URL_MARK in raw:
                url = raw.split(URL_MARK, 1)[1].split(b";", 1)[0].decode().strip()
                break
        if not url:
            raise RuntimeError(f"{spec.label}: no URL on stderr")
        session = None
        for message in (*HANDSHAKE, _read_call(target)):
            answer, session = _post(url, message, session)
            if answer is not None:
                _checked(answer, spec.label)
        process.send_signal(signal.SIGTERM)
        process.stderr.close()
        return _reap(process)
    finally:
        _kill(process)


def _reap(process: subprocess.Popen[bytes]) -> float:
    """Reap the exiting `process` (bounded) and return its user + system CPU seconds, reaped children included.

    Popen's own wait would reap it without the account, so this waits on a pidfd where there is one.
    """
    if hasattr(os, "pidfd_open"):
        with os.fdopen(os.pidfd_open(process.pid), "rb", buffering=0) as pidfd:
            if not select.select([pidfd], [], [], TIMEOUT_S)[0]:
                raise RuntimeError(f"pid {process.pid} did not exit within {TIMEOUT_S:g} s")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.returncode is None:
        process.kill()
        process.wait(timeout=TIMEOUT_S)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


SEQUENCES = {"stdio": _stdio, "http": _http}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.start_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", metavar="REF", help="also our server at git REF (column 'before')")
    parser.add_argument("--transport", default="stdio,http", help="comma-separated: stdio, http")
    args = parser.parse_args(argv)
    transports = [name for name in args.transport.split(",") if name]
    with tempfile.TemporaryDirectory(prefix="start-cpu-") as scratch_name:
        scratch = Path(scratch_name)
        (target,) = fixtures.many_files(scratch / "root", 1, 50, seed=38)
        roots = [scratch / "root"]
        specs = {"ours": servers.ours(roots, cache=scratch / "cache")}
        if args.against:
            specs["before"] = _against(args.against, scratch / "against", roots)
        keys = [(key, transport) for key in specs for transport in transports]
        for key, transport in keys:
            SEQUENCES[transport](specs[key], target)  # bytecode written, page cache warm
        cpu: dict[tuple[str, str], list[float]] = {key: [] for key in keys}
        loads = [os.getloadavg()[0]]
        for index in range(args.rounds):
            shift = index % len(keys)
            for key, transport in keys[shift:] + keys[:shift]:
                cpu[key, transport].append(SEQUENCES[transport](specs[key], target))
            loads.append(os.getloadavg()[0])
    print(f"{args.rounds} rounds; 1-minute load average {min(loads):.1f}–{max(loads):.1f} (median {median(loads):.1f})")
    print("server CPU (user + system) of spawn → initialize → tools/list → one Read → exit, no start snapshot")
    for key, transport in keys:
        values = cpu[key, transport]
        line = f"  {specs[key].label:32s} {transport:5s} median {median(values) * 1000:6.0f} ms"
        line += f"  (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"
        if key != "before" and ("before", transport) in cpu:
            base = cpu["before", transport]
            ratios = [a / b for a, b in zip(values, base, strict=True)]
            line += f"   / before {median(values) / median(base):.2f}× (per round {median(ratios):.2f}×)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
