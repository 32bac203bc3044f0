"""The suite on pytest-xdist's workers (tests/parallel.py): who shares a worker, and what a worker's failure is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import cpu_profile
from tests.parallel import pytest_xdist_auto_num_workers, usable_cores

REPO = Path(__file__).resolve().parents[1]

SUITE = """
import os, tempfile, time
from pathlib import Path
import pytest
from mcp_codetools.files.scratch import PREFIX

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

def test_leaves_a_scratch_folder():
    Path(tempfile.gettempdir(), f"{PREFIX}{os.getpid()}-left-by-test").mkdir()

@pytest.mark.serial
def test_second_serial():
    hold()
"""


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """SUITE as a test module on 2 workers, with the suite's settings and conftest: one run that both tests
    below read (each run starts three interpreters, several seconds of CPU on a busy machine)."""
    tmp_path = tmp_path_factory.mktemp("tiny")
    (tmp_path / "test_tiny.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "conftest.py").write_text("pytest_plugins = ('tests.conftest',)\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != cpu_profile.ENV}  # its tests are not the suite's
    env.update(PYTHONPATH=str(REPO), SERIAL_ACTIVE=str(tmp_path / "active"))
    # Without hypothesis's plugin, which this suite does not use: ~0.5 CPU-s in each of the three interpreters.
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    argv += ["-c", str(REPO / "pyproject.toml")]
    argv += ["--rootdir", str(tmp_path), "-q", "-n", "2", "--dist", "worksteal", str(tmp_path / "test_tiny.py")]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_serial_tests_on_different_workers_never_run_at_once(tiny_run: subprocess.CompletedProcess[str]) -> None:
    """worksteal gives each worker half of the tests: the two serial ones start on different workers."""
    assert "9 passed" in tiny_run.stdout and "failed" not in tiny_run.stdout, tiny_run.stdout + tiny_run.stderr


def test_a_scratch_folder_left_on_a_worker_fails_the_run(tiny_run: subprocess.CompletedProcess[str]) -> None:
    """Each worker checks its own scratch folders at its end; its exit status is not the run's, so it tells."""
    assert tiny_run.returncode == 1, tiny_run.stdout + tiny_run.stderr
    assert "-left-by-test" in tiny_run.stderr


def test_auto_starts_one_worker_more_than_the_cores_and_none_for_one_file() -> None:
    def config(*args: str) -> pytest.Config:
        return SimpleNamespace(args=list(args), invocation_params=SimpleNamespace(dir=REPO))  # type: ignore[return-value]

    assert pytest_xdist_auto_num_workers(config("tests")) == usable_cores() + 1 >= 2
    assert pytest_xdist_auto_num_workers(config("tests/test_parallel.py")) == 0
    assert (
        pytest_xdist_auto_num_workers(config("tests/test_parallel.py::test_a", "tests/test_layers.py"))
        == usable_cores() + 1
    )
