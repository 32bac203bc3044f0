"""The Bash sandbox is on by default where a backend that lets ordinary work through runs, and says so."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from mcp_codetools.cli import _parser, start_up
from mcp_codetools.settings import SandboxSettings
from mcp_codetools.shell import sandbox as sandbox_module
from mcp_codetools.shell.sandbox import BY_DEFAULT_VAR, DEFAULT_ON_SOURCE, SandboxUnavailable, probe


@pytest.fixture
def bwrap_works() -> None:
    try:
        probe(SandboxSettings(enabled=True, backend="bwrap"))
    except SandboxUnavailable as exc:
        pytest.skip(f"bwrap does not work here: {exc}")


def started(root: Path, *flags: str) -> tuple[object, list[str]]:
    args: argparse.Namespace = _parser().parse_args(["--root", str(root), *flags, "serve"])
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler = Keep(logging.INFO)
    logger = logging.getLogger("mcp_codetools")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        return start_up(args), records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_the_sandbox_is_on_by_default_with_the_network_open_and_asks_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap_works: None
) -> None:
    monkeypatch.delenv(BY_DEFAULT_VAR, raising=False)
    startup, lines = started(tmp_path)
    settings = startup.loaded.settings.sandbox  # type: ignore[attr-defined]
    assert (settings.enabled, settings.network, settings.backend) == (True, True, "bwrap")
    assert startup.loaded.sources["sandbox.enabled"] == DEFAULT_ON_SOURCE  # type: ignore[attr-defined]
    assert any(line.startswith("Bash sandbox: on by default (bwrap, network open)") for line in lines), lines
    assert startup.gate.sandboxed_bash is False  # type: ignore[attr-defined]


def test_a_setting_keeps_the_sandbox_off_or_the_network_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap_works: None
) -> None:
    monkeypatch.delenv(BY_DEFAULT_VAR, raising=False)
    startup, _ = started(tmp_path, "--no-sandbox")
    assert startup.loaded.settings.sandbox.enabled is False  # type: ignore[attr-defined]
    (tmp_path / "xdg" / "mcp-codetools").mkdir(parents=True)
    (tmp_path / "xdg" / "mcp-codetools" / "config.toml").write_text("[sandbox]\nnetwork = false\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    startup, _ = started(tmp_path)
    assert (startup.loaded.settings.sandbox.enabled, startup.loaded.settings.sandbox.network) == (True, False)  # type: ignore[attr-defined]


def test_an_explicit_sandbox_answers_for_bash_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap_works: None
) -> None:
    monkeypatch.delenv(BY_DEFAULT_VAR, raising=False)
    startup, _ = started(tmp_path, "--sandbox")
    assert startup.loaded.settings.sandbox.network is False  # type: ignore[attr-defined]
    assert startup.gate.sandboxed_bash is True  # type: ignore[attr-defined]


def test_where_no_such_backend_runs_the_server_says_so_and_runs_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BY_DEFAULT_VAR, raising=False)
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda: None)
    monkeypatch.setattr(sandbox_module, "_probed", {})
    startup, lines = started(tmp_path)
    assert startup.loaded.settings.sandbox.enabled is False  # type: ignore[attr-defined]
    assert sum("Bash sandbox: off" in line for line in lines) == 1, lines
