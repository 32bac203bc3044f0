"""The benchmark command runs end to end in quick mode (tiny generated corpus, no downloads, no peers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_benchmark_quick_run_prints_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--no-results"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,  # bounds a hang only: 22 s in CI, over 60 s at load 10 on 2 cores
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "| workload | metric | mcp-codetools | baseline |" in out
    assert out.index("Quick mode: ") < out.index("| workload |"), "a NO row in quick mode is no verdict: say so first"
    for title in (
        "1. Cold start",
        "2. Small Read",
        "3. 64 concurrent Reads",
        "4. Tail of",
        "6. Edit",
        "8. Result size",
    ):
        assert title in out, title
