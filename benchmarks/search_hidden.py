"""What hiding denied files costs Grep and Glob: `python -m benchmarks.search_hidden [--files N] [--rounds N]`.

A generated tree (N source files in folders of 100, a `.env` in each folder, a `secrets/` folder) is
searched through the pipeline with a gate that has no rules and one with 20 deny path rules, calls
alternating in the same run. Reported: median ms per call for each, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from benchmarks.fixtures import source_text
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.loading import load_gate
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools

TWENTY_RULES = (
    ["Read(.env)", "Read(./secrets/**)", "Read(*.pem)", "Read(id_rsa)", "Grep(*.key)"]
    + [f"Read(./private{i}/**)" for i in range(8)]
    + [f"Read(**/cache{i}/*.bin)" for i in range(7)]
)

CALLS: dict[str, dict[str, Any]] = {
    "Grep files (all match)": {"pattern": "def "},
    "Grep count (all match)": {"pattern": "def ", "output_mode": "count"},
    "Grep content -C1": {"pattern": "=None\\):$", "output_mode": "content", "-C": 1},
    "Glob **/*": {"pattern": "**/*"},
}


def build_tree(root: Path, files: int) -> None:
    text = source_text(20, 7)
    for i in range(files):
        folder = root / f"pkg{i // 100:03d}"
        if i % 100 == 0:
            folder.mkdir()
            (folder / ".env").write_text("TOKEN=def secret\n")
        (folder / f"mod_{i:05d}.py").write_text(text)
    (root / "secrets").mkdir()
    for i in range(200):
        (root / "secrets" / f"k{i}.txt").write_text("def secret\n")


def gate_with(root: Path, deny: list[str]) -> Any:
    rules = ", ".join(f'"{rule}"' for rule in deny)
    (root / "mcp-codetools.toml").write_text(f"[permissions]\ndeny = [{rules}]\n")
    return load_gate((root,), environ={})


async def timed(pipeline: Pipeline, session: CodeSession, tool: str, args: Mapping[str, Any]) -> tuple[float, str]:
    start = time.perf_counter()
    output = await pipeline.run(session, tool, args)
    assert not output.is_error, output.text
    return (time.perf_counter() - start) * 1000, output.text


async def measure(root: Path, rounds: int) -> None:
    pipelines = {
        "0 rules": Pipeline(default_tools(), gate=gate_with(root, [])),
        "20 rules": Pipeline(default_tools(), gate=gate_with(root, TWENTY_RULES)),
    }
    session = CodeSession(Settings(roots=(root,)))
    try:
        for name, call in CALLS.items():
            tool = name.split()[0]
            samples: dict[str, list[float]] = {variant: [] for variant in pipelines}
            firsts: dict[str, str] = {}
            for _ in range(rounds):
                for variant, pipeline in pipelines.items():
                    ms, text = await timed(pipeline, session, tool, call)
                    samples[variant].append(ms)
                    firsts.setdefault(variant, text.splitlines()[0] if text else "")
            base, ruled = (statistics.median(samples[v]) for v in pipelines)
            print(f"  {name:<24} 0 rules {base:7.1f} ms   20 rules {ruled:7.1f} ms   ratio {ruled / base:.2f}")
            print(f"  {'':<24} ({firsts['0 rules']!r} vs {firsts['20 rules']!r})")
    finally:
        await session.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_hidden")
    parser.add_argument("--files", type=int, default=10_000, help="source files in the tree (default 10000)")
    parser.add_argument("--rounds", type=int, default=15, help="calls per variant and workload (default 15)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-codetools-hidden-") as tmp:
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "no-user-config")
        root = Path(tmp, "ws").resolve()
        root.mkdir()
        build_tree(root, args.files)
        print(f"{args.files} files, median ms per call over {args.rounds} alternating rounds:")
        anyio.run(measure, root, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
