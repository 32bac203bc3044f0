"""Grep over the corpus, paired: `python -m benchmarks.grep_pairs --against REF [--rounds N]`.

Under load the benchmark's Grep row moves ±20% between rounds, more than the changes measured. Here two
worker processes, this tree's package and REF's (exported), each run the workload's search through the real
`Pipeline` (no stdio: what differs is the tool's own work), alternated round by round with the benchmark's
baseline (rg with the server's flags, spawned) and with that rg under the Landlock sandbox the tool puts it in.
Each prints the median wall time and its ratio to rg, the server's CPU per call and rg's, the
server's sleeps per call (voluntary context switches: its wake-ups), and whether both trees gave the
same text in every round.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the workers run as a script with only the package on the path
    from benchmarks.adapters import GrepMode

PATTERN = r"raise \w+Error\("
MODES: dict[str, GrepMode] = {"files_with_matches": "files", "content": "content"}


def _cpu_ms(who: int) -> float:
    usage = resource.getrusage(who)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _sleeps() -> int:
    """How often a thread of this process went to sleep: each a wake-up of the reader or the event loop.

    (Read system calls cannot be told apart from rg's: /proc/self/io adds those of reaped children.)
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw


def worker(corpus: str) -> None:
    """One Grep per mode read on stdin; answers `wall_ms server_cpu_ms rg_cpu_ms sleeps text_digest`.

    (It imports only the package under test.)
    """
    import anyio

    async def serve() -> None:
        from mcp_codetools.pipeline import Pipeline
        from mcp_codetools.session import CodeSession
        from mcp_codetools.settings import Settings
        from mcp_codetools.tools import default_tools

        pipeline = Pipeline(default_tools())
        session = CodeSession(Settings(roots=(Path(corpus),)))
        print("ready", flush=True)
        for line in sys.stdin:
            sleeps = _sleeps()
            own, child, start = _cpu_ms(resource.RUSAGE_SELF), _cpu_ms(resource.RUSAGE_CHILDREN), time.perf_counter()
            args = {"pattern": PATTERN, "path": corpus, "output_mode": line.strip()}
            out = await pipeline.run(session, "Grep", args)
            wall = (time.perf_counter() - start) * 1000
            digest = hashlib.sha1(out.text.encode()).hexdigest()[:12] if not out.is_error else "error"
            own, child = _cpu_ms(resource.RUSAGE_SELF) - own, _cpu_ms(resource.RUSAGE_CHILDREN) - child
            print(f"{wall:.1f} {own:.1f} {child:.1f} {_sleeps() - sleeps} {digest}", flush=True)

    anyio.run(serve)


def _sandboxed_rg(argv: list[str], corpus: Path) -> float:
    """Milliseconds for rg with the server's flags, confined as the tool confines it (sandbox.py)."""
    from mcp_codetools.search import sandbox

    fd = os.open(corpus, os.O_RDONLY | os.O_DIRECTORY)
    null = os.open(os.devnull, os.O_RDONLY)  # opened before the sandbox: inside, /dev/null may not be opened
    try:
        start = time.perf_counter()
        process = sandbox.spawn(
            lambda: subprocess.Popen(argv, cwd=corpus, stdin=null, stdout=subprocess.PIPE, stderr=null),
            fd,
            True,
            corpus,
            argv[0],
        )
        assert process.stdout is not None
        process.stdout.read()
        process.wait()
        process.stdout.close()
        return (time.perf_counter() - start) * 1000
    finally:
        os.close(fd)
        os.close(null)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grep_pairs", description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="main")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return 0
    from benchmarks import setup_corpus
    from benchmarks.workloads import grep as workload
    from mcp_codetools.search.locate import find_rg

    rg = find_rg()
    if rg is None:
        raise SystemExit("rg not found")
    corpus = setup_corpus.setup().resolve()
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="grep-pairs-") as scratch:
        archive = subprocess.run(["git", "archive", args.against, "mcp_codetools"], cwd=repo, capture_output=True)
        subprocess.run(["tar", "-x", "-C", scratch], input=archive.stdout, check=True)
        trees = {"REF": scratch, "ours": str(repo)}
        workers = {
            key: subprocess.Popen(
                [sys.executable, __file__, "--worker", str(corpus)],
                cwd=tree,
                env={**os.environ, "PYTHONPATH": tree},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for key, tree in trees.items()
        }
        try:
            for proc in workers.values():
                assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            for mode, short in MODES.items():
                _pairs(workers, mode, workload.server_equivalent(rg, short, PATTERN, corpus), short, corpus, args)
        finally:
            for proc in workers.values():
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(30)
    return 0


def _pairs(
    workers: dict[str, subprocess.Popen[str]],
    mode: str,
    argv: list[str],
    short: GrepMode,
    corpus: Path,
    args: argparse.Namespace,
) -> None:
    from benchmarks.workloads import grep as workload

    samples: dict[str, list[tuple[float, ...]]] = {"rg": [], "rg sandboxed": [], "REF": [], "ours": []}
    digests: dict[str, set[str]] = {"REF": set(), "ours": set()}
    for round_ in range(args.rounds + 1):  # the first round warms caches and is dropped
        seconds, _ = workload.raw_search(argv, short)
        confined = _sandboxed_rg([argv[0], *argv[1:-1], "."], corpus)
        answers = {}
        for key, proc in workers.items():
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(mode + "\n")
            proc.stdin.flush()
            answers[key] = proc.stdout.readline().split()
        if not round_:
            continue
        samples["rg"].append((seconds * 1000, 0, 0, 0))
        samples["rg sandboxed"].append((confined, 0, 0, 0))
        for key, (*figures, digest) in answers.items():
            samples[key].append(tuple(float(figure) for figure in figures))
            digests[key].add(digest)
    base = statistics.median(s[0] for s in samples["rg"])
    for key, rows in samples.items():
        wall, own, child, sleeps = (statistics.median(row[i] for row in rows) for i in range(4))
        print(
            f"{mode:18s} {key:12s} wall {wall:7.0f} ms ({wall / base:.3f}× rg)  "
            f"server CPU {own:6.1f}  rg CPU {child:6.0f}  sleeps {sleeps:5.0f}"
        )
    paired = [ours[0] / ref[0] for ours, ref in zip(samples["ours"], samples["REF"], strict=True)]
    same = len(digests["REF"]) == 1 and digests["REF"] == digests["ours"]
    print(f"{mode:18s} ours ÷ {args.against} per round: median {statistics.median(paired):.3f}; same text: {same}")


if __name__ == "__main__":
    sys.exit(main())
