"""What the Python checks (ruff's rules, call arity) cost an Edit: `python -m benchmarks.edit_miss.diagnostics_cost`.

The same 2,000-line file as `syntax_cost` (this package's modules joined), edited with `lsp.diagnostics_wait_s`
at its default (the checks run) and at 0 (they do not), calls alternating in the same run, no language server.
Each edit writes a new text (a counter in the changed comment), so ruff always runs on the text after.
The p50 difference is what an Edit pays; one ruff run and one arity check, timed alone on the same text, are
printed beside it. An Edit runs ruff on the new text (the old one's answer is kept from the edit before) and the
arity check in a thread.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from benchmarks.edit_miss.syntax_cost import module, sites
from mcp_codetools.files.arity import arity_problems
from mcp_codetools.files.python_checks import changed_lines
from mcp_codetools.files.ruff_check import ruff_check
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools

MODES = {"checks": 1.5, "off": 0.0}


async def edit_ms(workdir: Path, text: str, old: str, new: str, rounds: int) -> tuple[dict[str, float], int]:
    """p50 of Edit calls with the checks on and off, alternating; and how many results reported a problem."""
    pipeline = Pipeline(default_tools())
    sessions: dict[str, CodeSession] = {}
    took: dict[str, list[float]] = {mode: [] for mode in MODES}
    reported = 0
    try:
        for mode, wait_s in MODES.items():
            root = workdir / mode
            root.mkdir(parents=True)
            (root / "big.py").write_text(text, encoding="utf-8")
            sessions[mode] = CodeSession(Settings(roots=(root,), lsp_diagnostics_wait_s=wait_s))
            await pipeline.run(sessions[mode], "Read", {"file_path": str(root / "big.py")})
        current = dict.fromkeys(MODES, old)
        for i in range(rounds):
            for mode, session in sessions.items():
                # Every edit makes a text not seen before (as editing does): ruff runs on it; the text before
                # is the one the last edit made.
                a, b = current[mode], f"{new} {i}"
                current[mode] = b
                args = {"file_path": str(session.settings.roots[0] / "big.py"), "old_string": a, "new_string": b}
                start = time.perf_counter()
                out = await pipeline.run(session, "Edit", args)
                took[mode].append((time.perf_counter() - start) * 1000)
                assert not out.is_error, out.text
                checks = out.meta.get("pythonChecks")
                assert mode == "off" or (checks is not None and checks["ruff"] == "ok"), out.text
                reported += bool(checks and checks["new"])
    finally:
        for session in sessions.values():
            await session.aclose()
    return {mode: statistics.median(values) for mode, values in took.items()}, reported


async def alone_ms(text: str, old: str, new: str, rounds: int) -> tuple[float, float]:
    """p50 of one ruff run on the edited text, and of the arity check of the change."""
    after = text.replace(old, new, 1)
    ruff, arity = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        answer = await ruff_check(after, "big.py")
        ruff.append((time.perf_counter() - start) * 1000)
        assert answer.status == "ok", answer.detail
        start = time.perf_counter()
        arity_problems(after, changed_lines(text, after))
        arity.append((time.perf_counter() - start) * 1000)
    return statistics.median(ruff), statistics.median(arity)


def all_sites(text: str) -> dict[str, tuple[str, str]]:
    """`syntax_cost`'s two sites, and a module-level `def` line: the one kind of change the arity check parses for."""
    header = next(
        ln
        for ln in text.split("\n")[len(text.split("\n")) // 2 :]
        if ln.startswith("def ") and ln.endswith(":") and text.count(ln) == 1
    )
    return {**sites(text), "on a def line (the arity check parses)": (header, header + "  # changed")}


async def run(rounds: int) -> None:
    text = module(2000)
    print(f"file: {text.count(chr(10))} lines")
    with tempfile.TemporaryDirectory(prefix="diagnostics-cost-") as scratch:
        for n, (name, (old, new)) in enumerate(all_sites(text).items()):
            p50, reported = await edit_ms(Path(scratch) / str(n), text, old, new, rounds)
            ruff, arity = await alone_ms(text, old, new, rounds)
            print(
                f"edit {name}: Edit p50 {p50['checks']:.2f} ms with the checks, {p50['off']:.2f} ms without "
                f"({p50['checks'] - p50['off']:+.2f} ms; {reported} results named a problem); alone: one ruff run "
                f"p50 {ruff:.2f} ms, the arity check p50 {arity:.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    anyio.run(run, parser.parse_args().rounds)


if __name__ == "__main__":
    main()
