"""The edit-miss corpus through the real Edit tool: `python -m benchmarks.edit_miss.run [--mode apply|suggest|off]`.

Every case is one Read and one Edit, in-process through the pipeline, in a scratch folder. Recoverable cases
count as a first-try success when the file ends exactly as the intended edit leaves it; any other change
of the file is a wrong change. Cases that must change nothing (decoys, real misses) count as answered when
the file is unchanged and the error names line numbers to look at. Prints one row per kind of damage and
the totals, for the chosen mode and for recovery off as the same-run baseline.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from benchmarks.edit_miss.make_corpus import CORPUS, expected_after
from benchmarks.edit_miss.make_more import CORPUS_MORE
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools

_NAMES_LINES = re.compile(r"\blines? \d+")


def load() -> list[dict[str, Any]]:
    """Both corpora (make_corpus.py's and make_more.py's), one dict per case."""
    cases = []
    for corpus in (CORPUS, CORPUS_MORE):
        # split("\n"), not splitlines(): a case may hold U+2028 or U+0085, which JSON leaves unescaped here.
        cases += [json.loads(line) for line in corpus.read_text(encoding="utf-8").split("\n") if line.strip()]
    return cases


async def run_case(pipeline: Pipeline, root: Path, case: dict[str, Any], mode: str) -> str:
    """How the case ended: applied, wrong, missed (recoverable, not applied) or answered / silent (decoys)."""
    session = CodeSession(Settings(roots=(root,), edit_recovery=mode))  # type: ignore[arg-type]
    try:
        return await run_case_in(pipeline, session, root, case)
    finally:
        await session.aclose()


async def run_case_in(pipeline: Pipeline, session: CodeSession, root: Path, case: dict[str, Any]) -> str:
    """As `run_case`, in a session the caller keeps (the tests' one for the whole corpus: each case has a file
    of its own, read before its Edit, so the cases do not meet)."""
    suffix = Path(case["source"]).suffix or ".txt"
    f = root / f"case{case['id']}{suffix}"
    f.write_bytes(case["file"].encode("utf-8"))
    await pipeline.run(session, "Read", {"file_path": str(f)})
    out = await pipeline.run(
        session, "Edit", {"file_path": str(f), "old_string": case["old_string"], "new_string": case["new_string"]}
    )
    after = f.read_bytes().decode("utf-8")
    f.unlink()
    if case["expect"] == "applied":
        if after == expected_after(case):
            return "applied"
        return "wrong" if after != case["file"] else "missed"
    if after != case["file"]:
        return "wrong"
    return "answered" if out.is_error and _NAMES_LINES.search(out.text) else "silent"


BY_TYPE: dict[str, Counter[str]] = {}
"""Outcomes per file type (suffix) of the last run, for the line under the table."""


async def run(mode: str) -> tuple[dict[str, Counter[str]], float]:
    """Outcomes per kind of damage, and the seconds the whole corpus took."""
    pipeline = Pipeline(default_tools())
    outcomes: dict[str, Counter[str]] = {}
    BY_TYPE.clear()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="edit-miss-") as scratch:
        root = Path(scratch).resolve()
        for case in load():
            outcome = await run_case(pipeline, root, case, mode)
            outcomes.setdefault(case["kind"], Counter())[outcome] += 1
            BY_TYPE.setdefault(Path(case["source"]).suffix, Counter())[outcome] += 1
    return outcomes, time.perf_counter() - started


def summary(outcomes: dict[str, Counter[str]]) -> dict[str, int]:
    """Totals over every kind: recoverable cases and how many were applied; decoys; wrong changes."""
    total: Counter[str] = Counter()
    for counts in outcomes.values():
        total.update(counts)
    return {
        "recoverable": total["applied"]
        + total["missed"]
        + sum(c["wrong"] for k, c in outcomes.items() if "decoy" not in k),
        "applied": total["applied"],
        "decoys": total["answered"] + total["silent"] + sum(c["wrong"] for k, c in outcomes.items() if "decoy" in k),
        "answered": total["answered"],
        "wrong": total["wrong"],
    }


def _table(mode: str, outcomes: dict[str, Counter[str]], seconds: float) -> str:
    rows = [f"mode={mode} ({seconds:.2f} s for {sum(sum(c.values()) for c in outcomes.values())} cases)"]
    rows.append(f"  {'kind':<24} {'cases':>5} {'applied':>7} {'missed':>6} {'answered':>8} {'silent':>6} {'wrong':>5}")
    for kind in sorted(outcomes):
        c = outcomes[kind]
        rows.append(
            f"  {kind:<24} {sum(c.values()):>5} {c['applied']:>7} {c['missed']:>6} {c['answered']:>8} "
            f"{c['silent']:>6} {c['wrong']:>5}"
        )
    s = summary(outcomes)
    share = 100 * s["applied"] / s["recoverable"] if s["recoverable"] else 0.0
    rows.append(
        f"  first-try success {s['applied']}/{s['recoverable']} ({share:.1f}%), decoys answered with line numbers "
        f"{s['answered']}/{s['decoys']}, wrong changes {s['wrong']}"
    )
    types = ", ".join(
        f"{suffix} {c['applied']}/{c['applied'] + c['missed']} applied, {c['wrong']} wrong"
        for suffix, c in sorted(BY_TYPE.items())
    )
    rows.append(f"  by file type (recoverable cases): {types}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="apply", choices=["apply", "suggest", "off"])
    args = parser.parse_args()
    for mode in (args.mode, "off") if args.mode != "off" else ("off",):
        outcomes, seconds = anyio.run(run, mode)
        print(_table(mode, outcomes, seconds))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
