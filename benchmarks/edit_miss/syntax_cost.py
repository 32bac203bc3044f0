"""What the compiling syntax check costs an Edit: `python -m benchmarks.edit_miss.syntax_cost [--rounds N]`.

A 2,000-line Python file made of this package's modules joined whole (so it compiles), edited with
`syntax_check = "report"` and `"off"`, calls alternating in the same run: once inside a method (the quick check
compiles that block) and once at the top level (the whole file is compiled, before and after). The p50
difference is the check's cost through the pipeline, noisy on a busy machine; the check's own p50, timed
in-process on the same edit, is printed beside it. Target: at most 2 ms for the usual edit inside a function.
"""

from __future__ import annotations

import argparse
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


def sites(text: str) -> dict[str, tuple[str, str]]:
    """A `return` line inside a method past the middle, and a top-level import line, each with its change."""
    lines = text.split("\n")
    inside = next(ln for ln in lines[len(lines) // 2 :] if ln.startswith("        return ") and text.count(ln) == 1)
    top = next(ln for ln in lines if ln.startswith("import ") and text.count(ln) == 1)
    return {"inside a method": (inside, inside + "  # changed"), "at the top level": (top, top + "  # changed")}


def check_ms(text: str, old: str, new: str, rounds: int) -> float:
    """The check's own p50 for this edit, in-process."""
    after = text.replace(old, new, 1)
    line = text[: text.index(old)].count("\n")
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        syntax.introduced_error(text, after, line, line)
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took)


async def edit_ms(workdir: Path, text: str, old: str, new: str, rounds: int) -> dict[str, float]:
    """p50 of Edit calls with the check on and off, alternating, toggling the line back and forth."""
    pipeline = Pipeline(default_tools())
    sessions: dict[str, CodeSession] = {}
    took: dict[str, list[float]] = {"report": [], "off": []}
    try:
        for mode in took:
            root = workdir / mode
            root.mkdir(parents=True)
            (root / "big.py").write_text(text, encoding="utf-8")
            sessions[mode] = CodeSession(Settings(roots=(root,), syntax_check=mode))  # type: ignore[arg-type]
            await pipeline.run(sessions[mode], "Read", {"file_path": str(root / "big.py")})
        for i in range(rounds):
            for mode, session in sessions.items():
                a, b = (old, new) if i % 2 == 0 else (new, old)
                args = {"file_path": str(session.settings.roots[0] / "big.py"), "old_string": a, "new_string": b}
                start = time.perf_counter()
                out = await pipeline.run(session, "Edit", args)
                took[mode].append((time.perf_counter() - start) * 1000)
                assert not out.is_error, out.text
    finally:
        for session in sessions.values():
            await session.aclose()
    return {mode: statistics.median(values) for mode, values in took.items()}


async def run(rounds: int) -> None:
    text = module(2000)
    print(f"file: {text.count(chr(10))} lines, compiles: {syntax.introduced_error(None, text) is None}")
    with tempfile.TemporaryDirectory(prefix="syntax-cost-") as scratch:
        for n, (name, (old, new)) in enumerate(sites(text).items()):
            p50 = await edit_ms(Path(scratch) / str(n), text, old, new, rounds)
            own = check_ms(text, old, new, rounds)
            print(
                f"edit {name}: Edit p50 {p50['report']:.2f} ms with the check, {p50['off']:.2f} ms without "
                f"({p50['report'] - p50['off']:+.2f} ms); the check alone p50 {own:.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    anyio.run(run, parser.parse_args().rounds)


if __name__ == "__main__":
    main()
