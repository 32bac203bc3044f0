"""The benchmark command: `python -m benchmarks.run [--quick] [--only NAME,...] [--no-peers]`.

Sets up what is missing (the Grep corpus, the peers), starts every server over real stdio with the official
SDK client, runs the workloads, prints the table, and (full runs) rewrites the generated part of
benchmarks/RESULTS.md. Every server and scratch file it starts is gone when it ends.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import ModuleType

import anyio

from benchmarks import fixtures, machine, peers, procs, report, servers, setup_corpus, workloads
from benchmarks.core import Context

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
WORKLOAD_LIMIT_S = 420


def _parser() -> argparse.ArgumentParser:
    names = ", ".join(module.NAME for module in workloads.ALL)
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and a generated corpus, no peers (smoke)")
    parser.add_argument("--only", default="", help=f"comma-separated workloads to run: {names}")
    parser.add_argument("--no-peers", action="store_true", help="leave out server-filesystem and desktop-commander")
    parser.add_argument("--peers", default="fs,dc", help="which peers: fs (server-filesystem), dc (desktop-commander)")
    parser.add_argument(
        "--against",
        metavar="REF",
        help="also run our server as it was at git REF (e.g. main), in the same run, as the column 'before'",
    )
    parser.add_argument(
        "--generated-corpus",
        action="store_true",
        help="a small generated tree instead of the downloaded corpus (for workloads that do not search it)",
    )
    parser.add_argument("--results", type=Path, help=f"write the results here (default for full runs: {RESULTS})")
    parser.add_argument("--no-results", action="store_true", help="print the table only")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (its path is printed)")
    return parser


QUICK_CAVEAT = (
    "Quick mode: a tiny corpus and a few runs of each workload, to show that each one works. Its figures, "
    "and a NO beside a target, say nothing about speed; a full run (without --quick) judges the targets."
)


def _corpus(quick: bool, root: Path) -> Path:
    if quick:
        return fixtures.tiny_tree(root / "tree")
    return setup_corpus.setup()


async def _run_all(ctx: Context, selected: list[ModuleType]) -> list[str]:
    failures: list[str] = []
    limit = 120 if ctx.quick else WORKLOAD_LIMIT_S
    try:
        await ctx.open_all()
        for module in selected:
            print(f"… {module.TITLE}", file=sys.stderr, flush=True)
            start = time.perf_counter()
            try:
                with anyio.fail_after(limit):
                    await module.run(ctx)
            except Exception as exc:
                traceback.print_exc()
                failures.append(f"{module.TITLE}: {type(exc).__name__}: {exc}")
            print(f"  done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    finally:
        await ctx.aclose()
    return failures + ctx.failures


def _git_state() -> str:
    repo = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mcp_codetools"], cwd=repo, capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    state = head.stdout.strip() or "unknown"
    return state + (" with uncommitted changes in mcp_codetools/" if dirty.stdout.strip() else " (clean)")


def _against(ref: str, folder: Path, roots: list[Path]) -> servers.ServerSpec:
    """Our package as it was at git `ref`, exported into `folder` (no work tree is touched)."""
    repo = Path(__file__).resolve().parent.parent
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, "mcp_codetools"], cwd=repo, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return servers.against(folder, commit, roots)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    selected = workloads.by_name([n for n in args.only.split(",") if n]) if args.only else list(workloads.ALL)
    use_peers = not (args.no_peers or args.quick)
    known = procs.children()
    scratch = Path(tempfile.mkdtemp(prefix="mcp-codetools-bench-")).resolve()
    root = scratch / "root"
    root.mkdir()
    errlog = (scratch / "servers.log").open("w")
    try:
        corpus = _corpus(args.quick or args.generated_corpus, root)
        corpus_files = setup_corpus.count_files(corpus)
        roots = [root] if corpus.is_relative_to(root) else [root, corpus]
        specs = {"ours": servers.ours(roots, cache=scratch / "cache"), "bare": servers.bare(roots)}
        if args.against:
            specs["before"] = _against(args.against, scratch / "against", roots)
        if use_peers and peers.install():
            wanted = set(args.peers.split(","))
            specs.update({spec.key: spec for spec in peers.specs(roots, scratch) if spec.key in wanted})
        from mcp_codetools.search.locate import find_rg

        ctx = Context(args.quick, root, scratch, errlog, specs, corpus, find_rg())
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        failures = anyio.run(_run_all, ctx, selected)
        elapsed = time.perf_counter() - started
        load_after = os.getloadavg()[0]
    finally:
        errlog.close()
        ended = procs.reap_leftovers(known)
        if ended:
            print(f"warning: ended leftover processes: {ended}", file=sys.stderr)
        if args.keep:
            print(f"scratch kept: {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    command = "python -m benchmarks.run " + shlex.join(argv if argv is not None else sys.argv[1:])
    compared = {f"peer {s.label}": s.version for k, s in specs.items() if k in ("before", "fs", "dc")}
    facts = machine.describe(ctx.rg, compared)
    sources = ", ".join(setup_corpus.PYPI_SDISTS + setup_corpus.NPM_TARBALLS)
    generated = args.quick or args.generated_corpus
    facts["corpus"] = f"{corpus_files:,} files in {corpus.name}/" + (" (generated)" if generated else f" ({sources})")
    facts["server code"] = _git_state()
    facts["run time"] = f"{elapsed:.0f} s; 1-minute load average {load_before:.2f} at start, {load_after:.2f} at end"
    print()
    if args.quick:
        print(QUICK_CAVEAT)
    print(report.table(ctx.rows, ctx.peers))
    for note in report.notes_of(ctx.rows) + ctx.notes:
        print(f"- {note}")
    out = args.results or (None if args.quick or args.no_results else RESULTS)
    if out is not None and not args.no_results:
        block = report.generated(facts, command.strip(), ctx.rows, ctx.series, ctx.notes, ctx.peers)
        report.write_results(out, block)
        print(f"\nresults written to {out}")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
