"""A foreground command waited for with one wait for its output and exit (issue 38), and the portable path beside it.

Each behaviour runs on both paths: "together" (an epoll set of the pipe and the pidfd, where the platform has
them) and "portable" (a pump task while the call waits for the exit), which the other platforms use.
"""

from __future__ import annotations

import os
import select
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.shell import running
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
        assert together._poller.poll(0) == [(out_r, select.EPOLLIN)]
        together.output_ended()
        assert together._poller.poll(0) == []
    finally:
        if together is not None:
            together.close()
        for fd in (out_r, out_w, pidfd):
            os.close(fd)
