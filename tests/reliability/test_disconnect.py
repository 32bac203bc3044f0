"""
The client going away mid-call: running Bash commands and background jobs are killed, no zombies remain.

Over real stdio, the server runs a foreground command, background jobs, a job that forks a grandchild
and one that leaves its process group with setsid; then the client disconnects (stdin closed, or both
pipes closed as when the client process dies), stops the server with a signal, or cancels the
foreground call. Every process started
for the session must be gone within the bound, the server must exit cleanly on disconnect, and while
it lives it must leave no zombie children.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.reliability import procfs
from tests.reliability.report import Figures
from tests.reliability.stdio_peer import Peer, meta_of
from tests.reliability.waiting import left_after

pytestmark = pytest.mark.anyio

MARK = f"7771{os.getpid()}"
"""`sleep 7771<pid>.x`: a duration no other process on the machine uses, not even this file run at the same time
by another checkout (the scans below read every process of the machine, and a run that saw another's sleeps
failed on them)."""


def marked_processes(tag: str) -> list[procfs.ProcInfo]:
    """Live processes whose command line carries this test's marker."""
    found = []
    for info in procfs.process_table().values():
        if info.state in "ZX":
            continue
        try:
            with open(f"/proc/{info.pid}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{MARK}.{tag}" in cmdline:
            found.append(info)
    return found


def sleeping(tag: str) -> set[str]:
    """The `sleep MARK.<tag>N` commands running now as processes of their own (not a shell naming one)."""
    names = set()
    for info in marked_processes(tag):
        try:
            with open(f"/proc/{info.pid}/cmdline", "rb") as handle:
                words = handle.read().split(b"\0")
        except OSError:
            continue
        if len(words) >= 2 and words[0].endswith(b"sleep"):
            names.add(words[1].decode(errors="replace"))
    return names


async def assert_gone(tag: str, seconds: float = 10) -> None:
    left = await left_after(lambda: marked_processes(tag), seconds)
    assert not left, f"still running {seconds:g} s later: {[p.pid for p in left]}"


async def start_everything(peer: Peer, tag: str) -> dict[str, object]:
    """A foreground command in flight, and background jobs of every shape. Returns the foreground request."""
    commands = [
        f"sleep {MARK}.{tag}1",
        f"sleep {MARK}.{tag}2 & sleep {MARK}.{tag}3",
        f"bash -c 'sleep {MARK}.{tag}4 & sleep {MARK}.{tag}5'",
        f"setsid sleep {MARK}.{tag}6 & sleep {MARK}.{tag}7",
    ]
    for command in commands:
        answer = await peer.ask(peer.call("Bash", {"command": command, "run_in_background": True}))
        assert meta_of(answer).get("backgroundTaskId"), answer
    foreground = peer.call("Bash", {"command": f"sleep {MARK}.{tag}8 & sleep {MARK}.{tag}9"})
    await peer.send_lines([json.dumps(foreground).encode()])
    # Each of the nine sleeps itself: the shells that name them in their command lines made a count of
    # marked processes reach nine before the foreground command had even started.
    expected = {f"{MARK}.{tag}{n}" for n in range(1, 10)}
    with anyio.fail_after(10):
        while sleeping(tag) != expected:  # noqa: ASYNC110 - bounded poll until all have started
            await anyio.sleep(0.02)
    return foreground


async def end(peer: Peer) -> None:
    """However the test went: stdin closed first, so the server ends its session (and stops what it started);
    only then SIGKILL, the one exit after which nothing it started can be stopped."""
    if peer.raw.proc.returncode is None:
        peer.close_pipes()
        with anyio.move_on_after(10, shield=True):  # a test cut short is being cancelled
            await peer.raw.proc.wait()
    await peer.kill()


async def test_a_disconnect_kills_commands_and_jobs(root: Path, figures: Figures, suite: str) -> None:
    """Both pipes closed, as when the client process dies (stdin alone closed: the cancelled-command test's end)."""
    how, tag = "both pipes closed", "2"
    peer = await Peer.start(root)
    pid = peer.pid
    try:
        await start_everything(peer, tag)
        before = len(marked_processes(tag))
        peer.close_pipes(all_of_them=how == "both pipes closed")
        with anyio.fail_after(20):
            code = await peer.raw.proc.wait()
        await assert_gone(tag)
    finally:
        await end(peer)
    figures.count(suite, calls=5, faults=1)
    figures.measure(f"disconnect ({how}): processes killed", before)
    assert code in (0, -13, 1), f"the server exited with {code} after the disconnect"
    assert not procfs.alive(pid) or procfs.process_table()[pid].state in "ZX"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
async def test_a_signal_to_the_server_kills_commands_and_jobs_first(
    root: Path, figures: Figures, suite: str, signum: signal.Signals
) -> None:
    """A client (or a user) stopping the server with a signal: nothing the session started outlives it."""
    tag = {signal.SIGTERM: "4", signal.SIGINT: "5", signal.SIGHUP: "6"}[signum]
    peer = await Peer.start(root)
    try:
        await start_everything(peer, tag)
        before = len(marked_processes(tag))
        peer.raw.proc.send_signal(signum)
        code = await peer.wait_exit()
        await assert_gone(tag)
    finally:
        await end(peer)
    figures.count(suite, calls=5, faults=1)
    figures.measure(f"{signum.name}: processes killed", before)
    assert code == 128 + signum, f"the server exited with {code} after {signum.name}"
    assert "stopping" in peer.stderr_text(), peer.stderr_text()[-2000:]


async def test_a_cancelled_command_is_killed_and_leaves_no_zombie_then_closing_stdin_kills_the_rest(
    root: Path, figures: Figures, suite: str
) -> None:
    """Cancelled, the foreground command dies and the jobs live on; then a disconnect (stdin closed) with
    another foreground command in flight kills it and every job (one server start for both: ~1.7 CPU-s)."""
    tag = "1"
    peer = await Peer.start(root)
    try:
        foreground = await start_everything(peer, tag)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": foreground["id"]}}
        await peer.send_lines([json.dumps(cancel).encode()])
        left = await left_after(lambda: _foreground_left(tag), 10)
        assert not left, f"the cancelled command still runs: {[p.pid for p in left]}"
        await peer.ping()  # the session goes on; the cancelled call is never answered
        jobs = marked_processes(tag)
        assert len(jobs) >= 5, "cancelling the foreground call must not touch the background jobs"
        zombies = await left_after(lambda: [p for p in procfs.descendants(peer.pid) if p.state == "Z"], 10)
        assert not zombies, f"zombie children of the server: {[p.pid for p in zombies]}"
        again = peer.call("Bash", {"command": f"sleep {MARK}.{tag}8 & sleep {MARK}.{tag}9"})
        await peer.send_lines([json.dumps(again).encode()])
        with anyio.fail_after(10):
            while not {f"{MARK}.{tag}8", f"{MARK}.{tag}9"} <= sleeping(tag):  # noqa: ASYNC110 - bounded poll
                await anyio.sleep(0.02)
        before = len(marked_processes(tag))
        peer.close_pipes()
        with anyio.fail_after(20):
            code = await peer.raw.proc.wait()
        await assert_gone(tag)
    finally:
        await end(peer)
    figures.count(suite, calls=8, faults=2)
    figures.measure("disconnect (stdin closed): processes killed", before)
    assert code in (0, -13, 1), f"the server exited with {code} after the disconnect"


def _foreground_left(tag: str) -> list[procfs.ProcInfo]:
    found = []
    for info in marked_processes(tag):
        try:
            with open(f"/proc/{info.pid}/cmdline", "rb") as handle:
                cmdline = handle.read().decode(errors="replace")
        except OSError:
            continue
        if f"{MARK}.{tag}8" in cmdline or f"{MARK}.{tag}9" in cmdline:
            found.append(info)
    return found


def test_marker_scan_finds_a_process() -> None:
    """The /proc scan the tests rely on sees a marked process (so an empty scan means something)."""
    import subprocess

    child = subprocess.Popen(["sleep", f"{MARK}.0"])
    try:
        assert [p.pid for p in marked_processes("0")] == [child.pid]
    finally:
        child.kill()
        child.wait()
    assert not marked_processes("0")
    assert os.getpid() in procfs.process_table()
