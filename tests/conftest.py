"""Shared fixtures: a workspace on tmp_path, a session over it, and a way to run calls through the pipeline.

What each test costs in CPU, with the processes it starts: `MCP_CODETOOLS_TEST_CPU=/tmp/cpu.jsonl` on any run
records it, `python -m tests.cpu_profile /tmp/cpu.jsonl` ranks the files (tests/cpu_profile.py). The suite is
CPU-bound on 2 cores, so that, not `--durations`, says where its time goes.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.shell import procs
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import ToolOutput
from tests import facilities, processes
from tests.gates import Gates
from tests.platform_marks import reads_proc

pytest_plugins = ("tests.parallel", "tests.cpu_profile")  # xdist workers; opt-in CPU per test

os.environ.setdefault("MCP_CODETOOLS_START_SNAPSHOT", "0")
"""Servers the tests start keep no start snapshot in the user's cache; tests/protocol/test_start_snapshot.py
turns it on with a cache folder of its own."""


_LEFT_BY_WORKERS: list[str] = []
"""Scratch folders that pytest-xdist's workers found left behind (the controller fails the run for them)."""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a session the tests opened in this process left its scratch folder behind."""
    from mcp_codetools.files.scratch import PREFIX

    left = [folder.name for folder in sorted(Path(tempfile.gettempdir()).glob(f"{PREFIX}{os.getpid()}-*"))]
    for name in left:
        shutil.rmtree(Path(tempfile.gettempdir()) / name, ignore_errors=True)
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:  # a worker's exit status is not the run's: tell the controller
        worker_output["scratch_left"] = left
    left += _LEFT_BY_WORKERS
    if left:
        print(f"\nscratch folders left by unclosed sessions (removed): {', '.join(left)}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """A pytest-xdist worker ended (called on the controller): keep what it found left behind."""
    _LEFT_BY_WORKERS.extend(getattr(node, "workeroutput", {}).get("scratch_left", []))


def pytest_configure(config: pytest.Config) -> None:
    try:
        facilities.required()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_sessionstart(session: pytest.Session) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set (CI here, many containers) no import writes bytecode, so every
    server, doctor and pytest the tests start compiled the package from source again: about 0.2 s of CPU a
    start, hundreds of starts. Compiled once here instead, as a first import without that variable would."""
    if not sys.dont_write_bytecode or "PYTEST_XDIST_WORKER" in os.environ:
        return
    import compileall
    import contextlib

    import mcp_codetools

    with contextlib.suppress(OSError):  # a read-only tree (the container lane may mount one): as before
        compileall.compile_dir(Path(mcp_codetools.__file__).parent, quiet=2)


def pytest_report_header(config: pytest.Config) -> str | None:
    names = sorted(facilities.required())
    return f"facilities required ({facilities.REQUIRE_ENV}): {', '.join(names)}" if names else None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run tests marked slow")
    parser.addoption(
        "--reliability-report",
        metavar="PATH",
        default=None,
        help="after a run of the whole tests/reliability suite, write its report to PATH (default: no report)",
    )


def _conftests(path: Path) -> list[Path]:
    tests = Path(__file__).resolve().parent
    return [folder / "conftest.py" for folder in path.parents if folder.is_relative_to(tests)
            and (folder / "conftest.py").is_file()]  # fmt: skip


def _platform_skips() -> dict[str, str]:
    """Why each platform marker's tests cannot run here (absent: they can)."""
    skips = {}
    if not sys.platform.startswith("linux"):
        skips["linux_only"] = f"needs Linux (this is {sys.platform})"
    if sys.platform != "darwin":
        skips["macos_only"] = f"needs macOS (this is {sys.platform})"
    if not os.path.isdir("/proc/self/fd"):
        skips["proc"] = "needs /proc (absent or empty here)"
    return skips


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    no_proc = pytest.mark.skip(reason="reads /proc, which is absent here")
    no_table = pytest.mark.skip(
        reason="no process table here (Linux without /proc): a process that left the command's session "
        "cannot be found (mcp_codetools/shell/procs.py, 'none')"
    )
    for item in items:
        if "needs_proc" in item.keywords and not processes.HAS_PROC:
            item.add_marker(no_proc)
        if "needs_process_table" in item.keywords and procs.table() == "none":
            item.add_marker(no_table)
    skips = _platform_skips()
    # Found from the sources (many tests read /proc through shared helpers), and only where the mark skips: the
    # walk of every test module's tree cost each xdist worker ~3 CPU-s of its collection.
    for item in items if "proc" in skips else ():
        if isinstance(item, pytest.Function) and reads_proc(
            item.path, item.originalname, item.fixturenames, _conftests(item.path)
        ):
            item.add_marker(pytest.mark.proc)
    for item in items:
        for marker, reason in skips.items():
            if marker in item.keywords:
                item.add_marker(pytest.mark.skip(reason=f"{marker}: {reason}"))
                break
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The workspace root: a real folder with symlinks resolved."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace.resolve()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the root that the tools must never reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n", encoding="utf-8")
    return folder.resolve()


@pytest.fixture
def beyond_tmp() -> Iterator[Path]:
    """A fresh folder outside /tmp and the temporary folder, removed after the test.

    bubblewrap gives commands a private /tmp, which would hide an escape into a folder there; HOME itself is
    often under /tmp in containers and CI, so the folder is made in the first of ~/.cache, ~ and /var/tmp that
    exists, is writable and lies outside both.
    """
    temporary = [Path(os.path.realpath(folder)) for folder in ("/tmp", tempfile.gettempdir())]
    for candidate in (Path.home() / ".cache", Path.home(), Path("/var/tmp")):
        real = Path(os.path.realpath(candidate))
        if real.is_dir() and os.access(real, os.W_OK) and not any(real.is_relative_to(t) for t in temporary):
            folder = Path(tempfile.mkdtemp(prefix="mcp-codetools-test-", dir=real))
            try:
                yield folder
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            return
    pytest.skip("no writable folder outside /tmp here (tried ~/.cache, ~ and /var/tmp)")


@pytest.fixture
def settings(root: Path) -> Settings:
    # A cold jedi on a loaded machine can take longer than the first-call budget meant for the model.
    return Settings(roots=(root,), lsp_first_call_s=60)


@pytest.fixture
async def session(settings: Settings) -> Any:
    code_session = CodeSession(settings)
    yield code_session
    await code_session.aclose()


@pytest.fixture
def pipeline() -> Pipeline:
    return Pipeline(default_tools())


class Caller:
    """Runs tool calls through the whole pipeline, without MCP."""

    def __init__(self, pipeline: Pipeline, session: CodeSession) -> None:
        self.pipeline = pipeline
        self.session = session

    async def __call__(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        return await self.pipeline.run(self.session, name, arguments)

    async def ok(self, name: str, arguments: Mapping[str, Any] | None = None) -> str:
        output = await self(name, arguments)
        assert not output.is_error, output.text
        return output.text

    async def fails(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        output = await self(name, arguments)
        assert output.is_error, output.text
        return output

    async def refuses(self, name: str, arguments: Mapping[str, Any], field: str) -> ToolOutput:
        """The call fails as invalid input, and the message names `field`."""
        output = await self.fails(name, arguments)
        assert output.meta["errorCode"] == "invalid_input", output.text
        assert f"The parameter `{field}` is invalid" in output.text
        return output


@pytest.fixture
def call(pipeline: Pipeline, session: CodeSession) -> Caller:
    return Caller(pipeline, session)


@pytest.fixture
def gates() -> Gates:
    """Gated test tools (`gates.tool(name)`) and the log of what their calls did (tests/gates.py)."""
    return Gates()
