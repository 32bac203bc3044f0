"""How the rg runner paces its reads: a wide pipe, and pauses that rg's exit, a poke or its stderr end at once.

The pause is made longer here (60 s) than the tests' bounds (20 s): a search that still ends within its
bound shows that something other than the clock ended each pause.
"""

from __future__ import annotations

import errno
import os
import select
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_codetools.search import process as search
from mcp_codetools.search import rg_pipe
from mcp_codetools.search.process import run_rg
from mcp_codetools.search.sinks import LineCollector
from tests.tools.test_search_runner import fake_rg, live_children, read_fifo

pytestmark = pytest.mark.anyio

if sys.platform != "win32":
    import fcntl

WIDE = sys.platform.startswith("linux") and hasattr(os, "pidfd_open")
needs_wide = pytest.mark.skipif(not WIDE, reason="the wide pipe and the pidfd are Linux's")
LONG_PAUSE_S = 60.0
"""Longer than any bound below; a pause that only the clock ends fails the test (after it, not hanging it)."""


@pytest.fixture
def long_pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Pauses from the first read on, each 60 s unless something ends it; returns the pauses taken."""
    taken: list[float] = []
    monkeypatch.setattr(search, "COALESCE_AFTER_S", -1.0)
    monkeypatch.setattr(rg_pipe, "WIDE_PAUSE_S", LONG_PAUSE_S)
    pause = search._RgRun._pause

    def counted(self: search._RgRun, selector: object) -> None:
        taken.append(self.pacing.pause_s)
        pause(self, selector)  # type: ignore[arg-type]

    monkeypatch.setattr(search._RgRun, "_pause", counted)
    return taken


@needs_wide
def test_the_pipe_is_widened_and_rgs_exit_can_be_waited_for() -> None:
    child = subprocess.Popen(["sh", "-c", "read line"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdin is not None
    pacing = rg_pipe.pacing(child.stdout.fileno(), child.pid)
    try:
        assert pacing.read_bytes == rg_pipe.WIDE_PIPE_BYTES
        assert fcntl.fcntl(child.stdout.fileno(), fcntl.F_GETPIPE_SZ) == rg_pipe.WIDE_PIPE_BYTES
        assert pacing.exit_fd is not None
        child.stdin.close()  # the child's `read` ends, and so does the child
        child.wait(10)
        readable, _, _ = select.select([pacing.exit_fd], [], [], 10)
        assert readable == [pacing.exit_fd]
    finally:
        pacing.close()
        child.stdout.close()


@pytest.mark.skipif(sys.platform == "win32", reason="no pipes of this kind")
def test_without_the_pipe_setting_or_a_pidfd_the_pacing_is_the_plain_one(monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    try:
        plain = rg_pipe.Pacing.plain()
        monkeypatch.delattr(os, "pidfd_open", raising=False)
        assert rg_pipe.pacing(read_end, os.getpid()) == plain
        monkeypatch.undo()

        def refused(*args: object) -> int:
            raise OSError(errno.EPERM, "over the pipe allowance")

        monkeypatch.setattr(rg_pipe.fcntl, "fcntl", refused)
        assert rg_pipe.pacing(read_end, os.getpid()) == plain
        assert plain.exit_fd is None and plain.read_bytes == rg_pipe.DEFAULT_PIPE_BYTES
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_read_under_a_quarter_of_the_read_size_pauses() -> None:
    pacing = rg_pipe.Pacing(1 << 20, 0.02, None)
    assert pacing.pauses_after(4096)
    assert not pacing.pauses_after(1 << 18)


@needs_wide
async def test_rg_writing_more_than_a_default_pipe_holds_ends_the_pause_by_exiting(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_pauses: list[float]
) -> None:
    # 512 KiB after the first line: in a 64 KiB pipe rg would wait on the paused reader, and the reader
    # for rg's exit. Only in the widened pipe does rg finish, and its exit ends the pause. rg goes on only
    # once the reader pauses (the gate), else a slow reader could take it all in one read and never pause.
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    body = f"printf 'first\\n'\nread go < '{gate}'\nhead -c 524288 /dev/zero | tr '\\0' 'x'\nprintf '\\nlast\\n'\n"
    monkeypatch.setattr(search, "find_rg", lambda: str(fake_rg(tmp_path, body)))
    pause = search._RgRun._pause

    def released(self: search._RgRun, selector: object) -> None:
        if not long_pauses:  # the first pause, after "first": rg may go on
            with open(gate, "w") as opened:
                opened.write("go\n")
        pause(self, selector)  # type: ignore[arg-type]

    monkeypatch.setattr(search._RgRun, "_pause", released)
    sink = LineCollector(1 << 21, sep=b"\n")
    with anyio.fail_after(20):
        result = await run_rg([], root, sink)
    records = sink.records()
    assert records[0] == b"first" and records[-1] == b"last" and len(records[1]) == 524288
    assert result.returncode == 0
    assert LONG_PAUSE_S in long_pauses
    assert live_children() == []


@needs_wide
async def test_a_flood_on_stderr_ends_the_pause(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_pauses: list[float]
) -> None:
    # stderr keeps its default pipe: 256 KiB of complaints would block rg for good if the pause ignored it.
    body = "printf 'first\\n'\nhead -c 262144 /dev/zero | tr '\\0' 'e' >&2\nprintf 'last\\n'\n"
    monkeypatch.setattr(search, "find_rg", lambda: str(fake_rg(tmp_path, body)))
    sink = LineCollector(1000, sep=b"\n")
    with anyio.fail_after(20):
        result = await run_rg([], root, sink)
    assert sink.records() == [b"first", b"last"]
    assert result.stderr == "e" * search.STDERR_KEEP_BYTES
    assert LONG_PAUSE_S in long_pauses
    assert live_children() == []


@needs_wide
async def test_a_cancelled_search_is_not_held_by_a_pause(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_pauses: list[float]
) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    body = f"printf 'first\\n'\necho $$ > {fifo}\nexec sleep 600\n"
    monkeypatch.setattr(search, "find_rg", lambda: str(fake_rg(tmp_path, body)))
    with anyio.fail_after(20) as bound:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_rg, [], root, LineCollector(1000, sep=b"\n"))
            pid = int(await read_fifo(fifo))
            tg.cancel_scope.cancel()
    # The run is shielded till rg is reaped, so a pause that outlived the poke would show as the bound passing.
    assert not bound.cancel_called
    assert pid not in live_children()


@pytest.mark.parametrize("wide", [True, False], ids=["wide", "plain"])
async def test_a_search_reads_the_same_lines_whichever_the_pacing(
    root: Path, monkeypatch: pytest.MonkeyPatch, wide: bool
) -> None:
    if wide and not WIDE:
        pytest.skip("the wide pipe and the pidfd are Linux's")
    monkeypatch.setattr(search, "COALESCE_AFTER_S", -1.0)
    if not wide:
        monkeypatch.setattr(rg_pipe, "pacing", lambda fd, pid: rg_pipe.Pacing.plain())
    expected = [b"f%03d.txt:%d:needle %d" % (i, n, n) for i in range(200) for n in range(1, 6)]
    for i in range(200):
        (root / f"f{i:03d}.txt").write_bytes(b"".join(b"needle %d\n" % n for n in range(1, 6)))
    sink = LineCollector(1 << 20, sep=b"\n")
    with anyio.fail_after(30):
        await run_rg(["--no-config", "-j1", "--sort=path", "-n", "-e", "needle", "--", "."], root, sink)
    assert [line.removeprefix(b"./") for line in sink.records()] == expected
