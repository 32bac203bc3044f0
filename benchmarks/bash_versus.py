"""The permission step and the Bash tool's `echo hi` against another commit, both in this one process.

`python -m benchmarks.bash_versus REF [--rounds N] [--calls N]` copies the package at REF (`git archive`)
to a temporary folder under another name, so the two versions load side by side; then it times
`Policy.decide` with 100 rules (a Read, and the 3-command Bash call as the Bash tool hands it over) in
alternating blocks, and the Bash tool's `echo hi` through the whole pipeline (sandbox off) with calls
alternating between the two versions' sessions. Load from elsewhere on the machine falls on both alike,
which separate processes cannot promise on a shared machine. `REF` may equal the work tree's commit: the
A/A figure is the noise.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import io
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE = "mcp_codetools"
ROOT = Path("/ws/proj")
BASH = "npm run task5 --x && git status | head -5"


def copy_at(ref: str, into: Path, name: str) -> None:
    """The package as of `ref`, importable as `name` from `into`."""
    top = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "archive", ref, PACKAGE], cwd=top, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / PACKAGE).rename(into / name)
    word = re.compile(rf"\b{PACKAGE}\b")
    for path in (into / name).rglob("*.py"):
        path.write_text(word.sub(name, path.read_text(encoding="utf-8")), encoding="utf-8")


def load(name: str) -> dict[str, ModuleType]:
    parts = ("policy.engine", "policy.rules", "commands.analysis", "pipeline", "session", "settings", "tools")
    return {part: importlib.import_module(f"{name}.{part}") for part in parts}


def facts(m: dict[str, ModuleType]) -> tuple[Any, dict[str, Any]]:
    """A policy with 100 rules (as `benchmarks.permissions` builds it) and the calls it decides."""
    texts: list[tuple[str, str]] = []
    for i in range(34):
        texts.append((f"Read(./secrets{i}/**)", "deny"))
        texts.append((f"Edit(src/module{i}/**/*.py)", "ask" if i % 2 else "allow"))
        texts.append((f"Bash(npm run task{i} *)", "allow" if i % 3 else "deny"))
    rules = [m["policy.rules"].parse_rule(t, b, source="bench", base=ROOT) for t, b in texts[:100]]
    engine = m["policy.engine"]
    policy = engine.Policy(
        roots=(ROOT,),
        allow=tuple(r for r in rules if r.behaviour == "allow"),
        deny=tuple(r for r in rules if r.behaviour == "deny"),
        ask=tuple(r for r in rules if r.behaviour == "ask"),
    )
    analysed = m["commands.analysis"].analyse(BASH)
    carrier = getattr(m["commands.analysis"], "AnalysedCommand", None)  # how the code before issue 36's end did it
    if carrier is not None:
        bash = engine.CallFacts("Bash", False, command=carrier(analysed), cwd=ROOT)
    else:
        bash = engine.CallFacts("Bash", False, cwd=ROOT, analysis=analysed)
    read = engine.CallFacts("Read", True, read_paths=(ROOT / "src" / "app" / "main.py",))
    return policy, {"Read": read, "Bash (3 commands)": bash}


def decide_ms(policy: Any, call: Any, count: int = 500) -> float:
    start = time.perf_counter()
    for _ in range(count):
        policy.decide(call)
    return (time.perf_counter() - start) / count * 1000


async def echo_ms(versions: dict[str, dict[str, ModuleType]], root: Path, calls: int) -> dict[str, list[float]]:
    runs = {}
    for label, m in versions.items():
        pipeline = m["pipeline"].Pipeline(m["tools"].default_tools())
        session = m["session"].CodeSession(m["settings"].Settings(roots=(root,)))
        for _ in range(5):  # warm: the parser, the scratch folder
            await pipeline.run(session, "Bash", {"command": "echo hi"})
        runs[label] = (pipeline, session)
    samples: dict[str, list[float]] = {label: [] for label in versions}
    order = list(runs.items())
    try:
        for i in range(calls):
            for label, (pipeline, session) in order if i % 2 else order[::-1]:
                start = time.perf_counter()
                out = await pipeline.run(session, "Bash", {"command": "echo hi"})
                samples[label].append((time.perf_counter() - start) * 1000)
                assert out.text == "hi", out.text
    finally:
        for _, session in runs.values():
            await session.aclose()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bash_versus")
    parser.add_argument("ref", help="the commit to compare the work tree with (e.g. main)")
    parser.add_argument("--rounds", type=int, default=10, help="alternating blocks of 500 decisions (default 10)")
    parser.add_argument("--calls", type=int, default=600, help="echo hi calls per version (default 600)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bash-versus-") as folder:
        copy_at(args.ref, Path(folder), f"{PACKAGE}_then")
        sys.path.insert(0, folder)
        versions = {args.ref: load(f"{PACKAGE}_then"), "work tree": load(PACKAGE)}
        built = {label: facts(m) for label, m in versions.items()}
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for label, (policy, calls) in built.items():
                for call, call_facts in calls.items():
                    times.setdefault((label, call), []).append(decide_ms(policy, call_facts))
        then, now = versions
        print(f"Policy.decide with 100 rules, ms (best and median of {args.rounds} blocks of 500):")
        for call in built[then][1]:
            b, a = times[(then, call)], times[(now, call)]
            print(
                f"  {call:<18} {then}: {min(b):.4f} / {statistics.median(b):.4f}   work tree: {min(a):.4f} / "
                f"{statistics.median(a):.4f}   ({statistics.median(a) / statistics.median(b):.2f}x)"
            )
        with tempfile.TemporaryDirectory(prefix="bash-versus-root-") as root:
            samples = asyncio.run(echo_ms(versions, Path(root), args.calls))
        b, a = statistics.median(samples[then]), statistics.median(samples[now])
        print(f"Bash `echo hi` p50 over {args.calls} calls each: {then} {b:.2f} ms, work tree {a:.2f} ms", end=" ")
        print(f"({a / b:.2f}x)")
    averages = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average (1, 5, 15 min): {averages} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
