"""The command line: `doctor` end to end, and refusing a bad root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.protocol.stdio_raw import server_command


def test_doctor_runs_the_seed_scenario_and_says_it_works(tmp_path: Path) -> None:
    done = subprocess.run(
        [*server_command(), "doctor"], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Verdict: everything works" in done.stdout
    assert "lsp          python for .py .pyi: started in" in done.stdout
    assert "FAIL" not in done.stdout
    for fragment in ("python", "mcp ", "rg:", "Edit before Read is refused", "file now holds"):
        assert fragment in done.stdout


def test_a_root_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "--root", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert "not a directory" in done.stderr
    assert done.stdout == ""


def test_concurrency_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools.config import ConfigError, Settings

    monkeypatch.setenv("MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", "3")
    assert Settings.from_env().max_concurrency == 3
    monkeypatch.setenv("MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", "lots")
    with pytest.raises(ConfigError, match="MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY.*'lots'"):
        Settings.from_env()


def test_doctor_checks_the_given_roots_as_the_server_does(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    served = subprocess.run(
        [*server_command(), "--root", missing],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    doctor = subprocess.run(
        [*server_command(), "--root", missing, "doctor"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert served.returncode == 2
    message = served.stderr.strip()
    assert doctor.returncode == 1, doctor.stdout
    assert "everything works" not in doctor.stdout
    assert f"[FAIL] roots: {message}" in doctor.stdout


def test_doctor_runs_the_installed_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "mcp-codetools"
    if not script.exists():
        pytest.skip("no console script installed beside this Python")
    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "doctor"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Server: {script} --root" in done.stdout
