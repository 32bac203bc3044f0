"""`doctor` starts up exactly as `serve` does: the same flags, files and environment, the same refusals."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.cli_here import Ran, doctor_here, run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


# Doctor runs in this process (tests/cli_here.py): a process of its own costs ~5 CPU-s, most of it its
# language server probe and the scenario's server, which the tests here need only where they say so. A
# scenario still costs ~2.5 CPU-s: tests that check different facts of one configuration share its run. Each
# fixture's configuration is one that all its tests' facts are independent of.


@pytest.fixture(scope="module")
def plan_mode_doctor(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ran]:
    """`--config mine.toml doctor` (a relative path; a limit only) with MCP_CODETOOLS_PERMISSION_MODE=plan.

    Neither the plan mode nor the limit changes the sandbox line.
    """
    folder = tmp_path_factory.mktemp("plan") / "project"
    folder.mkdir()
    (folder / "mine.toml").write_text("[limits]\nmax_concurrency = 3\n")
    done = doctor_here(["--config", "mine.toml"], folder, {"MCP_CODETOOLS_PERMISSION_MODE": "plan"}, scenario=True)
    return folder, done


@pytest.fixture(scope="module")
def configured_doctor(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ran]:
    """`--no-sandbox doctor` in a project whose own config file has a rule naming no tool.

    The project's file, not a --config one: doctor's scenario server runs elsewhere, so only a --config file
    reaches it (and its log); the flag and the rule show on separate lines. Its tests read doctor's own lines,
    so the scenario is left out.
    """
    folder = tmp_path_factory.mktemp("configured") / "project"
    folder.mkdir()
    (folder / "mcp-codetools.toml").write_text('[permissions]\ndeny = ["Raed(.env)"]\n')
    return folder, doctor_here(["--no-sandbox"], folder)


@pytest.mark.parametrize(
    ("flags", "env", "content"),
    [
        (["--config", "{bad}"], {}, "[limits]\nmax_concurrency = 0\n"),
        (["--config", "{bad}"], {}, '[permissions]\ndeny = ["Raed(.env)", "Bash("]\n'),
        ([], {"MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY": "lots"}, ""),
        (["--sandbox-backend", "landlock", "--config", "{bad}"], {}, '[sandbox]\nenv = ["A-B"]\n'),
    ],
    ids=["setting-in-config-file", "rule-in-config-file", "environment", "sandbox-setting"],
)
def test_a_configuration_the_server_refuses_fails_doctor_with_the_same_message(
    project: Path, flags: list[str], env: dict[str, str], content: str
) -> None:
    bad = project.parent / "bad.toml"
    bad.write_text(content)
    flags = [f.format(bad=bad) for f in flags]
    served = run(flags, project, env)
    assert served.returncode != 0, served.stderr
    message = served.stderr.strip().splitlines()[-1]
    assert message.startswith("mcp-codetools: ")
    doctor = doctor_here(flags, project, env)
    assert doctor.returncode == 1, doctor.stdout
    assert f"[FAIL] settings: {message}" in doctor.stdout, (message, doctor.stdout)
    assert "everything works" not in doctor.stdout
    assert "ExceptionGroup" not in doctor.stdout, "the settings line already says why"
    assert "(not run: the server does not start with these settings" in doctor.stdout


def test_doctor_says_the_sandbox_is_on_after_sandbox_and_names_what_it_confines(project: Path) -> None:
    from mcp_codetools.settings import SandboxSettings
    from mcp_codetools.shell.sandbox import SandboxUnavailable, probe

    done = doctor_here(["--sandbox"], project, scenario=True)
    try:
        works = probe(dataclasses.replace(SandboxSettings(), enabled=True))
    except SandboxUnavailable as exc:
        assert f"[FAIL] settings: mcp-codetools: {exc}" in done.stdout
        return
    lines = [line for line in done.stdout.splitlines() if line.lstrip().startswith("sandbox")]
    assert lines == [f"  sandbox      on (--sandbox flag); {works.describe()}"], done.stdout
    assert lines[0].endswith("; credentials and Read-denied paths masked")
    assert done.returncode == 0, done.stdout
    assert "Server: " in done.stdout and " --sandbox --root " in done.stdout, "the scenario's server is sandboxed too"


def test_doctor_reads_the_backend_flag_and_the_environment(project: Path) -> None:
    from mcp_codetools.settings import SandboxSettings
    from mcp_codetools.shell.sandbox import SandboxUnavailable, probe

    landlock = dataclasses.replace(SandboxSettings(), enabled=True, backend="landlock")
    try:
        expected = f"on (environment variable MCP_CODETOOLS_SANDBOX); {probe(landlock).describe()}"
    except SandboxUnavailable as exc:
        expected = f"[FAIL] settings: mcp-codetools: {exc}"
    done = doctor_here(["--sandbox-backend", "landlock"], project, {"MCP_CODETOOLS_SANDBOX": "1"})
    assert expected in done.stdout, done.stdout


def test_doctor_says_how_to_turn_the_sandbox_on_when_it_is_off(
    plan_mode_doctor: tuple[Path, Ran],
) -> None:
    from mcp_codetools.shell.sandbox_default import DEFAULT_ON_SOURCE, TURN_OFF

    _, done = plan_mode_doctor
    line = next(line for line in done.stdout.splitlines() if line.lstrip().startswith("sandbox"))
    if line.startswith("  sandbox      on ("):  # a backend on by default works here (shell/sandbox_default.py)
        assert line.startswith(f"  sandbox      on ({DEFAULT_ON_SOURCE}); ") and TURN_OFF in line, line
        return
    assert line.startswith("  sandbox      off by default: "), line
    assert "is on by default yet (--sandbox turns one on); " in line or "no sandbox backend can run here" in line, line
    assert line.endswith(("masked", ")")) or "unavailable here: " in line, line


def test_doctor_says_the_sandbox_was_turned_off_and_how(
    configured_doctor: tuple[Path, Ran],
) -> None:
    _, done = configured_doctor
    line = next(line for line in done.stdout.splitlines() if line.lstrip().startswith("sandbox"))
    assert line.startswith("  sandbox      off (--no-sandbox flag); "), line


def test_a_relative_config_file_reaches_the_scenarios_server_too(
    plan_mode_doctor: tuple[Path, Ran],
) -> None:
    project, done = plan_mode_doctor
    assert "[ok] settings: " in done.stdout and "config files read: mine.toml" in done.stdout, done.stdout
    assert f" --config {project / 'mine.toml'} --root " in done.stdout
    assert "[ok] started over stdio and completed the MCP handshake" in done.stdout, "the server took the file"


def test_a_bad_user_config_fails_doctor_as_it_stops_the_server(project: Path) -> None:
    user = project.parent / "xdg" / "mcp-codetools" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[limits]\nmax_concurency = 3\n")
    served = run([], project)
    assert served.returncode == 2
    doctor = doctor_here([], project)
    assert doctor.returncode == 1
    assert f"[FAIL] settings: {served.stderr.strip().splitlines()[-1]}" in doctor.stdout, doctor.stdout


def test_the_scenarios_server_gets_the_environment(
    plan_mode_doctor: tuple[Path, Ran],
) -> None:
    """Every MCP_CODETOOLS_* variable reaches the server doctor starts, as it reaches one a client starts."""
    _, done = plan_mode_doctor
    assert "the server is in plan mode (environment variable MCP_CODETOOLS_PERMISSION_MODE)" in done.stdout, done.stdout
    assert done.returncode == 1


def test_doctor_shows_a_rule_that_matches_nothing(
    configured_doctor: tuple[Path, Ran],
) -> None:
    _, done = configured_doctor
    warned = [line for line in done.stdout.splitlines() if "[WARN]" in line]
    assert len(warned) == 1 and "`Raed(.env)` names no tool of this server" in warned[0], done.stdout
    assert not [line for line in done.logged if "Raed" in line], "shown once, in doctor's report, not logged"
    assert "everything works" not in done.stdout and "see WARN above" in done.stdout
