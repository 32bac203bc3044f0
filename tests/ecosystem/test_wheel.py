"""A built wheel runs without a clone: `uvx --from <wheel> mcp-codetools doctor` and
`pipx run --spec <wheel> mcp-codetools doctor` each pass in an environment of their own.

In the default suite: the build and both runs take about 30 s with warm caches and about a minute cold, and
they are the only check that the wheel carries everything the server needs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ecosystem.support import REPO, project_version, venv_tool


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The project's wheel, built from a copy of the sources so the work tree gets no build/ or egg-info."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "mcp_codetools", source / "mcp_codetools", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    temporary = tmp_path_factory.mktemp("build-tmp")  # uv's lock files stay in it, not in the machine's /tmp
    # uv builds the same wheel (same files, same bytes) as `pip wheel` for 2.9 CPU-s against pip's 7.5: its
    # isolated build environment with setuptools is made from its cache in milliseconds.
    built = subprocess.run(
        [venv_tool("uv"), "build", "--wheel", "-q", "-o", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never", "TMPDIR": str(temporary)},
        stdin=subprocess.DEVNULL,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    [path] = out.glob("*.whl")
    assert path.name == f"mcp_codetools-{project_version()}-py3-none-any.whl"
    yield path


def assert_doctor_passed(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Verdict: everything works" in result.stdout
    assert "[FAIL]" not in result.stdout


def test_uvx_runs_doctor_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    uvx = venv_tool("uvx")
    temporary = tmp_path / "tmp"  # uv's lock files (`uv-<hash>.lock`) stay in it, not in the machine's /tmp
    temporary.mkdir()
    env = {**os.environ, "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never", "TMPDIR": str(temporary)}
    result = subprocess.run(
        [uvx, "--from", str(wheel), "mcp-codetools", "doctor"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert_doctor_passed(result)


def test_pipx_run_runs_doctor_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    pipx = venv_tool("pipx")
    home = tmp_path / "pipx"
    env = {**os.environ, "PIPX_HOME": str(home), "PIPX_BIN_DIR": str(home / "bin"), "PIPX_MAN_DIR": str(home / "man")}
    result = subprocess.run(
        [pipx, "run", "--python", sys.executable, "--spec", str(wheel), "mcp-codetools", "doctor"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert_doctor_passed(result)
