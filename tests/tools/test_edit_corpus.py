"""The edit-miss corpus (benchmarks/edit_miss) via Edit: recoverable cases land, nothing else."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest

from benchmarks.edit_miss import make_more
from benchmarks.edit_miss.make_corpus import RECOVERABLE
from benchmarks.edit_miss.make_more import RECOVERABLE_MORE
from benchmarks.edit_miss.run import load, run_case_in
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings

pytestmark = pytest.mark.anyio


@contextlib.asynccontextmanager
async def corpus_session(root: Path, mode: Literal["apply", "off"]) -> AsyncIterator[CodeSession]:
    """One session for a run of the corpus (each case has a file of its own), without diagnostics after each edit:
    they only add a note to a result that landed (ruff in a subprocess for every Python case), and what lands
    and what is refused is decided before them. A session and diagnostics per case: 15.5 CPU-s; this: ~8."""
    session = CodeSession(Settings(roots=(root,), edit_recovery=mode, lsp_diagnostics_wait_s=0))
    try:
        yield session
    finally:
        await session.aclose()


def every_decoy_and_some_of_each_kind(cases: list[dict[str, Any]], every: int = 4) -> list[dict[str, Any]]:
    """Every case that must not land, and every `every`-th recoverable case of each kind, its first included.

    The decoys are what a wrong landing would show on; 15-20 cases of one recoverable kind differ only in the
    source line they came from. All 860 cases: ~8.8 CPU-s; these 299: ~4.
    """
    seen: Counter[str] = Counter()
    kept = []
    for case in cases:
        seen[case["kind"]] += 1
        if case["expect"] != "applied" or seen[case["kind"]] % every == 1:
            kept.append(case)
    return kept


async def test_the_corpus_lands_every_recoverable_case_and_changes_nothing_else(pipeline: Pipeline, root: Path) -> None:
    cases = load()
    sample = every_decoy_and_some_of_each_kind(cases)
    outcomes: Counter[tuple[str, str]] = Counter()
    async with corpus_session(root, "apply") as session:
        for case in sample:
            outcomes[(case["expect"], await run_case_in(pipeline, session, root, case))] += 1
    assert len(cases) >= 800 and {c["kind"] for c in sample} >= set(RECOVERABLE) | set(RECOVERABLE_MORE)
    assert outcomes[("applied", "wrong")] == outcomes[("unchanged", "wrong")] == 0, outcomes
    recoverable = sum(n for (expect, _), n in outcomes.items() if expect == "applied")
    assert outcomes[("applied", "applied")] >= 0.95 * recoverable, outcomes
    assert outcomes[("unchanged", "silent")] == 0, outcomes


async def test_with_recovery_off_no_damaged_case_lands(pipeline: Pipeline, root: Path) -> None:
    """The corpus is made of real misses: without recovery none of them applies."""
    async with corpus_session(root, "off") as session:
        for case in load()[:60]:
            assert await run_case_in(pipeline, session, root, case) != "applied", case["id"]


def test_a_blank_line_lost_beside_the_added_line_fits_two_edits() -> None:
    """Adding the line before the blank line or after it gives the same strings: such a case must be refused."""
    before, after = "a = 1\nadded_line = 1\n\nb = 2", "a = 1\n\nadded_line = 1\nb = 2"
    assert make_more._blank_missing(before) == make_more._blank_missing(after) == "a = 1\nadded_line = 1\nb = 2"
    assert make_more.two_readings(before) and make_more.two_readings(after)
    assert not make_more.two_readings("a = 1\n\nb = 2\nadded_line = 1\nc = 3")
    assert not make_more.two_readings("a = 1\nb_v2 = 2\n\nc = 3")


async def test_the_cases_with_two_readings_are_refused_with_both_placements(pipeline: Pipeline, root: Path) -> None:
    cases = [case for case in load() if case["kind"].startswith(make_more.TWO_READINGS)]
    assert len(cases) == 8 and all(case["expect"] == "unchanged" for case in cases)
    async with corpus_session(root, "apply") as session:
        for case in cases:
            assert await run_case_in(pipeline, session, root, case) == "answered", case["id"]
