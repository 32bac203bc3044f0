"""Native Windows: every module imports, and the server says what works there and how to run it under WSL.

Windows has no descriptor-relative opens, so `serve` refuses to start there (see `doctor.native_windows_notice`).
Off Windows these tests pretend (`sys.platform` patched, POSIX-only modules and names removed); the CI's
Windows job runs them for real, with the start-up message check.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_codetools import cli, doctor
from mcp_codetools.search.locate import find_rg

AUDIT = Path(__file__).with_name("windows_imports.py")
TIMEOUT_S = 120


def _audit(*modules: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [sys.executable, str(AUDIT), *modules], capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


_POSIX_ONLY_MODULES = {
    "uses_fcntl": "import fcntl\n",
    "uses_nofollow": "import os\nFLAGS = os.O_RDONLY | os.O_NOFOLLOW\n",
    "uses_sigkill": "import signal\nKILL = signal.SIGKILL\n",
    "uses_platform": "import sys\nassert sys.platform != 'win32', 'not patched'\n",
}


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One audit of the package's modules and of four POSIX-only ones: its start (every dependency imported
    before the pretence) costs ~4.5 CPU-s, and what it says of each module is printed on a line of its own."""
    folder = tmp_path_factory.mktemp("posix-only")
    for name, text in _POSIX_ONLY_MODULES.items():
        (folder / f"{name}.py").write_text(text)
    return _audit(*_package_modules(), *_POSIX_ONLY_MODULES, pythonpath=folder)


@pytest.mark.skipif(sys.platform == "win32", reason="on Windows the modules are imported for real (next test)")
def test_every_module_imports_as_on_windows(audited: subprocess.CompletedProcess[str]) -> None:
    failed = [line for line in audited.stdout.splitlines() if line.split(" ", 1)[0] not in _POSIX_ONLY_MODULES]
    assert not failed, "modules that fail to import on Windows:\n" + "\n".join(failed)
    reported = {line.split(" ", 1)[0] for line in audited.stdout.splitlines()}
    assert reported == set(_POSIX_ONLY_MODULES), f"the audit did not get to its last modules:\n{audited.stderr}"


def test_the_audit_catches_posix_only_imports_and_names(audited: subprocess.CompletedProcess[str]) -> None:
    """The audit is only worth its silence if it speaks up: a POSIX-only import or name is reported."""
    assert audited.returncode == 1
    for name in _POSIX_ONLY_MODULES:
        assert re.search(rf"^{name} ", audited.stdout, re.M), audited.stdout


def test_every_module_imports_on_windows() -> None:
    if sys.platform != "win32":
        pytest.skip("the real import on Windows runs in the CI's Windows job; elsewhere the audit above pretends")
    for name in _package_modules():
        importlib.import_module(name)


def _package_modules() -> list[str]:
    package = Path(cli.__file__).resolve().parent
    names = []
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts[-1] != "__main__":
            names.append(".".join(parts))
    return names


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`sys.platform` says win32 for the test; what was looked up under it (rg's path) is forgotten after.

    The compiled dependencies are imported first: a first import under the pretended platform would fail
    and leave half-initialised submodules behind (psutil's `_common` caches `LINUX = False`), breaking
    every later test in the run.
    """
    for _, module, _ in doctor.DEPENDENCIES:
        if module:
            importlib.import_module(module)
    monkeypatch.setattr(sys, "platform", "win32")
    find_rg.cache_clear()
    yield
    find_rg.cache_clear()


def _check_notice(text: str) -> None:
    assert "native Windows is not supported yet" in text and "does not start" in text
    assert "`mcp-codetools config`, `mcp-codetools doctor` and `--version`" in text, "what works there"
    config = re.search(r"(\{\"command\": \"wsl\".*?\]\})", text)
    assert config, "the WSL config line"
    parsed = json.loads(config[1])
    assert parsed["command"] == "wsl" and parsed["args"][0].endswith("mcp-codetools") and "--root" in parsed["args"]


@pytest.mark.usefixtures("windows")
def test_serve_on_windows_refuses_with_what_works_and_the_wsl_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli.main(["--root", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "", "stdout is the protocol"
    _check_notice(err)


@pytest.mark.usefixtures("windows")
def test_doctor_on_windows_reports_and_points_at_wsl(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MCP_CODETOOLS_SANDBOX", raising=False)
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "python" in out and "backends     none exists for win32 (under WSL" in out
    _check_notice(out)
    assert "Verdict: the server does not run natively on Windows" in out


@pytest.mark.usefixtures("windows")
def test_config_works_on_windows(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["config", "--markdown"]) == 0
    assert "`[sandbox] backend`" in capsys.readouterr().out


@pytest.mark.skipif(sys.platform != "win32", reason="the real start-up message check runs on Windows")
def test_the_installed_server_starts_on_windows_and_says_why_it_stops(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "--root", str(tmp_path)], capture_output=True, text=True,
        timeout=TIMEOUT_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    _check_notice(done.stderr)
