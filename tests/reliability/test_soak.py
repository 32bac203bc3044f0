"""
Soak: tens of thousands of mixed calls over one stdio session, in bursts, checked call by call and at the end.

Calls are Read, Grep, Glob, Edit and read-only Bash, sent in bursts of 1 to 60 pipelined requests (so the
dispatcher overlaps reads and orders writes) and answered before the next burst. A model of the files
predicts every Edit: each one must succeed, every Read must show the slot values the model holds at the
moment it was sent, and at the end every file must equal the model byte for byte. The server's RSS must
grow less than 10% after warm-up, its descriptor count must return to where it started, and no child
process (or zombie) may remain. CI runs 750 calls (each run its own seed, so CI runs add up; 1,500 cost 9.7 CPU-s,
most of it the server's), measured from a warm-up of 150; long mode (`--run-slow`) 100,000.
"""

from __future__ import annotations

import json
import os
import random
import re
import tracemalloc
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.reliability import procfs
from tests.reliability.harness import has_tool
from tests.reliability.report import FIGURES, Figures
from tests.reliability.stdio_peer import COUNTABLE, Peer, meta_of, result_text
from tests.reliability.waiting import left_after

pytestmark = pytest.mark.anyio

CALLS = 100_000 if FIGURES.long_mode else 750
FILES = 12
SLOTS = 40
WARM_UP = 0.1 if FIGURES.long_mode else 0.2
"""The share of the calls after which RSS is taken as warm: at least 150, so every tool's path has run."""
EDITS = 250
"""Edits traced in the memory test: a copy of the 20 KB file kept per Edit would be 5 MB, twice the bound
(the session keeps ~0.2 MB; under tracemalloc 1,000 cost 8 CPU-s, 500 cost 4.4)."""
KEPT_BOUND_KIB = EDITS * 20 // 2
"""Half of what a copy of the file per Edit would keep."""


@dataclass
class Model:
    """What each file must contain: slot values, edited one at a time in the order the Edits were sent."""

    root: Path
    versions: list[list[int]] = field(default_factory=lambda: [[0] * SLOTS for _ in range(FILES)])

    def name(self, f: int) -> str:
        return f"soak{f:02d}.txt"

    def line(self, f: int, s: int) -> str:
        return f"slot {s:02d} of file {f:02d}: version {self.versions[f][s]}"

    def content(self, f: int) -> str:
        return "".join(self.line(f, s) + "\n" for s in range(SLOTS))

    def write_all(self) -> None:
        for f in range(FILES):
            (self.root / self.name(f)).write_text(self.content(f), encoding="utf-8")


@dataclass
class Expectation:
    kind: str
    detail: Any = None


def next_burst(
    model: Model, rng: random.Random, peer: Peer, bash: bool, most: int
) -> list[tuple[dict[str, Any], Expectation]]:
    burst = []
    for _ in range(min(most, rng.randint(1, 60))):
        f = rng.randrange(FILES)
        roll = rng.random()
        if roll < 0.35:
            s = rng.randrange(SLOTS)
            old = model.line(f, s)
            model.versions[f][s] += 1
            args = {"file_path": model.name(f), "old_string": old, "new_string": model.line(f, s)}
            burst.append((peer.call("Edit", args), Expectation("edit", len(model.content(f)))))
        elif roll < 0.70:
            offset = rng.randint(1, SLOTS)
            limit = rng.randint(1, SLOTS)
            wanted = {s: model.line(f, s) for s in range(offset - 1, min(SLOTS, offset - 1 + limit))}
            args = {"file_path": model.name(f), "offset": offset, "limit": limit}
            burst.append((peer.call("Read", args), Expectation("read", wanted)))
        elif roll < 0.80:
            pattern = f"slot {rng.randrange(SLOTS):02d} of file {f:02d}: version"
            burst.append((peer.call("Grep", {"pattern": pattern, "output_mode": "content"}), Expectation("grep", f)))
        elif roll < 0.85:
            burst.append((peer.call("Glob", {"pattern": "soak*.txt"}), Expectation("glob")))
        elif bash:
            command = rng.choice(
                [f"wc -l {model.name(f)}", f"grep -c slot {model.name(f)}", "ls | head -3", "echo $((6*7))", "pwd"]
            )
            burst.append((peer.call("Bash", {"command": command}), Expectation("bash")))
        else:
            burst.append((peer.call("Read", {"file_path": model.name(f), "limit": 1}), Expectation("any")))
    return burst


LINE = re.compile(r"^\s*(\d+)\t(.*)$")


def check(answer: dict[str, Any], expected: Expectation, sent: dict[str, Any]) -> None:
    assert "result" in answer, f"{sent}: {answer}"
    text = result_text(answer)
    failed = answer["result"].get("isError", False)
    shown = json.dumps(sent["params"])[:200]
    if expected.kind == "edit":
        assert not failed, f"Edit {shown} failed: {text[:300]}"
    elif expected.kind == "read":
        assert not failed, f"Read {shown} failed: {text[:300]}"
        if meta_of(answer).get("unchanged"):
            return
        lines = {int(m.group(1)) - 1: m.group(2) for m in map(LINE.match, text.splitlines()) if m}
        for slot, line in expected.detail.items():
            assert lines.get(slot) == line, f"Read {shown} showed {lines.get(slot)!r} where {line!r} was due"
    elif expected.kind in ("grep", "glob", "bash"):
        assert not failed, f"{expected.kind} {shown} failed: {text[:300]}"


@pytest.fixture
async def soak_peer(root: Path) -> AsyncIterator[tuple[Peer, Model]]:
    model = Model(root)
    model.write_all()
    # The session is what is soaked, not the sandbox (tests/reliability/test_sandbox.py and
    # tests/tools/test_bash_sandbox*.py): in the sandbox on by default its ~750 Bash calls cost 10 times the
    # CPU each (a bwrap and a supervisor a call), about half of the whole soak's.
    peer = await Peer.start(root, env={**COUNTABLE, "MCP_CODETOOLS_SANDBOX": "0"})
    try:
        yield peer, model
    finally:
        await peer.kill()


async def test_soak(soak_peer: tuple[Peer, Model], root: Path, figures: Figures, suite: str) -> None:
    peer, model = soak_peer
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    bash = has_tool("Bash")
    for f in range(FILES):  # Edit needs a Read first
        await peer.ask(peer.call("Read", {"file_path": model.name(f)}))
    await peer.ping()
    fds_start = peer.fds()
    sent = 0
    warm: int | None = None
    peak_rss = 0
    edits = 0
    started = anyio.current_time()
    with anyio.fail_after(60 + CALLS * 0.05):
        while sent < CALLS:
            burst = next_burst(model, rng, peer, bash, CALLS - sent)
            answers = await peer.exchange([m for m, _ in burst], timeout=120)
            for message, expected in burst:
                got = answers[message["id"]]
                assert len(got) == 1, f"call {message['id']} answered {len(got)} times (seed {seed})"
                check(got[0], expected, message)
            sent += len(burst)
            edits += sum(1 for _, e in burst if e.kind == "edit")
            rss = peer.memory().rss_kib
            peak_rss = max(peak_rss, rss)
            if warm is None and sent >= CALLS * WARM_UP:
                warm = rss
    elapsed = anyio.current_time() - started
    await peer.ping()
    live = await left_after(peer.live_children, 10)  # leftovers die after their grace
    zombies = procfs.descendants(peer.pid)  # live ones are gone: whatever is left is a zombie
    end = peer.memory()
    fds_end = peer.fds()
    for f in range(FILES):
        on_disk = (root / model.name(f)).read_text(encoding="utf-8")
        assert on_disk == model.content(f), f"{model.name(f)} lost an edit (seed {seed})"
    assert warm is not None
    growth = (end.rss_kib - warm) / warm
    figures.count(suite, calls=sent + FILES + 2, inputs=sent)
    figures.measure("soak: calls (of which Edits)", f"{sent:,} ({edits:,})", note=f"{sent / elapsed:,.0f} calls/s")
    figures.measure(
        "soak: server RSS after warm-up / peak / end",
        f"{warm // 1024} / {max(peak_rss, end.rss_kib) // 1024} / {end.rss_kib // 1024}",
        "MiB",
        f"growth after warm-up {growth:+.1%}",
    )
    figures.measure("soak: server fds at start / end", f"{fds_start} / {fds_end}")
    figures.measure("soak: child processes left / zombies", f"{len(live)} / {len(zombies)}")
    assert not live and not zombies, f"left: {len(live)} live, {len(zombies)} zombies"
    assert fds_end == fds_start, f"descriptors: {fds_start} at the start, {fds_end} at the end"
    assert growth < 0.10, f"RSS grew {growth:.1%} after warm-up ({warm} -> {end.rss_kib} KiB)"
    assert await peer.close() == 0


async def test_the_memory_of_a_session_does_not_grow_with_its_edits(
    root: Path, monkeypatch: pytest.MonkeyPatch, figures: Figures, suite: str
) -> None:
    from mcp_codetools.files import writes as fileio
    from mcp_codetools.pipeline import Pipeline
    from mcp_codetools.session import CodeSession
    from mcp_codetools.settings import Settings
    from mcp_codetools.tools import default_tools

    class NoSync:  # fsync is not what is measured here; skipping it makes 3,000 edits take a second
        def __getattr__(self, name: str) -> Any:
            return (lambda fd: None) if name == "fsync" else getattr(os, name)

    monkeypatch.setattr(fileio, "os", NoSync())
    path = root / "grow.txt"
    path.write_text("".join(f"line {i:05d} {'x' * 60}\n" for i in range(300)), encoding="utf-8")  # 20 KB
    session = CodeSession(Settings(roots=(root,)))
    pipeline = Pipeline(default_tools())
    try:
        await pipeline.run(session, "Read", {"file_path": str(path)})

        upper = [False] * 300

        async def edits(count: int) -> None:
            for n in range(count):
                i = n % 300
                old = f"{'LINE' if upper[i] else 'line'} {i:05d} "
                upper[i] = not upper[i]
                new = f"{'LINE' if upper[i] else 'line'} {i:05d} "
                out = await pipeline.run(
                    session, "Edit", {"file_path": str(path), "old_string": old, "new_string": new}
                )
                assert not out.is_error, out.text

        await edits(300)
        tracemalloc.start()  # counts the objects made from here on, whatever the heap held before
        try:
            await edits(EDITS)
            grown = tracemalloc.get_traced_memory()[0] // 1024
        finally:
            tracemalloc.stop()
    finally:
        await session.aclose()
    figures.count(suite, calls=EDITS + 301, inputs=EDITS + 301)
    figures.measure(f"{EDITS:,} Edits of a 20 KB file: memory the session kept", round(grown / 1024, 1), "MiB")
    assert grown < KEPT_BOUND_KIB, f"the session kept {grown // 1024} MiB more after {EDITS:,} edits of one 20 KB file"
