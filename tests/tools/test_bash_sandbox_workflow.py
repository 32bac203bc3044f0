"""The Bash sandbox lets ordinary work through, keeps protected names from being made, and leaves nothing behind.

Each workflow runs, on every backend that works here, as an agent would run it through the pipeline:
creating, renaming and removing at a root's top level and below, a virtual environment, git, tar, a test
run that writes its cache, make with a build folder. Where a backend cannot let one through yet, the test
says so (`BLOCKED`) and checks that it is refused with the sandbox's note, so a change either way shows.

After every command, the root holds exactly what the command meant to make: no placeholder for a missing
protected name (`.envrc`, `.mcp.json`, `.vscode`, ...) ever appears in it, a killed command included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import SandboxSettings, Settings
from mcp_codetools.shell.sandbox import SandboxUnavailable, prepared
from mcp_codetools.tools import default_tools
from tests import facilities
from tests.conftest import Caller
from tests.tools.test_bash_container import _find_image
from tests.tools.test_bash_sandbox import working
from tests.tools.test_bash_sandbox_kept import YesCaller, gate_for

pytestmark = pytest.mark.anyio

GIT = "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main"
WORKFLOWS = {
    "a file at the top": ("echo made > new.txt && cat new.txt", ["new.txt"]),
    "a folder at the top": ("mkdir build && echo 1 > build/out.txt", ["build/out.txt"]),
    "a file below": ("mkdir -p src && echo 1 > src/b.txt", ["src/b.txt"]),
    "remove at the top": ("rm a.py && echo removed", []),
    "rename at the top": ("mv a.py b.py && mv lib lib2", ["b.py", "lib2/m.py"]),
    "remove a folder at the top": ("rm -rf lib", []),
    "a virtual environment": (
        "python3 -m venv --without-pip .venv && .venv/bin/python -c 'print(1)'",
        [".venv/pyvenv.cfg"],
    ),
    "git": (
        f"echo 3 >> a.py && {GIT} add -A && {GIT} commit -qm x && test \"$({GIT} status --porcelain)\" = '' "
        f"&& {GIT} show --stat --format= HEAD | grep -c a.py && {GIT} branch topic && {GIT} checkout -q topic "
        f"&& echo 2 >> a.py "
        f"&& {GIT} stash -q && {GIT} stash list | grep -c stash && {GIT} checkout -q main",
        [],
    ),
    "git init in a folder": (f"mkdir sub && cd sub && {GIT} init -q && echo x > f && {GIT} add f", ["sub/.git/HEAD"]),
    "tar": ("tar -cf lib.tar lib && mkdir unpacked && tar -C unpacked -xf lib.tar", ["lib.tar", "unpacked/lib/m.py"]),
    "a test run with its cache": (
        "python3 -c \"import os; os.makedirs('.pytest_cache/v', exist_ok=True); open('.pytest_cache/v/x', 'w')\"",
        [".pytest_cache/v/x"],
    ),
    "make with a build folder": (
        "printf 'build/app:\\n\\tmkdir -p build && echo app > build/app\\n' > Makefile && make -s",
        ["Makefile", "build/app"],
    ),
}
GONE = {"remove at the top": ["a.py"], "rename at the top": ["a.py", "lib"], "remove a folder at the top": ["lib"]}
"""What a workflow removes, checked after it: a command's own check could pass a failed removal (`rm a.py && test
! -e a.py` ends in `test`, whose status 1 is "Condition is false", not an error)."""
FROZEN_CONTAINER = "container (frozen)"
"""The container backend on an image without python3: no supervisor, the folders of missing kept paths frozen."""
FROZEN = {
    "a file at the top", "a folder at the top", "remove at the top", "a file below", "rename at the top",
    "remove a folder at the top", "a virtual environment", "git", "tar", "a test run with its cache",
    "make with a build folder", "git init in a folder",
}  # fmt: skip
"""What Landlock refuses without its supervisor (no seccomp user notification): Landlock grants rights on whole
folders, so a folder holding a missing protected name takes no new entry."""
BLOCKED: dict[str, set[str]] = {FROZEN_CONTAINER: FROZEN}
"""The workflows each backend cannot let through yet (`blocked`): frozen folders, as Landlock's without its
supervisor."""


def blocked(backend: str) -> set[str]:
    """The workflows `backend` refuses here: Landlock's depend on whether its supervisor runs."""
    found = prepared(SandboxSettings(enabled=True, backend="landlock")) if backend == "landlock" else None
    if found is not None and not found.supervised:
        return FROZEN
    return BLOCKED.get(backend, set())


PROTECTED = {
    ".claude/": "mkdir -p .claude && echo '{}' > .claude/settings.json",
    ".mcp.json": "echo '{}' > .mcp.json",
    "mcp-codetools.toml": "printf '[sandbox]\\nenabled = false\\n' > mcp-codetools.toml",
    ".git/config": "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config",
    ".git/hooks/": "echo 'touch /tmp/x' > .git/hooks/pre-commit",
    ".vscode/": "mkdir .vscode; echo '{}' > .vscode/tasks.json",
    ".envrc": "echo 'touch /tmp/x' > .envrc",
    "a rename onto .envrc": "echo x > e && mv e .envrc",
    "a link at .mcp.json": "ln -s a.py .mcp.json",
    "moving .git aside": "mv .git .git-old && mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
}


BACKENDS = ["bwrap", "landlock", "seatbelt", pytest.param("container", marks=pytest.mark.serial)]
"""Every backend; the container one holds Docker's daemon, one test at a time (its session's container is
removed when the session closes)."""


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "container":
        return container_backend()
    working(request.param)  # skips, or fails where CI requires the backend
    return str(request.param)


def container_backend() -> str:
    """The container backend's name here: `FROZEN_CONTAINER` when the image cannot run the supervisor.

    Skips (or fails where CI requires Docker) when there is no image or daemon.
    """
    settings = sandbox_settings("container")
    try:
        found = prepared(settings)
    except SandboxUnavailable as exc:
        facilities.missing("docker", f"the container backend does not work here: {exc}")
    return FROZEN_CONTAINER if found is not None and found.unsupervised else "container"


def sandbox_settings(backend: str) -> SandboxSettings:
    """The sandbox on `backend`; the container one on the container lane's image (`_find_image`)."""
    if backend in ("container", FROZEN_CONTAINER):
        return SandboxSettings(enabled=True, backend="container", image=container_image())
    return SandboxSettings(enabled=True, backend=backend)  # type: ignore[arg-type]


@cache
def container_image() -> str:
    return _find_image("docker")


def repository(workspace: Path) -> Path:
    """A git repository with one commit: `a.py` and `lib/m.py`; no protected name exists in it but `.git`."""
    (workspace / "lib").mkdir(parents=True)
    (workspace / "a.py").write_text("x = 1\n", encoding="utf-8")
    (workspace / "lib" / "m.py").write_text("y = 2\n", encoding="utf-8")
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run(GIT.split() + command, cwd=workspace, check=True)
    return workspace


@pytest.fixture(scope="module")
def made_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return repository(tmp_path_factory.mktemp("repository") / "ws")


@pytest.fixture
def root(tmp_path: Path, made_repository: Path) -> Path:
    """A copy of the module's repository: three git runs a test cost ~22 ms of CPU, a copy ~7."""
    return Path(shutil.copytree(made_repository, (tmp_path / "ws").resolve(), symlinks=True))


@pytest.fixture
def settings(root: Path, backend: str) -> Settings:
    return Settings(roots=(root,), sandbox=sandbox_settings(backend))


@pytest.fixture
def call(session: CodeSession, root: Path) -> Caller:
    return YesCaller(Pipeline(default_tools(), gate_for(root)), session)


def entries(root: Path) -> set[str]:
    """Every path in the root outside `.git`'s objects, as root-relative text."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.startswith(".git"):
            dirnames[:] = [d for d in dirnames if d in ("hooks",)] if rel == ".git" else []
        for name in (*dirnames, *filenames):
            found.add(os.path.normpath(os.path.join(rel, name)))
    return found


STUBS = {".envrc", ".mcp.json", "mcp-codetools.toml", ".claude", ".vscode", ".idea", ".husky", ".devcontainer"}


@pytest.mark.parametrize("name", WORKFLOWS.keys())
async def test_ordinary_work_goes_through(call: Caller, root: Path, backend: str, name: str) -> None:
    command, made = WORKFLOWS[name]
    out = await call("Bash", {"command": command})
    assert not STUBS & set(os.listdir(root)), "a placeholder appeared in the root"
    if name in blocked(backend):
        assert out.is_error and "[Sandbox: " in out.text, out.text
        return
    assert not out.is_error, out.text
    for path in made:
        assert (root / path).exists(), f"{path} was not made: {out.text}"
    for path in GONE.get(name, []):
        assert not (root / path).exists(), f"{path} is still there: {out.text}"


@pytest.mark.parametrize("what", PROTECTED.keys())
async def test_a_protected_name_can_still_not_be_made_or_written(
    call: Caller, root: Path, backend: str, what: str
) -> None:
    config = (root / ".git" / "config").read_bytes()
    hooks = sorted(os.listdir(root / ".git" / "hooks"))
    before = entries(root)
    await call("Bash", {"command": PROTECTED[what]})
    assert (root / ".git" / "config").read_bytes() == config
    assert sorted(os.listdir(root / ".git" / "hooks")) == hooks
    made = entries(root) - before
    assert not {p.split("/")[0] for p in made} & (STUBS | {".git-old"}), made
    assert not (root / ".git" / "hooks" / "pre-commit").exists()


async def test_nothing_appears_in_the_root_while_a_command_runs_or_after_it_is_killed(
    call: Caller, root: Path, session: CodeSession
) -> None:
    marker = root / "running"
    before = set(os.listdir(root))
    out = await call("Bash", {"command": f"touch {marker}; echo started; sleep 60", "run_in_background": True})
    job = session.jobs.get(str(out.meta["backgroundTaskId"]))
    assert job is not None
    seen = ""
    with anyio.fail_after(30):
        while "started" not in seen:  # each call waits for new output (BashOutput's own wait)
            seen += (await call("BashOutput", {"bash_id": job.id, "wait_s": 5})).text
    assert set(os.listdir(root)) - before <= {"running"}  # a background job's top level is frozen under bwrap
    await call("KillShell", {"shell_id": job.id})
    with anyio.fail_after(30):
        await job.done.wait()
    assert set(os.listdir(root)) - before <= {"running"}
    assert not STUBS & set(os.listdir(root))


async def test_a_foreground_command_killed_by_its_timeout_leaves_no_placeholder(call: Caller, root: Path) -> None:
    before = set(os.listdir(root))
    out = await call("Bash", {"command": "echo x > made.txt; sleep 30", "timeout": 500})
    assert out.meta.get("interrupted") or out.is_error, out.text
    assert set(os.listdir(root)) - before <= {"made.txt"}


def test_the_workflows_need_what_they_run() -> None:
    missing = [tool for tool in ("git", "make", "tar", "python3") if shutil.which(tool) is None]
    assert not missing, f"the workflow suite needs {missing} on the PATH"
