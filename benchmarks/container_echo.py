"""`echo hi` on the `container` backend against a bare `docker exec` of the same container, in one run.

    python -m benchmarks.container_echo [--image IMAGE] [--runs N]

Alternates the two (tool call through the pipeline, then `docker exec NAME bash -c 'echo hi'`) so load
changes hit both alike, and reports each p50, their ratio (target <= 1.2) and the first command's latency
(the container's start). The image defaults to the container lane's (`mcp-codetools-ci:*`).
"""

from __future__ import annotations

import argparse
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
from mcp_codetools.tools import default_tools


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default=None)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    image = args.image or _lane_image()
    if image is None:
        print("no image: run .ci/container-lane or give --image", file=sys.stderr)
        return 2
    found = anyio.run(measure, image, args.runs)
    print(f"| image | {image} |")
    print(f"| first command (container start) | {found['first_ms']:.0f} ms |")
    print(f"| echo hi p50, container backend | {found['tool_p50_ms']:.1f} ms |")
    print(f"| echo hi p50, bare docker exec | {found['bare_p50_ms']:.1f} ms |")
    print(f"| ratio (target <= 1.2) | {found['ratio']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
