"""What the compiling syntax check costs an Edit: `python -m benchmarks.edit_miss.syntax_cost [--rounds N]`.

A 2,000-line Python file made of this package's modules joined whole (so it compiles), edited with
`syntax_check = "report"` and `"off"`, calls alternating in the same run: once inside a method (the check
compiles that method) and once at the top level (the column-0 statements around the line). Every edit writes
a text not seen before (a counter in a comment), so the block after the edit is always compiled; the block
before it is the one the previous edit left. Ruff and the arity check are off in both sessions
(`lsp.diagnostics_wait_s = 0`), so "off" is a plain Edit and "report" pays for the check and its decode.
The p50 differences, in wall time and in the process's CPU time (less shaken by other programs on a busy
machine), are the check's cost through the pipeline; the check's own p50, timed in-process on the same kind
of edit, is printed beside it. Target: at most 2 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from mcp_codetools.files import syntax
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools

PACKAGE = Path(__file__).resolve().parents[2] / "mcp_codetools"


def module(lines: int) -> str:
    """At least `lines` lines of real Python: whole modules of this package, joined (future imports dropped)."""
    out: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        out += [line for line in path.read_text(encoding="utf-8").split("\n") if "from __future__" not in line]
        if len(out) >= lines:
            break
    return "\n".join(out) + "\n"


def sites(text: str) -> dict[str, str]:
    """A `return` line inside a method past the middle, and a top-level import line."""
    lines = text.split("\n")
    inside = next(ln for ln in lines[len(lines) // 2 :] if ln.startswith("        return ") and text.count(ln) == 1)
    top = next(ln for ln in lines if ln.startswith("import ") and text.count(ln) == 1)
    return {"inside a method": inside, "at the top level": top}


def version(line: str, n: int) -> str:
    """The site's line as the n-th edit leaves it (0: as in the file)."""
    return f"{line}  # changed {n}" if n else line


def check_ms(text: str, line: str, rounds: int) -> float:
    """The check's own p50 for a run of edits of this line, each to a new text, in-process."""
    at = text[: text.index(line)].count("\n")
    took = []
    before = text
    for n in range(1, rounds + 1):
        after = before.replace(version(line, n - 1), version(line, n), 1)
        start = time.perf_counter()
        syntax.introduced_error(before, after, at, at)
        took.append((time.perf_counter() - start) * 1000)
        before = after
    return statistics.median(took)


async def edit_ms(workdir: Path, text: str, line: str, rounds: int) -> dict[str, float]:
    """p50 wall and CPU ms of Edit calls with the check on and off, alternating, each to a new text."""
    pipeline = Pipeline(default_tools())
    sessions: dict[str, CodeSession] = {}
    took: dict[str, list[float]] = {"report": [], "off": [], "report cpu": [], "off cpu": []}
    try:
        for mode in ("report", "off"):
            root = workdir / mode
            root.mkdir(parents=True)
            (root / "big.py").write_text(text, encoding="utf-8")
            # No ruff or arity check (they would dominate, and share answers between the two sessions): "off"
            # is a plain Edit, and "report" pays for the check and the decode it needs.
            settings = Settings(roots=(root,), syntax_check=mode, lsp_diagnostics_wait_s=0)  # type: ignore[arg-type]
            sessions[mode] = CodeSession(settings)
            await pipeline.run(sessions[mode], "Read", {"file_path": str(root / "big.py")})
        for n in range(1, rounds + 1):
            for mode, session in sessions.items():
                args = {
                    "file_path": str(session.settings.roots[0] / "big.py"),
                    "old_string": version(line, n - 1),
                    "new_string": version(line, n),
                }
                cpu, start = time.process_time(), time.perf_counter()
                out = await pipeline.run(session, "Edit", args)
                took[mode].append((time.perf_counter() - start) * 1000)
                took[f"{mode} cpu"].append((time.process_time() - cpu) * 1000)
                assert not out.is_error, out.text
    finally:
        for session in sessions.values():
            await session.aclose()
    return {mode: statistics.median(values) for mode, values in took.items()}


async def run(rounds: int) -> None:
    text = module(2000)
    print(f"file: {text.count(chr(10))} lines, compiles: {syntax.introduced_error(None, text) is None}")
    print(f"load average (1 min) at start {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="syntax-cost-") as scratch:
        for n, (name, line) in enumerate(sites(text).items()):
            p50 = await edit_ms(Path(scratch) / str(n), text, line, rounds)
            own = check_ms(text, line, rounds)
            print(
                f"edit {name}: Edit p50 {p50['report']:.2f} ms with the check, {p50['off']:.2f} ms without "
                f"({p50['report'] - p50['off']:+.2f} ms); CPU p50 {p50['report cpu']:.2f} against "
                f"{p50['off cpu']:.2f} ms ({p50['report cpu'] - p50['off cpu']:+.2f} ms); "
                f"the check alone p50 {own:.2f} ms"
            )
    print(f"load average (1 min) at end {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    anyio.run(run, parser.parse_args().rounds)


if __name__ == "__main__":
    main()
