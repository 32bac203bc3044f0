"""Bash never hangs and never leaks a process: timeouts, cancellation, leftovers, floods, interactive programs."""

from __future__ import annotations

import resource
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.commands.analysis import CommandAnalysis
from mcp_codetools.session import CodeSession
from mcp_codetools.shell import capture, reaping, running
from mcp_codetools.tools import bash
from tests.conftest import Caller
from tests.processes import alive, live_in_group
from tests.tools.test_bash import no_stray_children, wait_for_file

pytestmark = pytest.mark.anyio

__all__ = ["no_stray_children"]


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the TERM-to-KILL grace short so tests of stubborn processes stay fast."""
    monkeypatch.setattr(reaping, "TERM_GRACE_S", 0.3)


def _peak_rss_mib() -> float:
    """The process's peak resident size so far (a peak, so memory freed after the call still counts)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# The commands below would run for 30 s or more: a call that returns inside the bound of its
# `fail_after` did not wait for them, and the process state shows they were killed.


async def test_timeout_kills_the_whole_group(call: Caller, root: Path) -> None:
    with anyio.fail_after(10):
        out = await call.fails(
            "Bash", {"command": "echo $$ > pgid; echo tick; sleep 30 & sleep 31 & sleep 32", "timeout": 300}
        )
    assert out.text.startswith("Command timed out after 300ms\ntick\n\nThe command and every process it started")
    assert out.meta["interrupted"] is True
    assert live_in_group(int((root / "pgid").read_text())) == []


@pytest.mark.parametrize(("ms", "shown"), [(300, "300ms"), (1500, "1.5s"), (2000, "2s"), (120_000, "120s")])
def test_timeout_durations_read_naturally(ms: int, shown: str) -> None:
    assert bash._duration(ms) == shown


async def test_processes_that_ignore_term_are_killed_after_the_grace(call: Caller, root: Path) -> None:
    command = "trap '' TERM; echo $$ > pgid; sleep 30 & sleep 30"
    with anyio.fail_after(10):
        out = await call.fails("Bash", {"command": command, "timeout": 300})
    assert out.text.startswith("Command timed out after 300ms")
    assert live_in_group(int((root / "pgid").read_text())) == []


@pytest.mark.needs_process_table
async def test_a_process_that_left_the_group_is_killed_on_timeout(call: Caller, root: Path) -> None:
    await call.fails("Bash", {"command": "setsid sleep 30 & echo $! > stray; sleep 30", "timeout": 300})
    assert not alive(int((root / "stray").read_text()))


async def test_grandchild_holding_the_pipe_does_not_hang_the_call(call: Caller, root: Path) -> None:
    with anyio.fail_after(10):
        out = await call("Bash", {"command": "sleep 300 & echo $! > pid; echo started"})
    assert not out.is_error
    assert out.text.startswith("started\n\nProcesses the command left running in the background were stopped")
    assert not alive(int((root / "pid").read_text()))


async def test_list_with_a_background_part_returns_with_both_outputs(call: Caller) -> None:
    with anyio.fail_after(10):
        out = await call("Bash", {"command": "echo A && sleep 300 & echo B"})
    assert not out.is_error and out.meta["interrupted"] is False
    assert sorted(out.text.split("\n")[:2]) == ["A", "B"]
    assert "were stopped" in out.text


async def test_leftover_with_its_output_redirected_is_still_stopped(call: Caller, root: Path) -> None:
    out = await call("Bash", {"command": "sleep 300 > /dev/null 2>&1 & echo $! > pid"})
    assert "were stopped" in out.text
    assert not alive(int((root / "pid").read_text()))


async def test_no_leftovers_means_no_note(call: Caller) -> None:
    out = await call("Bash", {"command": "sleep 0.01 & wait; echo done"})
    assert out.text == "done"


async def test_cancellation_mid_command_kills_the_group(call: Caller, root: Path) -> None:
    results = []

    async def run() -> None:
        results.append(await call("Bash", {"command": "echo $$ > pgid; sleep 30 & sleep 30"}))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            pgid = int(await wait_for_file(root / "pgid"))
            assert live_in_group(pgid)
            tg.cancel_scope.cancel()
    assert results == []  # a cancelled request is never answered
    assert live_in_group(pgid) == []


async def test_cancellation_frees_the_dispatcher(call: Caller, session: CodeSession, root: Path) -> None:
    async def run() -> None:
        await call("Bash", {"command": "echo $$ > pgid; sleep 30"})

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await wait_for_file(root / "pgid")
        tg.cancel_scope.cancel()
    with anyio.fail_after(2):
        assert await call.ok("Bash", {"command": "echo next"}) == "next"
    assert session.dispatcher.snapshot() == []


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
async def test_a_call_cancelled_while_its_command_is_analysed_starts_nothing(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch, background: bool
) -> None:
    # A long command is analysed in a worker thread, which runs to its end even when the call is cancelled
    # meanwhile; the cancel is only seen at the call's next checkpoint. Were that after the spawn, a cancelled
    # call would start its command (a background job nobody is told of, a foreground one killed mid-way).
    entered, release = threading.Event(), threading.Event()
    real = bash.analyse
    command = "echo started > started # " + "x" * bash.INLINE_MAX_CHARS

    def held(text: str) -> CommandAnalysis:
        if text == command:
            entered.set()
            release.wait(10)
        return real(text)

    spawned: list[str] = []
    real_spawn = running.spawn

    def spawn(text: str, **kwargs: Any) -> subprocess.Popen[bytes]:
        spawned.append(text)
        return real_spawn(text, **kwargs)

    monkeypatch.setattr(bash, "analyse", held)
    monkeypatch.setattr(running, "spawn", spawn)
    answers = []

    async def run() -> None:
        answers.append(await call("Bash", {"command": command, "run_in_background": background}))

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                assert await anyio.to_thread.run_sync(entered.wait, 5)
                tg.cancel_scope.cancel()
                release.set()
    finally:
        release.set()
    assert answers == []  # a cancelled request is never answered
    assert spawned == []
    assert session.job_ids() == []


async def test_output_flood_keeps_memory_bounded(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(capture, "FILE_CAP_BYTES", 8 << 20)
    before = _peak_rss_mib()
    out = await call.fails("Bash", {"command": "echo $$ > pgid; yes", "timeout": 1500})
    grown = _peak_rss_mib() - before
    assert grown < 64, f"the server grew by {grown:.0f} MiB"
    assert out.meta["outputChars"] > 50 * (8 << 20) // 100  # it really flooded
    assert out.text.startswith("Command timed out after 1.5s\ny\ny\n")
    assert len(out.text) < 30_500
    path = Path(str(out.meta["persistedOutputPath"]))
    assert path.stat().st_size == 8 << 20
    assert "(its first 8,388,608 bytes)" in out.text
    assert live_in_group(int((root / "pgid").read_text())) == []


async def test_binary_flood_is_bounded_and_killed(call: Caller, root: Path) -> None:
    command = "echo $$ > pgid; head -c 3000000 /dev/urandom | base64 -w 0; cat /dev/urandom | base64"
    out = await call.fails("Bash", {"command": command, "timeout": 400})
    assert len(out.text) < 30_500
    assert live_in_group(int((root / "pgid").read_text())) == []


@pytest.mark.parametrize(
    "command",
    [
        "read x",
        "cat",
        "python3 -i -q",
        "ssh -o BatchMode=no -o ConnectTimeout=1 nobody@127.0.0.1 true || true",
        "sudo -k 2>/dev/null; sudo true || true",
    ],
)
async def test_interactive_programs_do_not_hang(call: Caller, command: str) -> None:
    with anyio.fail_after(5):
        out = await call("Bash", {"command": command, "timeout": 4000})
    assert "timed out" not in out.text


async def test_git_commit_without_message_does_not_wait_for_an_editor(call: Caller, root: Path) -> None:
    setup = (
        "git init -q . && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init && touch f && git add f"
    )
    await call.ok("Bash", {"command": setup})
    with anyio.fail_after(5):
        out = await call.fails("Bash", {"command": "git -c user.name=t -c user.email=t@t commit", "timeout": 4000})
    assert "empty commit message" in out.text
