"""Finding a command's processes by the marker in their environment, and the pid window that keeps it cheap."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import pytest

from mcp_codetools.shell import procs

NAME = "MCP_CODETOOLS_TEST_MARK"
VALUE = "f00d" * 8


@pytest.fixture
def carrier() -> Iterator[tuple[int, int]]:
    """A sleeping process that carries the marker: (its pid, the fork count read just before it started; 0 unknown)."""
    forks = procs.fork_count() or 0
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ, NAME: VALUE}, start_new_session=True)
    try:
        settled(proc.pid)
        yield proc.pid, forks
    finally:
        proc.kill()
        proc.wait()


def settled(pid: int) -> None:
    """Wait (bounded) until `pid` has finished its `execve`: Popen returns before the new program's
    environment is set up, and the tests here are about the window, not that moment (see the exec tests)."""
    deadline = time.monotonic() + 10
    while procs.table() != "none" and procs.holding(pid, NAME, VALUE) == "unsure":
        assert time.monotonic() < deadline, "the carrier never finished starting"
        time.sleep(0.001)


def _a_later_pid() -> int:
    """The pid of a process started (and ended) after the carrier: a window from it leaves the carrier out."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.needs_proc  # the pid window is read from /proc
def test_a_carrier_is_found_by_its_whole_entry_only(carrier: tuple[int, int]) -> None:
    pid, _ = carrier
    assert procs.carriers(NAME, VALUE) == [pid]
    assert procs.carries(pid, NAME, VALUE)
    assert procs.carriers(NAME, VALUE[:-1]) == []
    assert procs.carriers(NAME[1:], VALUE) == []
    assert procs.carriers(NAME, VALUE + "0") == []


@pytest.mark.needs_proc  # the pid window is read from /proc
def test_the_window_holds_what_was_forked_since(carrier: tuple[int, int]) -> None:
    pid, forks = carrier
    assert procs.carriers(NAME, VALUE, procs.Since(pid, forks)) == [pid]
    assert procs.carriers(NAME, VALUE, procs.Since(_a_later_pid(), forks)) == []  # started before the window


@pytest.mark.needs_proc  # the pid window is read from /proc
def test_a_window_that_wrapped_past_pid_max(carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    pid, forks = carrier
    real = procs._read_int
    monkeypatch.setattr(procs, "_read_int", lambda name: pid if name.endswith("ns_last_pid") else real(name))
    assert procs._window(procs.Since(pid + 1, forks)) == (pid + 1, pid)
    assert procs.carriers(NAME, VALUE, procs.Since(pid + 1, forks)) == [pid]  # pid <= last: allocated after wrapping


@pytest.mark.needs_proc  # the pid window is read from /proc
def test_more_forks_than_pids_means_a_full_scan(carrier: tuple[int, int]) -> None:
    pid, forks = carrier
    assert procs._window(procs.Since(pid + 1, forks - 10**9)) is None
    assert procs.carriers(NAME, VALUE, procs.Since(pid + 1, forks - 10**9)) == [pid]


@pytest.mark.needs_proc  # the pid window is read from /proc
def test_without_the_last_pid_the_whole_table_is_read(
    carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    pid, forks = carrier
    monkeypatch.setattr(procs, "_read_int", lambda name: None)
    assert procs.carriers(NAME, VALUE, procs.Since(_a_later_pid(), forks)) == [pid]


@pytest.mark.needs_proc  # the pid window is read from /proc
def test_a_wide_window_is_listed_not_probed(carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    pid, forks = carrier
    monkeypatch.setattr(procs, "_PROBE_LIMIT", 0)
    assert procs.carriers(NAME, VALUE, procs.Since(pid, forks)) == [pid]


@pytest.mark.needs_proc  # the fork count is read from /proc
def test_when_nothing_was_forked_since_no_pid_is_read(
    carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    pid, _ = carrier
    counted = procs.fork_count()
    assert counted is not None
    monkeypatch.setattr(procs, "fork_count", lambda: counted)  # the count stands still: nothing was forked
    read: list[object] = []
    real_holding, real_read_int = procs.holding, procs._read_int
    monkeypatch.setattr(procs, "holding", lambda *a: read.append(a) or real_holding(*a))
    monkeypatch.setattr(procs, "_read_int", lambda name: read.append(name) or real_read_int(name))
    assert procs.carriers(NAME, VALUE, procs.Since(pid, counted)) == []
    assert read == [], "neither the last pid nor any process's environment was read"
    assert procs.carriers(NAME, VALUE, procs.Since(pid, counted - 1)) == [pid], "one fork later: the window"


@pytest.fixture
def psutil_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table macOS uses, read here through psutil (which reads /proc on Linux)."""
    if procs._detect() == "none":
        pytest.skip("psutil cannot read the process table here (Linux without /proc)")
    monkeypatch.setattr(procs, "FORCED", "psutil")


def test_psutil_finds_a_carrier_by_its_whole_entry_and_its_group(carrier: tuple[int, int], psutil_table: None) -> None:
    pid, _ = carrier
    assert procs.carriers(NAME, VALUE) == [pid]
    assert procs.carries(pid, NAME, VALUE) and not procs.carries(pid, NAME, VALUE[:-1])
    assert procs.group_members(pid) == [pid]


def test_psutil_reads_only_processes_created_since_the_call(carrier: tuple[int, int], psutil_table: None) -> None:
    pid, _ = carrier
    assert procs.fork_count() is None  # no pid window there: the creation time narrows the scan
    assert procs.carriers(NAME, VALUE, procs.Since(pid, None)) == [pid]
    later = procs.Since(pid, None, started=procs.time.time() + 10 * procs.CREATED_MARGIN_S)
    assert procs.carriers(NAME, VALUE, later) == []


def test_psutil_sees_a_zombie_as_no_carrier_and_no_member(psutil_table: None) -> None:
    proc = subprocess.Popen(["true"], env={**os.environ, NAME: VALUE}, start_new_session=True)
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        assert procs.carriers(NAME, VALUE) == []
        assert procs.group_members(proc.pid) == []
    finally:
        proc.wait()


@pytest.mark.parametrize("forced", ["none", None])
def test_without_a_table_carriers_cannot_be_listed_but_session_members_can(
    carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch, forced: str | None
) -> None:
    """Linux with no /proc: psutil cannot read either, so only `getsid` probes remain (the CI lane runs this)."""
    if forced is not None:
        monkeypatch.setattr(procs, "FORCED", forced)
    elif procs.table() != "none":
        pytest.skip("a process table can be read here; the forced case covers it")
    pid, _ = carrier
    assert procs.carriers(NAME, VALUE) is None and procs.group_members(pid) is None
    assert procs.descendants(os.getpid()) == [] and procs.fork_count() is None
    assert procs.session_members(pid) == [pid]


@pytest.mark.needs_proc
def test_a_process_between_two_programs_is_unsure_never_no(
    carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """During `execve` the environment reads empty, cut short, or fails with ESRCH for a moment."""
    pid, _ = carrier
    real = procs._read_proc
    for seen in (b"", b"PATH=/us", ProcessLookupError()):

        def read(name: str, seen: bytes | Exception = seen) -> bytes:
            if name != f"{pid}/environ":
                return real(name)
            if isinstance(seen, Exception):
                raise seen
            return seen

        monkeypatch.setattr(procs, "_read_proc", read)
        assert procs.holding(pid, NAME, VALUE) == "unsure", seen
        found, unsure = procs.scan(NAME, VALUE) or ([], [])
        assert found == [] and pid in unsure, "asked again, not counted out"  # others may be unsure too (`env -i`)
        assert procs.carriers(NAME, VALUE) == []
    monkeypatch.setattr(procs, "_read_proc", lambda name: b"A=1\0" if name == f"{pid}/environ" else real(name))
    assert procs.holding(pid, NAME, VALUE) == "no", "a whole environment without the marker"


@pytest.mark.needs_proc
def test_a_zombie_whose_environment_cannot_be_read_is_no() -> None:
    proc = subprocess.Popen(["true"], env={**os.environ, NAME: VALUE}, start_new_session=True)
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        with pytest.raises(ProcessLookupError):  # as a process between two programs may read
            procs._read_proc(f"{proc.pid}/environ")
        assert procs.holding(proc.pid, NAME, VALUE) == "no"
    finally:
        proc.wait()


def test_psutil_counts_an_empty_environment_of_a_live_process_as_unsure(
    carrier: tuple[int, int], psutil_table: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psutil

    pid, _ = carrier
    assert procs.holding(pid, NAME, VALUE) == "yes"
    monkeypatch.setattr(psutil.Process, "environ", lambda self: {})
    assert procs.holding(pid, NAME, VALUE) == "unsure"
