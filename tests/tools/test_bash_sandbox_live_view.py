"""A running sandboxed command sees the changes made outside it (by the user, an editor, Edit or Write).

This is what keeps the bubblewrap sandbox from going on by default (docs/sandbox-live-view.md): a foreground
command sees a root through an overlay (`shell/overlay.py`) whose upper layer is the root itself, and
overlayfs keeps what it looked up. A name the command looked up before it was made outside stays missing
for it, a file replaced outside (Edit's atomic write renames over it) keeps its old content, and one
removed outside is still there; only what is written inside an existing file is seen. The kernel's
documentation calls changes to an overlay's layers made outside it undefined. A background job gets the
frozen top level (plain binds), which is live.

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
from mcp_codetools.shell import overlay
from mcp_codetools.shell.sandbox import find_bwrap
from mcp_codetools.tools import default_tools
from tests.conftest import Caller
from tests.tools.test_bash_sandbox import working
from tests.tools.test_bash_sandbox_kept import YesCaller, gate_for

pytestmark = pytest.mark.anyio

STALE_UNDER_THE_OVERLAY = (
    "bubblewrap shows a root with a missing protected name through an overlay whose upper layer is the root; "
    "overlayfs keeps the dentries it looked up, so a change made outside a running command is not seen "
    "(docs/sandbox-live-view.md)"
)
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
SEEN_UNDER_THE_OVERLAY = {"written in place"}
"""An open file's content is the root's own: only changes to names go stale."""


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request: pytest.FixtureRequest) -> str:
    working(request.param)  # skips, or fails where CI requires the backend
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A git repository with `a.py` and `lib/m.py`; `.envrc`, `.vscode`, ... are missing, so bwrap overlays it."""
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


def overlaid(root: Path) -> bool:
    """Whether bubblewrap shows this root through an overlay here (else its top level is frozen, and live)."""
    bwrap = find_bwrap()
    return bwrap is not None and overlay.overlay_for(bwrap, root, [str(root / ".envrc")], [root]) is not None


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
    call: Caller, session: CodeSession, root: Path, backend: str, name: str, request: pytest.FixtureRequest
) -> None:
    if backend == "bwrap" and name not in SEEN_UNDER_THE_OVERLAY and overlaid(root):
        request.applymarker(pytest.mark.xfail(strict=True, reason=STALE_UNDER_THE_OVERLAY))
    assert await run_changing(call, session, root, name, background=False) == CHANGES[name][2]


@pytest.mark.parametrize("name", CHANGES.keys())
async def test_a_background_job_sees_a_change_made_outside_while_it_runs(
    call: Caller, session: CodeSession, root: Path, backend: str, name: str
) -> None:
    """A job keeps the frozen top level (plain binds) for this reason: a dev server must see Edit's changes."""
    assert await run_changing(call, session, root, name, background=True) == CHANGES[name][2]


async def test_removing_a_folder_whose_file_was_replaced_outside_says_why_it_failed(
    call: Caller, session: CodeSession, root: Path, backend: str
) -> None:
    """Under the overlay `rm -rf` meets the replaced file's old entry (ESTALE): the result says what happened."""
    if backend != "bwrap" or not overlaid(root):
        pytest.skip("only a root seen through the overlay keeps a replaced file's old entry")
    text = await run_changing(call, session, root, "replaced below", background=False, then="rm -rf lib")
    assert "Stale file handle" in text, text
    assert '[Sandbox: "Stale file handle": a file this command had looked up was replaced' in text, text
