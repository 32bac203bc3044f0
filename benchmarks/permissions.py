"""The permission step's cost and the sandbox's: `python -m benchmarks.permissions [--rounds N]`.

1. `Policy.decide` per call with 100 rules (allow, deny, ask mixed over Read/Edit paths and Bash commands)
   for a Read, an Edit and a compound Bash command, against a policy with no rules (same run).
   Target: < 0.05 ms per call with 100 rules.
2. `bash -c 'echo hi'` run under the sandbox (each backend that works here) against the same command run
   plainly, p50 over alternating runs. Target: sandboxed p50 < 15 ms.
3. The Bash tool's `echo hi` through the whole pipeline (classifier, runner, cwd report, leftover scan),
   one session per variant (sandbox off, each backend), calls alternating between them.

The machine's load average is printed with the numbers: on a shared machine they move with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from mcp_codetools.commands.analysis import analyse
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.engine import CallFacts, Policy
from mcp_codetools.policy.rules import Behaviour, parse_rule
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.shell.sandbox import SandboxSettings, SandboxUnavailable, probe
from mcp_codetools.tools import default_tools

ROOT = Path("/ws/proj")


def hundred_rules() -> Policy:
    texts: list[tuple[str, Behaviour]] = []
    for i in range(34):
        texts.append((f"Read(./secrets{i}/**)", "deny"))
        texts.append((f"Edit(src/module{i}/**/*.py)", "ask" if i % 2 else "allow"))
        texts.append((f"Bash(npm run task{i} *)", "allow" if i % 3 else "deny"))
    rules = [parse_rule(t, b, source="bench", base=ROOT) for t, b in texts[:100]]
    return Policy(
        roots=(ROOT,),
        allow=tuple(r for r in rules if r.behaviour == "allow"),
        deny=tuple(r for r in rules if r.behaviour == "deny"),
        ask=tuple(r for r in rules if r.behaviour == "ask"),
    )


CALLS = {
    "Read": CallFacts("Read", True, read_paths=(ROOT / "src" / "app" / "main.py",)),
    "Edit": CallFacts("Edit", False, write_paths=(ROOT / "src" / "module7" / "x" / "y.py",)),
    # As the Bash tool hands it over: the text with the analysis `classify` built off the loop (not timed here).
    "Bash (3 commands)": CallFacts(
        "Bash", False, cwd=ROOT, analysis=analyse("npm run task5 --x && git status | head -5")
    ),
}


def per_call_ms(policy: Policy, facts: CallFacts, rounds: int) -> float:
    policy.decide(facts)  # warm: compiled rule regexes, the protected-path pattern
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            policy.decide(facts)
        best = min(best, (time.perf_counter() - start) / rounds * 1000)
    return best


def spawn_ms(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall ms and the CPU ms (user + system) the command and its children used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


async def tool_p50s(root: Path, calls: int) -> dict[str, float]:
    """p50 ms of the Bash tool's `echo hi` per variant, calls alternating between the variants' sessions."""
    pipeline = Pipeline(default_tools())
    sessions = {"off": CodeSession(Settings(roots=(root,)))}
    for kind in ("bwrap", "landlock"):
        sandbox = SandboxSettings(enabled=True, backend=kind)
        try:
            probe(sandbox)
        except SandboxUnavailable:
            continue
        sessions[kind] = CodeSession(Settings(roots=(root,), sandbox=sandbox))
    samples: dict[str, list[float]] = {name: [] for name in sessions}
    try:
        for session in sessions.values():  # warm-up: the first call sets up the scratch folder and masks
            await pipeline.run(session, "Bash", {"command": "echo hi"})
        for _ in range(calls):
            for name, session in sessions.items():
                start = time.perf_counter()
                out = await pipeline.run(session, "Bash", {"command": "echo hi"})
                samples[name].append((time.perf_counter() - start) * 1000)
                assert out.text == "hi", out.text
    finally:
        for session in sessions.values():
            await session.aclose()
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.permissions")
    parser.add_argument("--rounds", type=int, default=2000, help="decisions per timing (default 2000)")
    parser.add_argument("--spawns", type=int, default=100, help="echo runs per variant (default 100)")
    args = parser.parse_args()

    print("Permission step, ms per decision (best of 5 x rounds):")
    empty, full = Policy(roots=(ROOT,)), hundred_rules()
    for name, facts in CALLS.items():
        base, with_rules = per_call_ms(empty, facts, args.rounds), per_call_ms(full, facts, args.rounds)
        print(f"  {name:<18} no rules {base:.4f} ms   100 rules {with_rules:.4f} ms   (target < 0.05)")

    print(f"\nbash -c 'echo hi', p50 over {args.spawns} alternating runs:")
    root = Path(tempfile.mkdtemp(prefix="mcp-codetools-bench-"))
    command = ["bash", "-c", "echo hi"]
    variants: dict[str, tuple[list[str], dict[str, str]]] = {"plain": (command, dict(os.environ))}
    for kind in ("bwrap", "landlock"):
        try:
            sandbox = probe(SandboxSettings(enabled=True, backend=kind))
        except SandboxUnavailable as exc:
            print(f"  {kind}: not available ({exc})")
            continue
        variants[kind] = sandbox.wrap(command, cwd=root, writable=[root], env=dict(os.environ))
    samples: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, float] = dict.fromkeys(variants, 0.0)
    for _ in range(args.spawns):
        for name, (argv, env) in variants.items():
            wall, used = spawn_ms(argv, env)
            samples[name].append(wall)
            cpu[name] += used / args.spawns
    plain = statistics.median(samples["plain"])
    for name, values in samples.items():
        p50 = statistics.median(values)
        target = "   (target < 15)" if name != "plain" else ""
        print(f"  {name:<9} p50 {p50:6.2f} ms   ({p50 / plain:.1f}x plain)   CPU {cpu[name]:5.2f} ms/run{target}")

    print(f"\nBash tool `echo hi` through the pipeline, p50 over {args.spawns} alternating calls:")
    tool = asyncio.run(tool_p50s(root, args.spawns))
    for name, p50 in tool.items():
        print(f"  sandbox {name:<9} p50 {p50:6.2f} ms   ({p50 / tool['off']:.1f}x off)")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nload average (1, 5, 15 min): {load} on {os.cpu_count()} cores")
    os.rmdir(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
