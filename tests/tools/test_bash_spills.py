"""The session's spill budget: past it, the oldest saved output goes (never a running job's log), and results say so."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.shell import reaping
from mcp_codetools.shell.spills import SpillBudget
from tests.conftest import Caller
from tests.tools.test_bash import no_stray_children, poll_until

pytestmark = pytest.mark.anyio

__all__ = ["no_stray_children"]

BUDGET = 200_000
PRINT = "seq 1 30000"
"""Prints 168,894 bytes: over the 30,000-character cap, so it is saved; two of them pass the budget."""
WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.01; done"
PRINTED = sum(len(f"{i}\n") for i in range(1, 30_001))


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reaping, "TERM_GRACE_S", 0.3)


@pytest.fixture
def settings(root: Path) -> Settings:
    return Settings(roots=(root,), spill_budget_bytes=BUDGET)


async def saved(call: Caller) -> Path:
    out = await call("Bash", {"command": PRINT})
    assert not out.is_error, out.text
    return Path(str(out.meta["persistedOutputPath"]))


async def test_the_oldest_output_goes_past_the_budget_and_the_result_says_so(call: Caller) -> None:
    first = await saved(call)
    assert first.stat().st_size == PRINTED
    out = await call("Bash", {"command": PRINT})
    second = Path(str(out.meta["persistedOutputPath"]))
    assert second.stat().st_size == PRINTED  # the file this result names is kept
    assert not first.exists()
    assert out.meta["removedOutputPaths"] == [str(first)]
    assert out.text.endswith(
        "[To keep this session's saved output within its 195 KiB budget, "
        f"the oldest saved output was removed: {first} (165 KiB).]"
    )


async def test_within_the_budget_nothing_is_removed(call: Caller, session: CodeSession) -> None:
    session.spills.limit_bytes = 2 * PRINTED
    first = await saved(call)
    out = await call("Bash", {"command": PRINT})
    assert first.exists()
    assert "removedOutputPaths" not in out.meta and "budget" not in out.text


async def test_one_output_is_saved_up_to_the_budget(call: Caller, session: CodeSession) -> None:
    session.spills.limit_bytes = 100_000
    out = await call("Bash", {"command": PRINT})
    assert Path(str(out.meta["persistedOutputPath"])).stat().st_size == 100_000
    assert "(its first 100,000 bytes)" in out.text


async def test_finished_job_logs_go_but_never_a_running_ones(call: Caller, session: CodeSession, root: Path) -> None:
    finished = await call("Bash", {"command": PRINT, "run_in_background": True})
    finished_job = session.jobs.get(str(finished.meta["backgroundTaskId"]))
    assert finished_job is not None
    with anyio.fail_after(5):
        await finished_job.done.wait()
    # It prints only once started, so that its start (which keeps the budget too) removes nothing.
    running = await call("Bash", {"command": f"{WAIT_FOR_GO}; {PRINT}; sleep 600", "run_in_background": True})
    assert "removedOutputPaths" not in running.meta
    running_log = Path(str(running.meta["logPath"]))
    (root / "go").touch()
    await poll_until(lambda: running_log.stat().st_size == PRINTED)

    out = await call("Bash", {"command": PRINT})
    assert out.meta["removedOutputPaths"] == [str(finished_job.log_path)]
    assert running_log.stat().st_size == PRINTED  # in use: kept although the budget is still passed
    gone = await call.ok("BashOutput", {"bash_id": finished_job.id})
    assert gone == (
        f"Shell {finished_job.id} exited with code 0.\n\n[Its log was removed to keep the session's saved output "
        "within its budget; its output can no longer be read.]"
    )
    await call.ok("KillShell", {"shell_id": str(running.meta["backgroundTaskId"])})


async def test_a_job_start_also_keeps_the_budget(call: Caller, session: CodeSession) -> None:
    session.spills.limit_bytes = 2 * PRINTED
    first = await saved(call)
    second = await saved(call)
    session.spills.limit_bytes = BUDGET
    out = await call("Bash", {"command": "true", "run_in_background": True})
    assert not first.exists() and second.exists()
    assert out.meta["removedOutputPaths"] == [str(first)]
    assert "the oldest saved output was removed" in out.text


async def test_a_deleted_job_log_is_said_to_be_gone(call: Caller, session: CodeSession) -> None:
    out = await call("Bash", {"command": "echo hi", "run_in_background": True})
    job = session.jobs.get(str(out.meta["backgroundTaskId"]))
    assert job is not None
    with anyio.fail_after(5):
        await job.done.wait()
    job.log_path.unlink()
    text = await call.ok("BashOutput", {"bash_id": job.id})
    assert text.endswith(f"[Its log {job.log_path} was deleted; its output can no longer be read.]")


def test_files_deleted_by_someone_else_no_longer_count(tmp_path: Path) -> None:
    budget = SpillBudget(10)
    old, new = tmp_path / "old", tmp_path / "new"
    old.write_bytes(b"x" * 8)
    budget.add(old)
    old.unlink()
    new.write_bytes(b"y" * 8)
    budget.add(new)
    assert budget.enforce() == []
    assert new.exists()


async def test_the_output_of_a_cancelled_call_counts_too(call: Caller, session: CodeSession, root: Path) -> None:
    async def run() -> None:
        await call("Bash", {"command": f"{PRINT}; touch printed; sleep 600"})

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await poll_until(lambda: (root / "printed").exists())
            tg.cancel_scope.cancel()
    cancelled = next(session.scratch_dir.glob("bash-*.log"))
    out = await call("Bash", {"command": PRINT})
    assert out.meta["removedOutputPaths"] == [str(cancelled)]
