"""A waiting bash's pidfd and epoll set are opened at its start, so the call that takes it opens neither."""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_codetools.session import CodeSession
from mcp_codetools.shell import output_or_exit, warm
from tests.conftest import Caller
from tests.tools.test_bash import no_stray_children
from tests.tools.test_bash_warm import prepared_at_once, waiting

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not hasattr(os, "pidfd_open") or not hasattr(select, "epoll"), reason="pidfd and epoll: Linux"),
]

__all__ = ["no_stray_children", "prepared_at_once"]


class Opens:
    """pidfd_open and epoll calls made outside `warm.start`, from the moment it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.outside: list[str] = []
        self.in_start = 0
        self._inside = threading.local()
        self._wrap(monkeypatch, os, "pidfd_open")
        self._wrap(monkeypatch, select, "epoll")
        real_start = warm.start

        def start(*args: Any, **kwargs: Any) -> warm.WarmShell:
            self._inside.on = True
            try:
                return real_start(*args, **kwargs)
            finally:
                self._inside.on = False

        monkeypatch.setattr(warm, "start", start)

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
        real: Callable[..., Any] = getattr(module, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            if getattr(self._inside, "on", False):
                self.in_start += 1
            else:
                self.outside.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


async def test_the_call_that_takes_a_waiting_bash_opens_no_pidfd_or_epoll_set(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    await call.ok("Bash", {"command": "true"})
    await waiting(session)
    opens = Opens(monkeypatch)
    # Not a lone builtin (which the waiting bash would run in place, going on waiting): the bash is used up.
    assert "hi" in await call.ok("Bash", {"command": "echo hi; cd ."})
    assert opens.outside == [], "the call opened what the waiting bash had opened at its start"
    await waiting(session)
    assert opens.in_start >= 2, "the next bash opened its own at its start"


async def test_a_waiting_bash_stopped_unused_closes_its_pidfd_and_set(tmp_path: Path) -> None:
    if not warm._bash_reads_counted_bytes():
        pytest.skip("this bash has no `read -N` (before 4.1): no bash waits")
    shell = warm.start(tmp_path, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert shell.watcher is not None and shell.together is not None
    pidfd = shell.watcher.pidfd
    assert pidfd is not None
    shell.discard()
    assert shell.watcher.pidfd is None
    with pytest.raises(OSError):
        os.fstat(pidfd)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    now = [100.0]
    monkeypatch.setattr(output_or_exit, "time", SimpleNamespace(monotonic=lambda: now[0]))
    yield now


def test_the_exit_alone_window_counts_from_the_send_not_from_the_start(clock: list[float]) -> None:
    out_r, out_w = os.pipe()
    pidfd = os.pidfd_open(os.getpid())
    together = output_or_exit.OutputOrExit.open(out_r, pidfd)
    assert together is not None
    try:
        clock[0] += 5.0  # the bash waited 5 s for its command
        together.restart()
        assert together._output_from == pytest.approx(clock[0] + output_or_exit.EXIT_FIRST_S)
    finally:
        together.close()
        for fd in (out_r, out_w, pidfd):
            os.close(fd)
