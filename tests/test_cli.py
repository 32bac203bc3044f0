"""The command line: `doctor` end to end, and refusing a bad root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_here import command_here, doctor_here
from tests.protocol.stdio_raw import server_command


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
    from mcp_codetools.settings import ConfigError, settings_from_env

    monkeypatch.setenv("MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", "3")
    assert settings_from_env().max_concurrency == 3
    monkeypatch.setenv("MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", "lots")
    with pytest.raises(ConfigError, match="MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY.*'lots'"):
        settings_from_env()


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
    here = tmp_path / "here"
    here.mkdir()
    doctor = doctor_here(["--root", missing], here)  # in this process: the next test runs doctor's own
    assert served.returncode == 2
    message = served.stderr.strip()
    assert doctor.returncode == 1, doctor.stdout
    assert "everything works" not in doctor.stdout
    assert f"[FAIL] settings: {message}" in doctor.stdout


def test_doctor_runs_the_seed_scenario_through_the_installed_console_script(tmp_path: Path) -> None:
    """Started as `python -m`, doctor still starts the console script clients run (the script's own `doctor`
    runs in tests/test_doctor.py), and prints the dependencies and the facilities it found. One run for these
    checks: a doctor run costs about 5 CPU-seconds."""
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
    assert "Verdict: everything works" in done.stdout
    assert "lsp          python for .py .pyi: started in" in done.stdout
    assert "FAIL" not in done.stdout
    for fragment in ("python", "mcp ", "rg:", "Edit before Read is refused", "file now holds"):
        assert fragment in done.stdout
    facilities = ("pypdfium2 ", "Pillow ", "regex ", "ruff ", "Facilities", "confined opens", "rg start", "backends")
    for fragment in facilities:
        assert fragment in done.stdout, fragment
    # The same file however either side spelled it (a relative start, a symlinked venv).
    shown = next(line for line in done.stdout.splitlines() if line.startswith("Server: "))
    assert os.path.samefile(shown.removeprefix("Server: ").split(" --root")[0], script), shown


def test_help_explains_the_command_and_the_transport() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # argparse wraps to the terminal's width
    for fragment in (
        "serve (default): run the MCP server",
        "doctor: check the install",
        "config: print the effective settings",
        "stdio (default): the client starts the server",
        "http: streamable HTTP at http://HOST:PORT/mcp",
    ):
        assert fragment in text, fragment


def test_a_port_in_use_says_to_pick_another_with_port(tmp_path: Path) -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*server_command(), "--transport", "http", "--port", str(port), "--root", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert done.returncode == 2
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith(f"mcp-codetools: cannot listen on 127.0.0.1:{port}: "), message
    assert "pick another with --port N" in message and "--port 0 picks a free one" in message, message


def test_config_check_reports_every_problem_and_rules_that_name_no_tool(tmp_path: Path) -> None:
    path = tmp_path / "six.toml"
    path.write_text(
        '[limits]\nmax_concurrency = 0\n[read]\ndefault_lines = "many"\n[files]\nhard_links = "sometimes"\n'
        '[permissions]\ndeny = ["Raed(.env)", "Bash("]\ndefault_mode = "yolo"\n'
    )
    here = tmp_path / "here"  # its user config folder: tmp_path / "xdg", none
    here.mkdir()
    done = command_here(["config", "--check", str(path)], here)
    assert done.returncode == 1, done.stdout
    problems = done.stdout.strip().splitlines()
    assert len(problems) == 6, problems
    assert all(p.startswith(str(path)) for p in problems), problems
    for fragment in ("max_concurrency", "default_lines", "hard_links", "Bash(", "yolo"):
        assert sum(fragment in p for p in problems) == 1, (fragment, problems)
    raed = next(p for p in problems if "Raed(.env)" in p)
    assert "names no tool of this server" in raed and "did you mean Read?" in raed, raed
    ok = tmp_path / "ok.toml"
    ok.write_text('[permissions]\ndeny = ["Read(.env)", "Bash(curl *)", "WebFetch"]\n')
    unknown = command_here(["config", "--check", str(ok)], here)
    assert unknown.returncode == 1
    assert "`WebFetch` names no tool of this server" in unknown.stdout
    assert "the tools are Read, Edit, Write" in unknown.stdout, unknown.stdout


def test_config_lists_the_project_values_it_ignored(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mcp-codetools.toml").write_text(
        '[permissions]\ndefault_mode = "bypassPermissions"\n[hooks]\nfrom_project = true\n[sandbox]\nenabled = false\n'
    )
    (tmp_path / "xdg" / "mcp-codetools").mkdir(parents=True)  # command_here's user config folder
    (tmp_path / "xdg" / "mcp-codetools" / "config.toml").write_text("[sandbox]\nenabled = true\n")
    done = command_here(["config"], project)
    assert done.returncode == 0, done.stdout
    ignored = [line for line in done.stdout.splitlines() if line.startswith("# ignored: ")]
    assert len(ignored) == 3, done.stdout
    assert any("permissions.default_mode = 'bypassPermissions' ignored" in line for line in ignored), ignored
    assert any("hooks.from_project = True ignored" in line for line in ignored), ignored
    assert any("[sandbox] enabled = false ignored" in line for line in ignored), ignored
    assert 'permissions.default_mode = "default"' in done.stdout


def test_every_on_off_setting_has_a_no_flag_and_doctor_passes_it_on(tmp_path: Path) -> None:
    """`--no-sandbox` turns off a sandbox that is on by default (or that a config file turns on)."""
    from mcp_codetools.cli import _parser, flag_values, server_flags
    from mcp_codetools.settings import load_settings

    args = _parser().parse_args(["--no-sandbox", "--sandbox-network", "--root", str(tmp_path), "doctor"])
    assert (args.sandbox, args.sandbox_network) == (False, True)
    assert server_flags(args) == ["--no-sandbox", "--sandbox-network"]
    loaded = load_settings([str(tmp_path)], flags=flag_values(args), environ={}, read_files=False)
    assert loaded.settings.sandbox.enabled is False
    assert loaded.sources["sandbox.enabled"] == "--no-sandbox flag"
    assert _parser().parse_args([]).sandbox is None, "not given: the default decides"
