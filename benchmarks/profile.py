"""Profiles behind the analysis in RESULTS.md: `python -m benchmarks.profile SCENARIO [-n N]`.

Scenarios run our tools in-process through the real `Pipeline` under cProfile (no stdio, so what shows
is the server's own work): `read` (50-line Read), `pdf` (pages 1-5 of a 200-page PDF), `bash` (`echo hi`),
`edit` (one string in 10 MB), `tail` (the last 100 lines of a 200 MB file, first and repeated),
`grep-files` / `grep-content` (the benchmark's pattern over the corpus). `imports` summarises
`python -X importtime` for our modules above `import mcp`. For the stdio path, attach py-spy to a running
server instead (see RESULTS.md).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from benchmarks import fixtures, setup_corpus
from benchmarks.stats import median
from benchmarks.workloads import grep as grep_workload

Call = Callable[[int], Awaitable[Any]]


def _imports() -> None:
    code = (
        "import mcp, mcp.server, mcp.server.stdio; "
        "import mcp_codetools.cli, mcp_codetools.protocol.server, mcp_codetools.protocol.stdio"
    )
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True)
    seen_ours = False
    by_package: dict[str, int] = defaultdict(int)
    rows: list[tuple[int, int, str]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        module = name.strip()
        seen_ours = seen_ours or module.startswith("mcp_codetools")
        if seen_ours:
            by_package[module.split(".")[0]] += int(self_us)
            rows.append((int(self_us), int(cumulative_us), name))
    print("Imports after `import mcp` (self time by top-level package, ms):")
    for package, us in sorted(by_package.items(), key=lambda item: -item[1]):
        print(f"  {package:24s} {us / 1000:8.1f}")
    print("\nSlowest modules (self / cumulative ms):")
    for own, cumulative, module in sorted(rows, reverse=True)[:15]:
        print(f"  {own / 1000:7.1f} {cumulative / 1000:8.1f}  {module}")


async def _scenario(name: str, n: int, root: Path) -> tuple[Call, int]:
    """The call to profile, and how many warm-up calls it needs."""
    from mcp_codetools.pipeline import Pipeline
    from mcp_codetools.session import CodeSession
    from mcp_codetools.settings import Settings
    from mcp_codetools.tools import default_tools

    corpus = setup_corpus.tree_dir()
    roots = (root, corpus) if corpus.exists() else (root,)
    pipeline = Pipeline(default_tools())
    session = CodeSession(Settings(roots=roots))

    async def run(tool: str, args: dict[str, Any]) -> Any:
        output = await pipeline.run(session, tool, args)
        if output.is_error:
            raise RuntimeError(output.text[:300])
        return output

    if name == "read":
        path = fixtures.write_source(root / "small.py", 50, 3)
        return (lambda i: run("Read", {"file_path": str(path), "offset": 1 + i % 2})), 50
    if name == "bash":
        return (lambda i: run("Bash", {"command": "echo hi"})), 10
    if name == "pdf":
        from benchmarks.workloads.rich_files import text_pdf

        book = text_pdf(root / "book.pdf", 200)
        return (lambda i: run("Read", {"file_path": str(book), "pages": "1-5"})), 5
    if name == "edit":
        path = fixtures.edit_target(root / "edit.py", 10 * 1024 * 1024)
        await run("Read", {"file_path": str(path), "limit": 1})
        swaps = [(fixtures.EDIT_MARKER, fixtures.EDIT_REPLACEMENT), (fixtures.EDIT_REPLACEMENT, fixtures.EDIT_MARKER)]
        return (
            lambda i: run(
                "Edit", {"file_path": str(path), "old_string": swaps[i % 2][0], "new_string": swaps[i % 2][1]}
            )
        ), 2
    if name == "tail":
        big = fixtures.big_file(root / "big.log", 200 * 1024 * 1024)
        return (lambda i: run("Read", {"file_path": str(big.path), "offset": big.lines - 99 - i % 2, "limit": 100})), 0
    if name in ("grep-files", "grep-content"):
        mode = "files_with_matches" if name == "grep-files" else "content"
        return (lambda i: run("Grep", {"pattern": grep_workload.PATTERN, "path": str(corpus), "output_mode": mode})), 1
    raise SystemExit(f"unknown scenario {name}")


async def _profile(name: str, n: int, top: int) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-codetools-profile-") as tmp:
        call, warmup = await _scenario(name, n, Path(tmp).resolve())
        for i in range(warmup):
            await call(i)
        times: list[float] = []
        profiler = cProfile.Profile()
        for i in range(n):
            start = time.perf_counter()
            profiler.enable()
            await call(warmup + i)
            profiler.disable()
            times.append(time.perf_counter() - start)
        print(f"{name}: {n} calls under cProfile, first {times[0] * 1000:.2f} ms, median {median(times) * 1000:.2f} ms")
        for key in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(key).print_stats(top)
            print(f"\n--- by {key} ---")
            print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-12000:])


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__.splitlines()[0])
    scenarios = ("imports", "read", "pdf", "bash", "edit", "tail", "grep-files", "grep-content")
    parser.add_argument("scenario", choices=scenarios)
    parser.add_argument("-n", type=int, default=200, help="calls to profile (default 200)")
    parser.add_argument("--top", type=int, default=25, help="rows per listing")
    args = parser.parse_args()
    if args.scenario == "imports":
        _imports()
    else:
        anyio.run(_profile, args.scenario, args.n, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
