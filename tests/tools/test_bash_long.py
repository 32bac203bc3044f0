"""Long commands: moved to the background at the return-after budget, and BashOutput's bounded wait.

The budget is made small here (the default is 45 s); commands block on files the test creates, so what
is asserted never depends on how fast the machine is.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.shell import reaping
from mcp_codetools.shell.background import Job
from mcp_codetools.tools.bash import BashTool
from mcp_codetools.tools.jobs import BashOutputTool
from tests.conftest import Caller
from tests.processes import live_in_group
from tests.tools.test_bash import no_stray_children, wait_for_file

pytestmark = pytest.mark.anyio

__all__ = ["no_stray_children"]

BUDGET_S = 1.0
"""Long enough for bash to start and print its first line on a loaded machine, short for a test."""


@pytest.fixture
def settings(root: Path) -> Settings:
    return Settings(roots=(root,), bash_return_after_s=BUDGET_S)


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaping, "TERM_GRACE_S", 0.3)


def job_of(session: CodeSession, job_id: object) -> Job:
    job = session.jobs.get(str(job_id))
    assert job is not None
    return job


async def test_a_long_command_returns_its_output_so_far_and_a_job_that_goes_on(
    call: Caller, session: CodeSession, root: Path
) -> None:
    command = "echo started; while [ ! -e go ]; do sleep 0.01; done; echo done"
    with anyio.fail_after(10):  # a 600 s timeout does not lift the budget
        out = await call("Bash", {"command": command, "timeout": 600_000})
    assert not out.is_error, out.text
    job_id = out.meta["backgroundTaskId"]
    assert out.text.startswith("started\n\nCommand was still running after 1s, so it was moved to the background.")
    assert f"Command running in background with ID: {job_id}. Output is being written to: " in out.text
    assert f'BashOutput (bash_id "{job_id}")' in out.text and f'KillShell (shell_id "{job_id}")' in out.text
    assert out.meta["interrupted"] is False and out.meta["logPath"] == str(job_of(session, job_id).log_path)
    (root / "go").touch()
    seen = []
    with anyio.fail_after(10):
        while not seen or "exited" not in seen[-1]:
            seen.append(await call.ok("BashOutput", {"bash_id": job_id, "wait_s": BUDGET_S}))
    later = "".join(seen)
    assert "done" in later and "started" not in later  # the call showed it: not again


async def test_no_byte_is_lost_or_repeated_at_the_handover(call: Caller, session: CodeSession) -> None:
    # Printing steadily across the budget: the call's output (all of it, saved when cut) and the job's
    # log together are every line once, in order.
    command = "for i in $(seq 1 20000); do echo $i; [ $((i % 100)) = 0 ] && sleep 0.01; done; true"
    with anyio.fail_after(10):
        out = await call("Bash", {"command": command})
    job = job_of(session, out.meta["backgroundTaskId"])
    with anyio.fail_after(60):
        await job.done.wait()
    saved = out.meta.get("persistedOutputPath")
    head = Path(str(saved)).read_text() if saved else out.text.split("\n\nCommand was still running")[0] + "\n"
    lines = (head + job.log_path.read_text()).split()
    assert lines == [str(i) for i in range(1, 20001)]
    assert job.returncode == 0


async def test_a_moved_command_is_still_stopped_at_its_timeout(call: Caller, session: CodeSession, root: Path) -> None:
    with anyio.fail_after(10):
        out = await call("Bash", {"command": "echo $$ > pgid; sleep 60 & sleep 60", "timeout": 2500})
    pgid = int(await wait_for_file(root / "pgid"))
    assert "Its timeout of 2.5s still counts from its start" in out.text
    job = job_of(session, out.meta["backgroundTaskId"])
    with anyio.fail_after(15):
        await job.done.wait()
    assert live_in_group(pgid) == []
    status = await call.ok("BashOutput", {"bash_id": job.id})
    assert status.startswith(f"Shell {job.id} was killed: it ran past its timeout of 2500 ms.")


async def test_a_timeout_within_the_budget_still_kills(call: Caller) -> None:
    with anyio.fail_after(10):
        out = await call.fails("Bash", {"command": "echo tick; while :; do sleep 0.01; done", "timeout": 1000})
    assert out.text.startswith("Command timed out after 1s\ntick")
    assert "backgroundTaskId" not in out.meta


async def test_a_moved_command_does_not_move_the_cwd_and_frees_its_slot(
    call: Caller, session: CodeSession, root: Path
) -> None:
    (root / "sub").mkdir()
    with anyio.fail_after(10):
        out = await call("Bash", {"command": "cd sub; touch ../moved; while [ ! -e ../go ]; do sleep 0.01; done"})
        assert "does not change the working directory" in out.text
        # a command that must run alone runs now, while the moved one still runs
        await call.ok("Bash", {"command": "echo x > next.txt"})
    assert (root / "next.txt").exists() and session.cwd == root
    assert job_of(session, out.meta["backgroundTaskId"]).running
    (root / "go").touch()


async def test_output_wait_returns_at_new_output(call: Caller, session: CodeSession, root: Path) -> None:
    started = await call(
        "Bash", {"command": "while [ ! -e go ]; do sleep 0.01; done; echo next; sleep 60", "run_in_background": True}
    )
    job_id = started.meta["backgroundTaskId"]
    results: list[str] = []

    async def wait() -> None:
        results.append(await call.ok("BashOutput", {"bash_id": job_id, "wait_s": 30}))

    with anyio.fail_after(10):  # well inside the 30 s asked for: it returns at the output
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert results == []
            (root / "go").touch()
    assert results[0].startswith(f"Shell {job_id} is running") and "next" in results[0]


async def test_output_wait_returns_at_the_end(call: Caller, root: Path) -> None:
    started = await call(
        "Bash", {"command": "while [ ! -e go ]; do sleep 0.01; done; exit 4", "run_in_background": True}
    )
    job_id = started.meta["backgroundTaskId"]
    results: list[str] = []

    async def wait() -> None:
        results.append(await call.ok("BashOutput", {"bash_id": job_id, "wait_s": 30}))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert results == []
            (root / "go").touch()
    assert results == [f"Shell {job_id} exited with code 4.\n\n(no new output)"]


async def test_output_wait_honours_its_bound_and_the_budget(call: Caller, session: CodeSession) -> None:
    started = await call("Bash", {"command": "sleep 60", "run_in_background": True})
    job_id = started.meta["backgroundTaskId"]
    with anyio.fail_after(10):
        short = await call.ok("BashOutput", {"bash_id": job_id, "wait_s": 0.05})
        # far above the budget: bounded by it (1 s here), so no client gives up on the call
        capped = await call.ok("BashOutput", {"bash_id": job_id, "wait_s": 100_000})
    assert short.endswith("(no new output)") and capped.endswith("(no new output)")
    assert job_of(session, job_id).running


async def test_output_wait_of_zero_answers_at_once(call: Caller) -> None:
    started = await call("Bash", {"command": "sleep 60", "run_in_background": True})
    with anyio.fail_after(5):
        out = await call.ok("BashOutput", {"bash_id": started.meta["backgroundTaskId"]})
    assert out.endswith("(no new output)")


def test_descriptions_quote_the_configured_budget(root: Path) -> None:
    default_bash, _ = BashTool().described(Settings(roots=(root,)))
    assert "a command still running after 45 s moves to the background" in default_bash
    bash, _ = BashTool().described(Settings(roots=(root,), bash_return_after_s=50))
    assert "after 50 s moves to the background" in bash
    _, schema = BashOutputTool().described(Settings(roots=(root,), bash_return_after_s=50))
    assert "(at most 50 s)" in schema["properties"]["wait_s"]["description"]
