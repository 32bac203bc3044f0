"""
The server SIGKILLed in the middle of writes: the file is always the old or the new content, never a mix.

Each trial starts the real server over stdio, has it create a file and then pipelines a stream of Writes
and Edits that flip it between two states (A and B, a few MB each), and kills the process at a random
moment while they run. Afterwards the file must be byte-identical to A or B (or absent, if the kill
came before the first create finished). Temporary files of the atomic write (`.<name>.<hex>.tmp`) may
be left by a kill; they are counted and reported, never mistaken for the file.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import anyio
import pytest

from tests.reliability.report import FIGURES, Figures
from tests.reliability.stdio_peer import Peer
from tests.reliability.workspace import temp_leftovers

pytestmark = pytest.mark.anyio

TRIALS = 100 if FIGURES.long_mode else 3  # a random seed each run, so CI runs add up; a trial is a server start
# and its writes (~2.2 CPU-s); trial 1 counts its delay from the create's answer
PAYLOAD = ("0123456789" * 7 + "\n") * 50_000  # 3.55 MB
STATE_A = "MARK-A\n" + PAYLOAD
STATE_B = "MARK-B\n" + PAYLOAD


def operations(name: str, count: int, rng: random.Random) -> list[tuple[str, dict[str, object]]]:
    """Create the file as A, then flip it between A and B with a random mix of Write and Edit."""
    ops: list[tuple[str, dict[str, object]]] = [("Write", {"file_path": name, "content": STATE_A})]
    state = "A"
    for _ in range(count):
        other = "B" if state == "A" else "A"
        if rng.random() < 0.5:
            ops.append(("Write", {"file_path": name, "content": STATE_B if other == "B" else STATE_A}))
        else:
            ops.append(("Edit", {"file_path": name, "old_string": f"MARK-{state}", "new_string": f"MARK-{other}"}))
        state = other
    return ops


async def one_trial(root: Path, trial: int, rng: random.Random) -> tuple[str, int, int]:
    """Run one trial; returns (the file's state, answers received before the kill, temporary files left)."""
    name = f"trial{trial}.txt"
    ops = operations(name, 30, rng)
    delay = rng.uniform(0.05, 1.2)
    peer = await Peer.start(root)
    lines = [json.dumps(peer.call(tool, args)).encode() for tool, args in ops]
    received = 0
    first_answer = anyio.Event()
    # Every other trial counts its delay from the create's answer: on a loaded machine the first call of a
    # fresh server can take longer than any delay, and then no trial would kill a server while it writes.
    after_create = trial % 2 == 1

    async def count_answers() -> None:
        nonlocal received
        while True:
            await peer.receive()
            received += 1
            first_answer.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(count_answers)
            tg.start_soon(peer.send_lines, lines)  # a pipe's worth at a time: the kill may come while it sends
            if after_create:
                with anyio.fail_after(120):  # bounds a hang only
                    await first_answer.wait()
            await anyio.sleep(delay)
            tg.cancel_scope.cancel()
    finally:
        code = await peer.kill()
    assert code == -9, f"trial {trial}: the server was not killed by SIGKILL (exit {code})"
    path = root / name
    data = path.read_bytes() if path.exists() else None
    left = [t for t in temp_leftovers(root) if t.name.startswith(f".{name}.")]
    if data is None:
        assert received == 0, f"trial {trial}: the create was answered but the file is gone"
        return "absent", received, len(left)
    for state, content in (("A", STATE_A), ("B", STATE_B)):
        if data == content.encode():
            return state, received, len(left)
    raise AssertionError(
        f"trial {trial} (kill after {delay:.3f} s, {received} answers): the file is a mix of old and new: "
        f"{len(data)} bytes starting {data[:20]!r}"
    )


async def test_a_kill_mid_write_leaves_the_old_or_the_new_content(root: Path, figures: Figures, suite: str) -> None:
    seed = random.randrange(2**32)
    outcomes = {"absent": 0, "A": 0, "B": 0}
    totals = {"answered": 0, "leftovers": 0}
    limiter = anyio.CapacityLimiter(2)  # two servers at a time: start-up dominates a trial

    async def run(trial: int) -> None:
        async with limiter:
            state, answered, left = await one_trial(root, trial, random.Random(seed + trial))
        outcomes[state] += 1
        totals["answered"] += answered
        totals["leftovers"] += left

    # Generous: a loaded 2-core machine takes seconds per server start, and the bound only stops a hang.
    with anyio.fail_after(60 + 20 * TRIALS):
        async with anyio.create_task_group() as tg:
            for trial in range(TRIALS):
                tg.start_soon(run, trial)
    figures.count(suite, calls=totals["answered"], faults=TRIALS, inputs=TRIALS)
    figures.measure(
        "SIGKILL mid-write: trials (file was A / B / absent)",
        f"{TRIALS} ({outcomes['A']} / {outcomes['B']} / {outcomes['absent']})",
        note=f"never a mix; seed {seed}",
    )
    figures.measure("SIGKILL mid-write: temporary files left behind", totals["leftovers"], note="`.<name>.<hex>.tmp`")
    assert outcomes["A"] + outcomes["B"] >= TRIALS // 2, "a trial killed after the create's answer lost the file"
