"""A running sandboxed command sees the changes made outside it (by the user, an editor, Edit or Write).

Under bubblewrap each root is bound as it is and the supervisor (`shell/supervisor.py`) keeps the missing
protected names, so a foreground command and a background job see a name made, replaced (Edit's atomic
write renames over it) or removed outside at once. Under the overlay this replaced, none of the changes to
names were seen by a foreground command (docs/sandbox-live-view.md).

Each case: the command looks the path up, says so, and waits for the go-ahead in the session's scratch
folder (a plain bind, so the go-ahead itself is seen); the test changes the path on the host in between.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import SandboxSettings, Settings
from mcp_codetools.tools import default_tools
from tests.conftest import Caller
from tests.tools.test_bash_sandbox import working
from tests.tools.test_bash_sandbox_kept import YesCaller, gate_for

pytestmark = pytest.mark.anyio

WAIT_STEPS = 2000
"""The command's bounded wait for the go-ahead, in steps of 10 ms."""
CHANGES = {
    # name: (path, what the command checks once the go-ahead comes, what it prints when it sees the change)
    "made at the top": ("go", "[ -e go ] && echo seen || echo missing", "seen"),
    "made below": ("lib/go", "[ -e lib/go ] && echo seen || echo missing", "seen"),
    "replaced at the top": ("a.py", "cat a.py", "new"),
    "replaced below": ("lib/m.py", "cat lib/m.py", "new"),
    "removed at the top": ("a.py", "[ -e a.py ] && echo still || echo gone", "gone"),
    "written in place": ("lib/m.py", "tail -n 1 lib/m.py", "new"),
}


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request: pytest.FixtureRequest) -> str:
    working(request.param)  # skips, or fails where CI requires the backend
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A git repository with `a.py` and `lib/m.py`; `.envrc`, `.vscode`, ... are missing (the supervisor keeps them)."""
    workspace = (tmp_path / "ws").resolve()
    (workspace / "lib").mkdir(parents=True)
    (workspace / "a.py").write_text("old\n", encoding="utf-8")
    (workspace / "lib" / "m.py").write_text("old\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


@pytest.fixture
def settings(root: Path, backend: str) -> Settings:
    return Settings(roots=(root,), sandbox=SandboxSettings(enabled=True, backend=backend))  # type: ignore[arg-type]


@pytest.fixture
def call(session: CodeSession, root: Path) -> Caller:
    return YesCaller(Pipeline(default_tools(), gate_for(root)), session)


def change(root: Path, name: str) -> None:
    """Make the change on the host, as an editor or Edit would (a replaced file is renamed over)."""
    path = root / CHANGES[name][0]
    if name.startswith("made"):
        path.write_text("new\n", encoding="utf-8")
    elif name == "written in place":
        with path.open("a", encoding="utf-8") as handle:
            handle.write("new\n")
    elif name.startswith("replaced"):
        temp = path.with_name(path.name + ".tmp")
        temp.write_text("new\n", encoding="utf-8")
        os.replace(temp, path)
    else:
        path.unlink()


def script(name: str, scratch: Path) -> str:
    path, check, _ = CHANGES[name]
    return (
        f"[ -e {path} ] && cat {path} >/dev/null; touch {scratch}/looked; "
        f"i=0; while [ ! -e {scratch}/go ] && [ $i -lt {WAIT_STEPS} ]; do sleep 0.01; i=$((i+1)); done; {check}"
    )


async def wait_for(path: Path) -> None:
    with anyio.fail_after(20):
        while not path.exists():  # noqa: ASYNC110 - bounded wait for a file the command makes
            await anyio.sleep(0.01)


async def run_changing(
    call: Caller, session: CodeSession, root: Path, name: str, *, background: bool, then: str = ""
) -> str:
    """The command's last output line, with the change made on the host while it waits; `then` runs after."""
    scratch = session.scratch_dir
    command = script(name, scratch) + (f"; {then}" if then else "")
    arguments = {"command": command, "timeout": 60_000, "run_in_background": background}
    printed: list[str] = []

    async def run() -> None:
        out = await call("Bash", arguments)
        assert not out.is_error or then, out.text
        if not background:
            printed.append(out.text)
            return
        job = session.jobs.get(str(out.meta["backgroundTaskId"]))
        assert job is not None
        with anyio.fail_after(30):
            await job.done.wait()
        printed.append((await call("BashOutput", {"bash_id": job.id})).text)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await wait_for(scratch / "looked")
            change(root, name)
            (scratch / "go").touch()
    if then:
        return printed[0]
    lines = [line for line in printed[0].splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.mark.parametrize("name", CHANGES.keys())
async def test_a_foreground_command_sees_a_change_made_outside_while_it_runs(
    call: Caller, session: CodeSession, root: Path, backend: str, name: str
) -> None:
    assert await run_changing(call, session, root, name, background=False) == CHANGES[name][2]


@pytest.mark.parametrize("name", CHANGES.keys())
async def test_a_background_job_sees_a_change_made_outside_while_it_runs(
    call: Caller, session: CodeSession, root: Path, backend: str, name: str
) -> None:
    """A dev server run as a job must see Edit's changes."""
    assert await run_changing(call, session, root, name, background=True) == CHANGES[name][2]
