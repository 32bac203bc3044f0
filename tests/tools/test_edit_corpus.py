"""The edit-miss corpus (benchmarks/edit_miss) via Edit: recoverable cases land, nothing else."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from benchmarks.edit_miss.make_corpus import RECOVERABLE
from benchmarks.edit_miss.make_more import RECOVERABLE_MORE
from benchmarks.edit_miss.run import load, run_case
from mcp_codetools.pipeline import Pipeline

pytestmark = pytest.mark.anyio


async def test_the_corpus_lands_every_recoverable_case_and_changes_nothing_else(pipeline: Pipeline, root: Path) -> None:
    cases = load()
    outcomes = Counter()
    for case in cases:
        outcomes[(case["expect"], await run_case(pipeline, root, case, "apply"))] += 1
    assert len(cases) >= 800 and {c["kind"] for c in cases} >= set(RECOVERABLE) | set(RECOVERABLE_MORE)
    assert outcomes[("applied", "wrong")] == outcomes[("unchanged", "wrong")] == 0, outcomes
    recoverable = sum(n for (expect, _), n in outcomes.items() if expect == "applied")
    assert outcomes[("applied", "applied")] >= 0.95 * recoverable, outcomes
    assert outcomes[("unchanged", "silent")] == 0, outcomes


async def test_with_recovery_off_no_damaged_case_lands(pipeline: Pipeline, root: Path) -> None:
    """The corpus is made of real misses: without recovery none of them applies."""
    for case in load()[:60]:
        assert await run_case(pipeline, root, case, "off") != "applied", case["id"]
