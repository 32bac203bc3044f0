"""ruff (lint and format) and mypy as part of the suite, so CI holds the code to them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return found


FOLDERS = ("mcp_codetools", "tests", "benchmarks", "scripts")


def test_ruff_is_clean() -> None:
    done = subprocess.run([tool("ruff"), "check", *FOLDERS], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_leaves_the_code_as_it_is() -> None:
    done = subprocess.run([tool("ruff"), "format", "--check", *FOLDERS], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, "run: ruff format .\n" + done.stdout + done.stderr


def test_mypy_is_clean() -> None:
    done = subprocess.run([tool("mypy")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
