"""The suite on pytest-xdist's workers (tests/parallel.py): who shares a worker, and what a worker's failure is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SUITE = """
import os, time
from pathlib import Path
import pytest

ACTIVE = Path(os.environ["SERIAL_ACTIVE"])

def hold():
    ACTIVE.mkdir()  # fails if another serial test is running now
    try:
        time.sleep(1.5)  # long enough for a test on the other worker to start meanwhile, if nothing stops it
    finally:
        ACTIVE.rmdir()

@pytest.mark.serial
def test_first_serial():
    hold()

@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass

@pytest.mark.serial
def test_second_serial():
    hold()
"""


def run_suite(tmp_path: Path, source: str, plugin: str) -> subprocess.CompletedProcess[str]:
    """Runs `source` as a test module on 2 workers, with the suite's settings and `plugin` from tests/."""
    (tmp_path / "test_tiny.py").write_text(source, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(f"pytest_plugins = ({plugin!r},)\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "SERIAL_ACTIVE": str(tmp_path / "active")}
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(REPO / "pyproject.toml")]
    argv += ["--rootdir", str(tmp_path), "-q", "-n", "2", "--dist", "worksteal", str(tmp_path / "test_tiny.py")]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_serial_tests_on_different_workers_never_run_at_once(tmp_path: Path) -> None:
    """worksteal gives each worker half of the tests: the two serial ones start on different workers."""
    done = run_suite(tmp_path, SUITE, "tests.parallel")
    assert done.returncode == 0 and "8 passed" in done.stdout, done.stdout + done.stderr


def test_a_scratch_folder_left_on_a_worker_fails_the_run(tmp_path: Path) -> None:
    """Each worker checks its own scratch folders at its end; its exit status is not the run's, so it tells."""
    leaky = """
import os, tempfile
from pathlib import Path
from mcp_codetools.files.scratch import PREFIX

def test_leaves_a_scratch_folder():
    Path(tempfile.gettempdir(), f"{PREFIX}{os.getpid()}-left-by-test").mkdir()
"""
    done = run_suite(tmp_path, leaky, "tests.conftest")
    assert "1 passed" in done.stdout and done.returncode == 1, done.stdout + done.stderr
    assert "-left-by-test" in done.stderr
