"""Grep and Glob with the portable start against the /proc start and bare rg, in one run.

`python -m benchmarks.portable_search [--files N] [--rounds N] [--tree DIR]`

rg starts inside the pinned folder either by Popen changing into `/proc/self/fd/N` (Linux with /proc;
Popen keeps its vfork spawn) or by `fchdir` in the child before exec (macOS, Linux without /proc): with
posix_spawn and an fchdir file action where the C library has one (search/fdspawn.py), else with a
`preexec_fn`, which makes Popen fork. The three are timed here through the tools (the pipeline in this process,
permission step included), calls taking turns with bare rg in the same rounds: rg spawned from this
process with the very argv the tool ran (captured from its call) in the searched folder, in a session
of its own as the server starts it, all of its output read. (The session matters on a loaded Linux with
scheduler autogroups: a new session is a new group with its own share of the CPU, and rg started in
the benchmark's own, mostly idle, session took a third of the wall time here at load 8, for the same
CPU.) A tree of N generated source files is searched unless `--tree` names one. rg runs under
Landlock where the server would run it so (`search/sandbox.py`); the line saying so is printed.
Reported per call: the median wall time and the median CPU time (this process's, all threads, plus its
reaped children's, rg included: `getrusage`), each with the ratios to rg and between the two starts. On
a shared machine the wall time follows the load (rg's threads wait for a core); the CPU time is what the
call costs, and moves far less.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

from benchmarks.fixtures import source_text
from mcp_codetools.files import fdpaths
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.loading import load_gate
from mcp_codetools.search import fdspawn, sandbox
from mcp_codetools.search import process as rg_process
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools

TARGET = 1.10
NEEDLE = "PORTABLE_NEEDLE"
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "Grep files_with_matches": ("Grep", {"pattern": NEEDLE}),
    "Grep content": ("Grep", {"pattern": NEEDLE, "output_mode": "content", "-n": True}),
    "Grep count": ("Grep", {"pattern": NEEDLE, "output_mode": "count"}),
    "Glob **/*.py": ("Glob", {"pattern": "**/*.py"}),
}
STARTS = ("/proc start", "preexec start", "spawn start")
"""/proc/self/fd/N; fchdir in a preexec_fn (Popen forks); fchdir as a posix_spawn file action."""


def build_tree(root: Path, files: int) -> None:
    """N source files in folders of 100; one in 50 holds the needle."""
    text = source_text(40, 11)
    for i in range(files):
        folder = root / f"pkg{i // 100:03d}"
        if i % 100 == 0:
            folder.mkdir()
        extra = f"# {NEEDLE} {i}\n" if i % 50 == 0 else ""
        (folder / f"mod_{i:05d}.py").write_text(text + extra)


@contextmanager
def captured_argv() -> Iterator[list[list[str]]]:
    """The argv of every rg the tools start meanwhile."""
    seen: list[list[str]] = []
    original = rg_process._RgRun.start.__func__  # type: ignore[attr-defined]

    def start(cls: type, argv: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append(list(argv))
        return original(cls, argv, *args, **kwargs)

    rg_process._RgRun.start = classmethod(start)  # type: ignore[method-assign,assignment]
    try:
        yield seen
    finally:
        rg_process._RgRun.start = classmethod(original)  # type: ignore[method-assign,assignment]


def cpu_ms() -> float:
    """CPU used so far by this process (every thread) and its reaped children, in ms."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000


def bare_rg(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Spawn rg as the tool would without the server, read everything, wait: (wall ms, CPU ms)."""
    cpu, start = cpu_ms(), time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # as the server starts it (see the module docstring: autogroups)
    )
    proc.communicate()
    return (time.perf_counter() - start) * 1000, cpu_ms() - cpu


async def timed(
    pipeline: Pipeline, session: CodeSession, tool: str, args: Mapping[str, Any]
) -> tuple[float, float, str]:
    """One call through the pipeline: (wall ms, CPU ms, its text)."""
    cpu, start = cpu_ms(), time.perf_counter()
    output = await pipeline.run(session, tool, args)
    elapsed, used = (time.perf_counter() - start) * 1000, cpu_ms() - cpu
    assert not output.is_error, output.text
    return elapsed, used, output.text


def set_start(name: str) -> Callable[[], None]:
    """Select one of the three starts for the next calls; returns the undo."""
    before = fdpaths.FORCE_PORTABLE, fdspawn.enabled
    fdpaths.FORCE_PORTABLE = name != "/proc start"
    fdspawn.enabled = name == "spawn start"

    def undo() -> None:
        fdpaths.FORCE_PORTABLE, fdspawn.enabled = before

    return undo


Medians = dict[str, tuple[float, float]]
"""Per variant: (median wall ms, median CPU ms)."""


async def measure(root: Path, rounds: int) -> list[tuple[str, Medians]]:
    pipeline = Pipeline(default_tools(), gate=load_gate((root,), environ={}))
    session = CodeSession(Settings(roots=(root,)))
    rows = []
    try:
        for name, (tool, call) in CALLS.items():
            with captured_argv() as seen:
                await timed(pipeline, session, tool, call)  # warm the page cache, and learn the argv
            argv = seen[-1]
            samples: dict[str, list[tuple[float, float]]] = {"bare rg": [], **{start: [] for start in STARTS}}
            texts: dict[str, str] = {}
            for i in range(rounds):
                order = ["bare rg", *STARTS] if i % 2 == 0 else [*reversed(STARTS), "bare rg"]
                for variant in order:
                    if variant == "bare rg":
                        samples[variant].append(bare_rg(argv, root))
                        continue
                    undo = set_start(variant)
                    try:
                        wall, cpu, text = await timed(pipeline, session, tool, call)
                    finally:
                        undo()
                    samples[variant].append((wall, cpu))
                    texts.setdefault(variant, text)
            assert len({texts[start] for start in STARTS}) == 1, f"{name}: the starts answered differently"
            medians = {
                variant: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
                for variant, values in samples.items()
            }
            rows.append((name, medians))
    finally:
        await session.aclose()
    return rows


def report(rows: list[tuple[str, Medians]]) -> bool:
    """Print the table; True when the posix_spawn start is within TARGET of rg on every call (wall or CPU)."""
    print(
        "| call | | bare rg | /proc start | preexec start | spawn start | /proc ÷ rg | preexec ÷ rg "
        "| spawn ÷ rg | spawn ÷ /proc |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    met = True
    for name, med in rows:
        within = False
        for index, kind in enumerate(("wall ms", "CPU ms")):
            rg, proc, preexec, spawn = (med[variant][index] for variant in ("bare rg", *STARTS))
            within = within or spawn / rg <= TARGET
            print(
                f"| {name if index == 0 else ''} | {kind} | {rg:.1f} | {proc:.1f} | {preexec:.1f} | {spawn:.1f} "
                f"| {proc / rg:.2f}× | {preexec / rg:.2f}× | {spawn / rg:.2f}× | {spawn / proc:.2f}× |"
            )
        met = met and within
    print(f"\nspawn start within {TARGET:.2f}× rg on every call (wall or CPU): {'yes' if met else 'NO'}")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.portable_search")
    parser.add_argument("--files", type=int, default=20_000, help="generated source files (default 20000)")
    parser.add_argument("--rounds", type=int, default=15, help="calls per variant and call (default 15)")
    parser.add_argument("--tree", type=Path, help="search this folder instead of a generated tree")
    args = parser.parse_args()
    if not fdpaths.usable():
        print("/proc/self/fd does not name descriptors here: only the fchdir starts exist; nothing to compare")
        return 1
    if not fdspawn.available():
        print("posix_spawn_file_actions_addfchdir_np is missing here (or MCP_CODETOOLS_FDSPAWN=off): no spawn start")
        return 1
    with tempfile.TemporaryDirectory(prefix="mcp-codetools-portable-") as tmp:
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "no-user-config")
        if args.tree is not None:
            root = args.tree.resolve()
        else:
            root = Path(tmp, "ws").resolve()
            root.mkdir()
            build_tree(root, args.files)
        what = f"{root}" if args.tree is not None else f"{args.files} generated files"
        print(f"{what}; rg under Landlock: {'yes' if sandbox.available() else 'no'}; load {os.getloadavg()[0]:.2f}")
        print(f"median ms per call over {args.rounds} rounds, the four taking turns:\n")
        rows = anyio.run(measure, root, args.rounds)
        print(f"load at the end {os.getloadavg()[0]:.2f}")
        met = report(rows)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
