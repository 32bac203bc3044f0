"""`echo hi` on the `container` backend against a bare `docker exec` of the same container, in one run.

    python -m benchmarks.container_echo [--image IMAGE] [--runs N] [--modes]

Alternates the two (tool call through the pipeline, then `docker exec NAME bash -c 'echo hi'`) so load
changes hit both alike, and reports each p50, their ratio (target <= 1.2) and the first command's latency
(the container's start). The image defaults to the container lane's (`mcp-codetools-ci:*`).

`--modes` instead compares the supervised container (each command under the sandbox's supervisor) with
the frozen one an image without python3 gets, one session of each, alternated: `true`, and writing 10
files then `git add -A && git commit` in a repository in a subfolder (at the root's top level, frozen
`.git` refuses the commit; the supervised row for that is measured too).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import SandboxSettings, Settings
from mcp_codetools.shell import sandbox
from mcp_codetools.tools import default_tools

GIT = "git -c user.name=b -c user.email=b@b -c init.defaultBranch=main"
COMMIT = f"for i in 0 1 2 3 4 5 6 7 8 9; do echo $RANDOM > f$i.txt; done && {GIT} add -A && {GIT} commit -qm x"


def _lane_image() -> str | None:
    listed = subprocess.run(
        ["docker", "images", "mcp-codetools-ci", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.split()
    return min(listed, key=len) if listed else None


async def measure(image: str, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mcp-codetools-bench-") as tmp:
        root = Path(tmp).resolve()
        sandbox = SandboxSettings(enabled=True, backend="container", image=image)
        session = CodeSession(Settings(roots=(root,), sandbox=sandbox))
        pipeline = Pipeline(default_tools())
        try:
            started = time.perf_counter()
            first = await pipeline.run(session, "Bash", {"command": "echo hi"})
            first_s = time.perf_counter() - started
            assert not first.is_error and "hi" in first.text, first.text
            box = session.confinement.container if session.confinement else None
            assert box is not None
            tool: list[float] = []
            bare: list[float] = []
            for _ in range(runs):
                t = time.perf_counter()
                out = await pipeline.run(session, "Bash", {"command": "echo hi"})
                tool.append(time.perf_counter() - t)
                assert not out.is_error, out.text
                t = time.perf_counter()
                # Blocking on purpose: the baseline is the bare CLI, with nothing else on the loop to serve.
                bare_exec = ["docker", "exec", box.name, "bash", "-c", "echo hi"]
                subprocess.run(bare_exec, capture_output=True, check=True)  # noqa: ASYNC221
                bare.append(time.perf_counter() - t)
        finally:
            await session.aclose()
    tool_p50, bare_p50 = statistics.median(tool), statistics.median(bare)
    return {"first_ms": first_s * 1000, "tool_p50_ms": tool_p50 * 1000, "bare_p50_ms": bare_p50 * 1000,
            "ratio": tool_p50 / bare_p50}  # fmt: skip


async def measure_modes(image: str, runs: int) -> dict[str, float]:
    """p50s (ms) of `true` and a 10-file commit, supervised and frozen, alternated call by call."""
    with tempfile.TemporaryDirectory(prefix="mcp-codetools-bench-") as tmp:
        pipeline = Pipeline(default_tools())
        sessions: dict[str, CodeSession] = {}
        for mode in ("supervised", "frozen"):
            root = Path(tmp, mode).resolve()
            (root / "sub").mkdir(parents=True)
            for where in (root, root / "sub"):
                subprocess.run([*GIT.split(), "init", "-q", str(where)], check=True)  # noqa: ASYNC221 (set-up)
            # A setting no one reads here tells the two apart, so each is probed (and kept) on its own.
            settings = SandboxSettings(enabled=True, backend="container", image=image, env=(f"BENCH_{mode.upper()}",))
            found = sandbox.probe(settings)
            assert not found.unsupervised, found.unsupervised
            if mode == "frozen":  # as for an image without python3
                found = dataclasses.replace(found, unsupervised="frozen for the benchmark")
            sandbox._probed[settings] = found
            sessions[mode] = CodeSession(Settings(roots=(root,), sandbox=settings))
        timings: dict[str, list[float]] = {}
        try:
            for session in sessions.values():  # each container started, outside the timings
                await _ok(pipeline, session, "true")
            for _ in range(runs):
                for mode, session in sessions.items():
                    for name, command in (("true", "true"), ("commit", f"(cd sub && {COMMIT})")):
                        timings.setdefault(f"{mode} {name}", []).append(await _ok(pipeline, session, command))
            top = await pipeline.run(sessions["frozen"], "Bash", {"command": COMMIT})
            assert top.is_error, "a frozen .git took a commit"
            for _ in range(runs):
                timings.setdefault("supervised commit at the top", []).append(
                    await _ok(pipeline, sessions["supervised"], COMMIT)
                )
        finally:
            for session in sessions.values():
                await session.aclose()
    return {name: statistics.median(values) * 1000 for name, values in timings.items()}


async def _ok(pipeline: Pipeline, session: CodeSession, command: str) -> float:
    started = time.perf_counter()
    out = await pipeline.run(session, "Bash", {"command": command})
    elapsed = time.perf_counter() - started
    assert not out.is_error, f"{command}: {out.text}"
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default=None)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--modes", action="store_true", help="supervised against frozen: true and a git commit")
    args = parser.parse_args(argv)
    image = args.image or _lane_image()
    if image is None:
        print("no image: run .ci/container-lane or give --image", file=sys.stderr)
        return 2
    if args.modes:
        before = os.getloadavg()[0]
        p50 = anyio.run(measure_modes, image, args.runs)
        print(f"| image | {image} ({args.runs} runs, load average {before:.2f} -> {os.getloadavg()[0]:.2f}) |")
        for name in ("true", "commit"):
            frozen, supervised = p50[f"frozen {name}"], p50[f"supervised {name}"]
            ratio = supervised / frozen
            print(f"| {name} p50: frozen / supervised | {frozen:.1f} / {supervised:.1f} ms ({ratio:.2f}x) |")
        top = p50["supervised commit at the top"]
        print(f"| commit at the top p50: supervised (frozen refuses it) | {top:.1f} ms |")
        return 0
    found = anyio.run(measure, image, args.runs)
    print(f"| image | {image} |")
    print(f"| first command (container start) | {found['first_ms']:.0f} ms |")
    print(f"| echo hi p50, container backend | {found['tool_p50_ms']:.1f} ms |")
    print(f"| echo hi p50, bare docker exec | {found['bare_p50_ms']:.1f} ms |")
    print(f"| ratio (target <= 1.2) | {found['ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
