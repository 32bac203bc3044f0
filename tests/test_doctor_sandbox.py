"""`doctor` names the sandbox backends this platform has, whether each works, and the one in use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mcp_codetools import doctor
from mcp_codetools.settings import load_settings, settings_from_env
from mcp_codetools.shell import sandbox as sandbox_module
from mcp_codetools.shell import seatbelt


@pytest.fixture(autouse=True)
def _no_sandbox_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MCP_CODETOOLS_SANDBOX", "MCP_CODETOOLS_SANDBOX_BACKEND", "MCP_CODETOOLS_SANDBOX_NETWORK"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.linux_only
def test_on_linux_both_backends_are_named_with_whether_they_work(capsys: pytest.CaptureFixture[str]) -> None:
    doctor._backends(settings_from_env().sandbox)
    out = capsys.readouterr().out
    assert "backends     on linux: bwrap (" in out and "landlock (" in out
    assert "by platform: Linux bwrap, landlock; macOS seatbelt; Windows none (use WSL)" in out


def test_on_macos_seatbelt_is_named_and_used(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(sandbox_module, "_try", lambda argv: None)
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: p == seatbelt.SANDBOX_EXEC or real_exists(p))
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX", "1")
    doctor._backends(settings_from_env().sandbox)
    out = capsys.readouterr().out
    assert "backends     on darwin: seatbelt (works)" in out
    assert "bwrap (" not in out, "only this platform's backends are probed"
    loaded = load_settings([str(tmp_path)], environ={"MCP_CODETOOLS_SANDBOX": "1"}, read_files=False)
    assert "; Seatbelt (/usr/bin/sandbox-exec)" in doctor.sandbox_line(loaded)


def test_a_backend_that_does_not_work_is_said_and_fails_only_when_asked_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(seatbelt, "SANDBOX_EXEC", "/nonexistent/sandbox-exec")
    doctor._backends(settings_from_env().sandbox)
    assert "seatbelt (does not work here)" in capsys.readouterr().out
    loaded = load_settings([str(tmp_path)], environ={"MCP_CODETOOLS_SANDBOX": "1"}, read_files=False)
    assert "; unavailable here: " in doctor.sandbox_line(loaded)
