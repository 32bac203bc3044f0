"""A process caught in `execve` while a call's leftovers are looked for is still found by its marker.

The flake this answers: `setsid -f sh -c '...; exec sleep 600'` outlived its call in CI, its environment
read empty because the scan came while `sh` turned into `sleep`.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import anyio
import pytest

from mcp_codetools.shell import procs, reaping
from mcp_codetools.shell.spawning import Marker

pytestmark = [pytest.mark.anyio, pytest.mark.needs_proc]

LOOP = 'exec sh -c "$0" "$0"'
"""A shell that turns into a new shell, for ever: nearly always between two programs or just past one."""


@pytest.fixture
def marker() -> Marker:
    return Marker.new("MCP_CODETOOLS_TEST_EXEC")


@pytest.fixture
def exec_loop(marker: Marker) -> Iterator[int]:
    proc = subprocess.Popen(["sh", "-c", LOOP, LOOP], env={**os.environ, marker.name: marker.value})
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


async def test_a_carrier_that_reads_empty_once_is_found_on_asking_again(
    marker: Marker, exec_loop: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = procs._read_proc
    missed: list[str] = []

    def read(name: str) -> bytes:
        if name == f"{exec_loop}/environ" and not missed:
            missed.append(name)
            return b""  # what a read during `execve` sees
        return real(name)

    monkeypatch.setattr(procs, "_read_proc", read)
    with anyio.fail_after(10):
        found = await reaping._carriers_of(marker, None)
    assert missed, "the first read was the empty one"
    assert [carrier.pid for carrier in found] == [exec_loop]
    for carrier in found:
        carrier.close()


async def test_a_process_execing_in_a_loop_is_found_by_every_scan(marker: Marker, exec_loop: int) -> None:
    """Before the second look, about one scan in twenty missed it here."""
    unsure = 0
    real = procs.holding

    def holding(pid: int, name: str, value: str) -> procs.Holding:
        nonlocal unsure
        answer = real(pid, name, value)
        unsure += pid == exec_loop and answer == "unsure"
        return answer

    scans = 0
    deadline = time.monotonic() + 10
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(procs, "holding", holding)
        while unsure < 5 and time.monotonic() < deadline:
            found = await reaping._carriers_of(marker, None)
            scans += 1
            assert exec_loop in [carrier.pid for carrier in found], f"missed on scan {scans}"
            for carrier in found:
                carrier.close()
    assert unsure, f"no scan of {scans} caught the process between two programs: the test proved nothing"
