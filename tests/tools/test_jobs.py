"""Background jobs: Bash run_in_background, BashOutput, KillShell, and the session ending."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.shell import background, reaping
from mcp_codetools.tools.base import ToolOutput
from tests.conftest import Caller
from tests.processes import alive, live_in_group
from tests.tools.test_bash import no_stray_children, poll_until, wait_for_file

pytestmark = pytest.mark.anyio

__all__ = ["no_stray_children"]


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaping, "TERM_GRACE_S", 0.3)


async def start(call: Caller, command: str) -> str:
    """Start a job; the call must return while the command runs (many wait for a file the test creates)."""
    with anyio.fail_after(5):
        out = await call("Bash", {"command": command, "run_in_background": True})
    assert not out.is_error, out.text
    return str(out.meta["backgroundTaskId"])


async def output_until(call: Caller, job_id: str, done: str, *, filter: str | None = None) -> str:
    """Call BashOutput until the accumulated text contains `done`; returns everything read."""
    seen = []
    arguments = {"bash_id": job_id} if filter is None else {"bash_id": job_id, "filter": filter}
    with anyio.fail_after(5):
        while True:
            out = await call("BashOutput", arguments)
            assert not out.is_error, out.text
            seen.append(out.text)
            if done in out.text:
                return "\n".join(seen)
            await anyio.sleep(0.01)


async def test_lifecycle_output_since_last_call_then_exit_code(call: Caller, root: Path) -> None:
    job = await start(call, "echo one; while [ ! -e go ]; do sleep 0.01; done; echo two; exit 3")
    assert job == "bash_1"
    first = await output_until(call, job, "one")
    assert f"Shell {job} is running" in first
    (root / "go").touch()
    rest = await output_until(call, job, "exited with code 3")
    assert "two" in rest and "one" not in rest  # only what is new
    out = await call("BashOutput", {"bash_id": job})
    assert out.text == f"Shell {job} exited with code 3.\n\n(no new output)"
    assert out.meta["exitCode"] == 3 and out.meta["running"] is False


async def test_start_message_names_the_id_and_the_log(call: Caller, session: CodeSession) -> None:
    out = await call("Bash", {"command": "true", "run_in_background": True})
    log = session.scratch_dir / "bash_1.log"
    assert out.text.startswith(f"Command running in background with ID: bash_1. Output is being written to: {log}.")
    assert out.meta["logPath"] == str(log)


async def test_finished_job_keeps_its_output_until_read(call: Caller, session: CodeSession) -> None:
    job = await start(call, "seq 1 5")
    registry = session.jobs
    with anyio.fail_after(5):
        await registry.jobs[job].done.wait()
    out = await call("BashOutput", {"bash_id": job})
    assert out.text == f"Shell {job} exited with code 0.\n\n1\n2\n3\n4\n5"


async def test_filter_returns_matching_lines_only(call: Caller, session: CodeSession) -> None:
    job = await start(call, "printf 'a1\\nb1\\na2\\nb2\\n'")
    with anyio.fail_after(5):
        await session.jobs.jobs[job].done.wait()
    out = await call("BashOutput", {"bash_id": job, "filter": "^a"})
    assert out.text.endswith("\n\na1\na2")
    again = await call("BashOutput", {"bash_id": job})
    assert again.text.endswith("(no new output)")  # the other lines were consumed too


async def test_filter_waits_for_a_line_to_be_complete(call: Caller, session: CodeSession, root: Path) -> None:
    job = await start(call, "printf 'abc'; while [ ! -e go ]; do sleep 0.01; done; printf 'def\\n'")
    log = session.scratch_dir / f"{job}.log"
    await poll_until(lambda: log.stat().st_size >= 3)
    out = await call("BashOutput", {"bash_id": job, "filter": "abcdef"})
    assert out.text.endswith("(no new output)")
    (root / "go").touch()
    assert "abcdef" in await output_until(call, job, "exited", filter="abcdef")


async def test_a_character_split_across_reads_is_read_whole(call: Caller, session: CodeSession, root: Path) -> None:
    job = await start(call, "printf '\\303'; while [ ! -e go ]; do sleep 0.01; done; printf '\\251\\n'")
    log = session.scratch_dir / f"{job}.log"
    await poll_until(lambda: log.stat().st_size >= 1)
    out = await call("BashOutput", {"bash_id": job})
    assert out.text.endswith("(no new output)")
    (root / "go").touch()
    assert "é" in await output_until(call, job, "exited")


async def test_invalid_filter_is_an_input_error(call: Caller) -> None:
    job = await start(call, "true")
    out = await call.fails("BashOutput", {"bash_id": job, "filter": "("})
    assert out.text.startswith("Invalid regular expression in `filter`")
    assert out.meta["errorCode"] == "invalid_input"


async def test_unknown_ids_name_the_known_shells(call: Caller) -> None:
    out = await call.fails("BashOutput", {"bash_id": "bash_9"})
    assert out.text == "No shell found with ID: bash_9. No background shells were started in this session."
    await start(call, "sleep 30")
    out = await call.fails("KillShell", {"shell_id": "nope"})
    assert out.text == "No shell found with ID: nope. Known shells: bash_1 (running: sleep 30)."


async def test_kill_shell_stops_the_whole_group(call: Caller, root: Path) -> None:
    job = await start(call, "echo $$ > pgid; sleep 30 & sleep 31 & echo ready; wait")
    pgid = int(await wait_for_file(root / "pgid"))
    await output_until(call, job, "ready")
    out = await call("KillShell", {"shell_id": job})
    assert out.text.startswith(f"Killed shell {job} (echo $$ > pgid;")
    assert live_in_group(pgid) == []
    after = await call("BashOutput", {"bash_id": job})
    assert after.text.startswith(f"Shell {job} was killed.")
    again = await call.fails("KillShell", {"shell_id": job})
    assert again.text.startswith(f"Shell {job} is not running: it was killed.")


async def test_kill_shell_escalates_to_kill(call: Caller, root: Path) -> None:
    job = await start(call, "trap '' TERM; echo $$ > pgid; sleep 30")
    pgid = int(await wait_for_file(root / "pgid"))
    with anyio.fail_after(10):  # the job ignores TERM and would sleep 30 s: only the KILL ends it in time
        await call.ok("KillShell", {"shell_id": job})
    assert live_in_group(pgid) == []


async def test_jobs_run_in_the_session_cwd_and_do_not_move_it(call: Caller, session: CodeSession, root: Path) -> None:
    (root / "sub").mkdir()
    await call.ok("Bash", {"command": "cd sub"})
    job = await start(call, "pwd; cd /")
    text = await output_until(call, job, "exited")
    assert str(root / "sub") in text
    assert session.cwd == root / "sub"


async def test_processes_left_by_a_finished_job_are_stopped(call: Caller, root: Path) -> None:
    job = await start(call, "sleep 300 & echo $! > pid")
    text = await output_until(call, job, "exited")
    assert "were stopped when it finished" in text
    assert not alive(int((root / "pid").read_text()))


async def test_large_job_output_is_bounded_per_read(call: Caller, session: CodeSession) -> None:
    job = await start(call, "seq 1 100000")
    with anyio.fail_after(5):
        await session.jobs.jobs[job].done.wait()
    out = await call("BashOutput", {"bash_id": job})
    assert len(out.text) < 30_500
    assert f"Full log: {session.scratch_dir / (job + '.log')}" in out.text
    assert out.text.rstrip().endswith("100000")


async def test_a_job_past_the_log_cap_is_killed(
    call: Caller, root: Path, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "LOG_CAP_BYTES", 1 << 20)
    monkeypatch.setattr(background, "CAP_CHECK_S", 0.02)
    job = await start(call, "echo $$ > pgid; yes")
    pgid = int(await wait_for_file(root / "pgid"))
    with anyio.fail_after(5):
        await session.jobs.jobs[job].done.wait()
    out = await call("BashOutput", {"bash_id": job})
    assert out.text.startswith(f"Shell {job} was killed: its output passed the 1 MiB log cap")
    assert live_in_group(pgid) == []


async def test_session_end_kills_its_jobs(settings: Settings, pipeline: Pipeline, root: Path) -> None:
    own = CodeSession(settings)
    out: ToolOutput = await pipeline.run(
        own, "Bash", {"command": "echo $$ > pgid; sleep 30 & sleep 30", "run_in_background": True}
    )
    assert not out.is_error
    pgid = int(await wait_for_file(root / "pgid"))
    assert live_in_group(pgid)
    with anyio.fail_after(3):
        await own.aclose()
    assert live_in_group(pgid) == []


def test_job_tools_are_annotated() -> None:
    from mcp_codetools.tools.jobs import BashOutputInput, BashOutputTool, KillShellTool

    assert BashOutputTool.read_only and not BashOutputTool.destructive
    assert BashOutputTool().is_concurrency_safe(BashOutputInput(bash_id="x"))
    assert KillShellTool.destructive and not KillShellTool.read_only
    assert len(BashOutputTool.description) < 300 and len(KillShellTool.description) < 300


async def test_a_filter_that_backtracks_forever_is_stopped_by_its_budget(
    call: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_codetools.tools import jobs

    monkeypatch.setattr(jobs, "FILTER_BUDGET_S", 0.2)
    started = await call("Bash", {"command": "printf 'a%.0s' $(seq 60); echo '!'", "run_in_background": True})
    job_id = started.meta["backgroundTaskId"]
    log = Path(started.meta["logPath"])
    with anyio.fail_after(10):
        while log.stat().st_size < 62:  # noqa: ASYNC110 - bounded wait for the job's output on disk
            await anyio.sleep(0.01)
        out = await call.fails("BashOutput", {"bash_id": job_id, "filter": "(a|aa)+$"})
    assert "backtracks heavily" in out.text
    again = await call.ok("BashOutput", {"bash_id": job_id, "filter": "a+!"})
    assert "a" * 60 + "!" in again, "a timed-out filter must not consume the output"
