"""A foreground command waited for with one wait for its output and exit (issue 38), and the portable path beside it.

Each behaviour runs on both paths: "together" (an epoll set of the pipe and the pidfd, where the platform has
them) and "portable" (a pump task while the call waits for the exit), which the other platforms use.
"""

from __future__ import annotations

import os
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcp_codetools.shell import output_or_exit, running
from mcp_codetools.shell.output_or_exit import OutputOrExit
from tests.conftest import Caller
from tests.processes import live_in_group

pytestmark = pytest.mark.anyio

HAS_ONE_WAIT = hasattr(select, "epoll") and hasattr(os, "pidfd_open")


@pytest.fixture(params=["together", "portable"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "together":
        if not HAS_ONE_WAIT:
            pytest.skip("no epoll and pidfd on this platform: the portable path is the only one")
    else:
        monkeypatch.setattr(OutputOrExit, "open", classmethod(lambda cls, out_fd, pidfd: None))
    return str(request.param)


@pytest.fixture
def pumps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the portable path's pump tasks."""
    started: list[int] = []
    real = running._pump

    async def counted(*args: Any) -> None:
        started.append(1)
        await real(*args)

    monkeypatch.setattr(running, "_pump", counted)
    return started


async def test_output_and_status_arrive_whole(call: Caller, path: str, pumps: list[int]) -> None:
    out = await call("Bash", {"command": "echo out; echo err >&2; printf 'no newline'"})
    assert out.text == "out\nerr\nno newline"
    failed = await call("Bash", {"command": "echo before; exit 4"})
    assert failed.is_error and failed.text == "Exit code 4\nbefore"
    assert len(pumps) == (0 if path == "together" else 2), "one wait, no pump task, where the platform allows"


async def test_a_flood_is_read_to_its_end(call: Caller, path: str) -> None:
    out = await call("Bash", {"command": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end"})
    assert out.meta["outputChars"] == 3_000_000 + len("\nend\n")
    assert out.text.endswith("\nend")


async def test_leftovers_keep_their_first_words_and_are_stopped(call: Caller, root: Path, path: str) -> None:
    out = await call("Bash", {"command": "(echo from-the-leftover; exec sleep 30) & echo $$ > bash.pid; echo main"})
    assert "main" in out.text and "from-the-leftover" in out.text
    assert out.meta["exitCode"] == 0 and "were stopped when it finished" in out.text
    assert not live_in_group(int((root / "bash.pid").read_text(encoding="utf-8")))


async def test_a_timeout_stops_the_group_and_keeps_what_it_printed(call: Caller, root: Path, path: str) -> None:
    out = await call("Bash", {"command": "echo $$ > bash.pid; echo early; sleep 30", "timeout": 300})
    assert out.is_error and out.text.startswith("Command timed out after") and "early" in out.text
    assert not live_in_group(int((root / "bash.pid").read_text(encoding="utf-8")))


@pytest.mark.skipif(not HAS_ONE_WAIT, reason="no epoll and pidfd on this platform")
def test_the_set_reports_output_and_exit_apart() -> None:
    out_r, out_w = os.pipe()
    pidfd = os.pidfd_open(os.getpid())  # this process: never exits while the test runs
    together = OutputOrExit.open(out_r, pidfd)
    try:
        assert together is not None
        os.write(out_w, b"x")
        assert together._poller.poll(0) == []  # the exit alone at first (`EXIT_FIRST_S`)
        together._watch_output()
        assert together._poller.poll(0) == [(out_r, select.EPOLLIN)]
        together.output_ended()
        assert together._poller.poll(0) == []
    finally:
        if together is not None:
            together.close()
        for fd in (out_r, out_w, pidfd):
            os.close(fd)


@pytest.mark.skipif(not HAS_ONE_WAIT, reason="no epoll and pidfd on this platform")
def test_the_pipes_end_wakes_nothing_before_the_pipe_is_watched() -> None:
    # The kernel reports the pipe's end just before the pidfd: waking for it made a second wake at every exit.
    out_r, out_w = os.pipe()
    pidfd = os.pidfd_open(os.getpid())
    together = OutputOrExit.open(out_r, pidfd)
    try:
        assert together is not None
        os.close(out_w)
        assert together._poller.poll(0) == []
    finally:
        if together is not None:
            together.close()
        for fd in (out_r, pidfd):
            os.close(fd)


@pytest.fixture
def held_printer(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, int, int]]:
    """`echo hi`, then a wait for a line on a FIFO: (the process, our end of the FIFO, its output pipe, its pidfd)."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    gate_fd = os.open(gate, os.O_RDWR | os.O_NONBLOCK)
    out_r, out_w = os.pipe()
    proc = subprocess.Popen(["sh", "-c", f"echo hi; read line < {gate}"], stdout=out_w, stdin=subprocess.DEVNULL)
    os.close(out_w)
    pidfd = os.pidfd_open(proc.pid)
    try:
        yield proc, gate_fd, out_r, pidfd
    finally:
        proc.kill()
        proc.wait(timeout=10)
        for fd in (gate_fd, out_r, pidfd):
            os.close(fd)


@pytest.mark.skipif(not HAS_ONE_WAIT, reason="no epoll and pidfd on this platform")
async def test_a_short_command_is_woken_for_once_at_its_exit(
    held_printer: tuple[subprocess.Popen[bytes], int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Woken at the output and again at the exit a moment later, `echo hi` cost the loop two wakes.
    monkeypatch.setattr(output_or_exit, "EXIT_FIRST_S", 60.0)
    proc, gate_fd, out_r, pidfd = held_printer
    together = OutputOrExit.open(out_r, pidfd)
    assert together is not None
    woken: list[tuple[bool, bool]] = []
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def wait() -> None:
                    woken.append(await together.wait(30))

                tg.start_soon(wait)
                assert select.select([out_r], [], [], 10)[0] == [out_r], "the command has printed"
                for _ in range(20):  # turns of the loop in which a wake at the output came before
                    await anyio.lowlevel.checkpoint()
                assert woken == [], "not woken by the output alone"
                os.write(gate_fd, b"go\n")
        assert woken == [(True, True)]
        assert os.read(out_r, 100) == b"hi\n"
    finally:
        together.close()


@pytest.mark.skipif(not HAS_ONE_WAIT, reason="no epoll and pidfd on this platform")
async def test_after_exit_first_s_the_output_wakes_the_wait(
    held_printer: tuple[subprocess.Popen[bytes], int, int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command that fills the pipe waits in its write until the pipe is watched: at most EXIT_FIRST_S.
    monkeypatch.setattr(output_or_exit, "EXIT_FIRST_S", 0.0)
    proc, _, out_r, pidfd = held_printer
    together = OutputOrExit.open(out_r, pidfd)
    assert together is not None
    try:
        with anyio.fail_after(10):
            assert await together.wait(30) == (True, False)
        assert os.read(out_r, 100) == b"hi\n" and proc.poll() is None
    finally:
        together.close()
