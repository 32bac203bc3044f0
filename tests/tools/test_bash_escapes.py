"""Processes that leave the call's process group (`setsid`, double forks, nohup) still end with the call or session.

Each escapee writes its own pid to a file (the command waits for that file), so the test knows exactly which
process to look for; a teardown kills whatever a failing test left, so a failure never leaves a sleep behind.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.shell import reaping, spawning
from tests.conftest import Caller
from tests.processes import alive
from tests.tools.test_bash import no_stray_children, wait_for_file

pytestmark = pytest.mark.anyio

__all__ = ["no_stray_children"]

SLEEPER = "sh -c 'echo $$ > {name}; exec sleep 600' > /dev/null 2>&1"
"""A process that names itself in a file, then sleeps far longer than any test."""
WAIT_FOR = "while [ ! -s {name} ]; do sleep 0.01; done"

LAUNCHES = {
    "setsid &": "setsid {sleeper} &",
    "setsid -f": "setsid -f {sleeper}",
    "double fork": "( ( {sleeper} & ) & )",
    "double fork + setsid": "( ( setsid {sleeper} & ) & )",
    "nohup &": "nohup {sleeper} &",
}


HOWS = [pytest.param(how, marks=pytest.mark.needs_process_table) if "setsid" in how else how for how in LAUNCHES]
"""A launch through `setsid` leaves the command's session: only a process table can find it."""


def launch(how: str, name: str = "pid") -> str:
    return LAUNCHES[how].format(sleeper=SLEEPER.format(name=name)) + "\n" + WAIT_FOR.format(name=name)


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaping, "TERM_GRACE_S", 0.3)


@pytest.fixture
def reap_escapees(root: Path) -> Iterator[None]:
    """Kill every process a test named in a pid file, so a failing test leaves nothing running."""
    yield
    for path in root.glob("pid*"):
        try:
            os.kill(int(path.read_text()), signal.SIGKILL)
        except (ValueError, OSError):
            pass


def pid_in(path: Path) -> int:
    return int(path.read_text())


@pytest.mark.usefixtures("reap_escapees")
@pytest.mark.parametrize("how", HOWS)
async def test_a_foreground_call_leaves_no_process_behind(call: Caller, root: Path, how: str) -> None:
    with anyio.fail_after(10):
        out = await call("Bash", {"command": launch(how), "timeout": 8000})
    assert not out.is_error, out.text
    assert not alive(pid_in(root / "pid"))
    assert "were stopped when it finished" in out.text


@pytest.mark.needs_process_table
@pytest.mark.usefixtures("reap_escapees")
async def test_escapees_of_one_call_leave_a_concurrent_calls_processes_alone(
    call: Caller, session: CodeSession, root: Path
) -> None:
    job = await call("Bash", {"command": launch("setsid -f", "pid_job") + "\nsleep 600", "run_in_background": True})
    await wait_for_file(root / "pid_job")
    with anyio.fail_after(10):
        await call.ok("Bash", {"command": launch("setsid -f"), "timeout": 8000})
    assert not alive(pid_in(root / "pid"))
    assert alive(pid_in(root / "pid_job"))
    await call.ok("KillShell", {"shell_id": job.meta["backgroundTaskId"]})


@pytest.mark.usefixtures("reap_escapees")
@pytest.mark.parametrize("how", HOWS)
async def test_kill_shell_stops_what_a_job_started_outside_its_group(call: Caller, root: Path, how: str) -> None:
    out = await call("Bash", {"command": launch(how) + "\nsleep 600", "run_in_background": True})
    pid = int(await wait_for_file(root / "pid"))
    assert alive(pid)
    with anyio.fail_after(10):
        await call.ok("KillShell", {"shell_id": out.meta["backgroundTaskId"]})
    assert not alive(pid)


@pytest.mark.needs_process_table
@pytest.mark.usefixtures("reap_escapees")
async def test_a_finished_job_leaves_no_escapee(call: Caller, session: CodeSession, root: Path) -> None:
    out = await call("Bash", {"command": launch("setsid -f"), "run_in_background": True})
    job = session.jobs.get(str(out.meta["backgroundTaskId"]))
    assert job is not None
    with anyio.fail_after(10):
        await job.done.wait()
    assert not alive(pid_in(root / "pid"))
    assert job.leftovers_stopped


@pytest.mark.usefixtures("reap_escapees")
@pytest.mark.parametrize("how", HOWS)
async def test_session_end_stops_what_its_jobs_started_outside_their_group(
    settings: Settings, pipeline: Pipeline, root: Path, how: str
) -> None:
    own = CodeSession(settings)
    try:
        out = await pipeline.run(own, "Bash", {"command": launch(how) + "\nsleep 600", "run_in_background": True})
        assert not out.is_error, out.text
        pid = int(await wait_for_file(root / "pid"))
        assert alive(pid)
    finally:
        with anyio.fail_after(10):
            await own.aclose()
    assert not alive(pid)


@pytest.mark.needs_process_table
@pytest.mark.usefixtures("reap_escapees")
async def test_session_end_stops_a_process_that_dropped_its_call_marker(
    settings: Settings, pipeline: Pipeline, root: Path
) -> None:
    """The session's own marker is the last net: a process that changed the per-call one still ends with it."""
    own = CodeSession(settings)
    try:
        command = f"{spawning.CALL_VAR}=other {launch('setsid -f')}"
        out = await pipeline.run(own, "Bash", {"command": command, "timeout": 8000})
        assert not out.is_error, out.text
        pid = pid_in(root / "pid")
        assert alive(pid)  # not this call's any more
    finally:
        with anyio.fail_after(10):
            await own.aclose()
    assert not alive(pid)


async def test_commands_see_both_markers(call: Caller, session: CodeSession) -> None:
    text = await call.ok("Bash", {"command": f"echo ${spawning.SESSION_VAR} ${spawning.CALL_VAR}"})
    session_marker, call_marker = text.split()
    assert session_marker == session.process_marker.value
    assert len(call_marker) >= 32
    again = await call.ok("Bash", {"command": f"echo ${spawning.CALL_VAR}"})
    assert again != call_marker  # one per call
