"""Finding a command's processes by the marker in their environment, and the pid window that keeps it cheap."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from mcp_codetools.shell import procs

NAME = "MCP_CODETOOLS_TEST_MARK"
VALUE = "f00d" * 8


@pytest.fixture
def carrier() -> Iterator[tuple[int, int]]:
    """A sleeping process that carries the marker: (its pid, the fork count read just before it started)."""
    forks = procs.fork_count()
    assert forks is not None
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ, NAME: VALUE}, start_new_session=True)
    try:
        yield proc.pid, forks
    finally:
        proc.kill()
        proc.wait()


def _a_later_pid() -> int:
    """The pid of a process started (and ended) after the carrier: a window from it leaves the carrier out."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_carrier_is_found_by_its_whole_entry_only(carrier: tuple[int, int]) -> None:
    pid, _ = carrier
    assert procs.carriers(NAME, VALUE) == [pid]
    assert procs.carries(pid, NAME, VALUE)
    assert procs.carriers(NAME, VALUE[:-1]) == []
    assert procs.carriers(NAME[1:], VALUE) == []
    assert procs.carriers(NAME, VALUE + "0") == []


def test_the_window_holds_what_was_forked_since(carrier: tuple[int, int]) -> None:
    pid, forks = carrier
    assert procs.carriers(NAME, VALUE, procs.Since(pid, forks)) == [pid]
    assert procs.carriers(NAME, VALUE, procs.Since(_a_later_pid(), forks)) == []  # started before the window


def test_a_window_that_wrapped_past_pid_max(carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    pid, forks = carrier
    real = procs._read_int
    monkeypatch.setattr(procs, "_read_int", lambda name: pid if name.endswith("ns_last_pid") else real(name))
    assert procs._window(procs.Since(pid + 1, forks)) == (pid + 1, pid)
    assert procs.carriers(NAME, VALUE, procs.Since(pid + 1, forks)) == [pid]  # pid <= last: allocated after wrapping


def test_more_forks_than_pids_means_a_full_scan(carrier: tuple[int, int]) -> None:
    pid, forks = carrier
    assert procs._window(procs.Since(pid + 1, forks - 10**9)) is None
    assert procs.carriers(NAME, VALUE, procs.Since(pid + 1, forks - 10**9)) == [pid]


def test_without_the_last_pid_the_whole_table_is_read(
    carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    pid, forks = carrier
    monkeypatch.setattr(procs, "_read_int", lambda name: None)
    assert procs.carriers(NAME, VALUE, procs.Since(_a_later_pid(), forks)) == [pid]


def test_a_wide_window_is_listed_not_probed(carrier: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    pid, forks = carrier
    monkeypatch.setattr(procs, "_PROBE_LIMIT", 0)
    assert procs.carriers(NAME, VALUE, procs.Since(pid, forks)) == [pid]
