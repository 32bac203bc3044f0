"""Choosing the sandbox backend by a trial run, with the failures of a container simulated: user namespaces
blocked (bwrap refuses), Landlock's syscalls answering while its launcher cannot confine, no launcher at all."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_codetools import cli, doctor
from mcp_codetools.settings import SandboxSettings, load_settings
from mcp_codetools.shell import sandbox as module
from mcp_codetools.shell.sandbox import NONE_CAN_RUN, SandboxUnavailable, prepared, probe

BWRAP_REFUSAL = "bwrap: No permissions to create a new namespace"
LAUNCHER_REFUSAL = "landlock launcher: cannot confine the command ([Errno 1] Operation not permitted); it was not run"


def _script(tmp_path: Path, name: str, body: str) -> tuple[str, ...]:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return (sys.executable, "-I", "-S", str(path))


@pytest.fixture
def container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """bwrap that fails as it does without user namespaces, and a kernel that reports Landlock ABI 7."""
    bwrap = tmp_path / "bwrap"
    bwrap.write_text(f"#!/bin/sh\necho '{BWRAP_REFUSAL}' >&2\nexit 1\n", encoding="utf-8")
    bwrap.chmod(0o755)
    monkeypatch.setattr(module, "find_bwrap", lambda: str(bwrap))
    monkeypatch.setattr(module, "landlock_abi", lambda: 7)
    monkeypatch.setattr(module, "_probed", {})
    return tmp_path


@pytest.fixture
def launcher_refuses(container: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Landlock launcher fails closed, as it does where a seccomp filter denies landlock_restrict_self."""
    body = f"import sys\nsys.stderr.write({LAUNCHER_REFUSAL!r} + '\\n')\nsys.exit(126)\n"
    monkeypatch.setattr(module, "LANDLOCK_LAUNCHER", _script(container, "refuse.py", body))


def test_landlock_that_cannot_confine_is_not_chosen(launcher_refuses: None) -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        probe(SandboxSettings(enabled=True))
    message = str(caught.value)
    assert message.startswith(f"{NONE_CAN_RUN}: ")
    assert BWRAP_REFUSAL in message and "user namespaces" in message
    assert "Landlock (ABI 7) cannot confine a command here" in message and "Operation not permitted" in message
    assert "without --sandbox" in message


def test_a_launcher_that_cannot_start_is_not_chosen(container: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "LANDLOCK_LAUNCHER", (str(container / "no-such-python"),))
    with pytest.raises(SandboxUnavailable, match=f"^{NONE_CAN_RUN}: .*Landlock \\(ABI 7\\) cannot confine"):
        probe(SandboxSettings(enabled=True, backend="landlock"))


def test_auto_falls_back_to_landlock_when_its_trial_runs(container: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = container / "ran"
    body = f"import sys\nopen({str(ran)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
    monkeypatch.setattr(module, "LANDLOCK_LAUNCHER", _script(container, "accept.py", body))
    found = probe(SandboxSettings(enabled=True))
    assert found.backend == "landlock" and found.landlock_abi == 7 and found.supervised
    trial = ran.read_text(encoding="utf-8")  # a folder and a file made, written and removed through the supervisor
    assert "--no-network --write " in trial and "--supervise -- /bin/sh -c mkdir " in trial and "&& rm " in trial


def test_landlock_without_its_supervisor_freezes_the_folders(container: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No seccomp user notification (Linux < 5.9): the supervised trial fails, plain Landlock is used, and said."""
    ran = container / "ran"
    body = (
        "import sys\n"
        "if '--supervise' in sys.argv:\n    sys.exit('no seccomp user notification here')\n"
        f"open({str(ran)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
    )
    monkeypatch.setattr(module, "LANDLOCK_LAUNCHER", _script(container, "plain.py", body))
    found = probe(SandboxSettings(enabled=True, backend="landlock"))
    assert found.backend == "landlock" and not found.supervised
    assert ran.read_text(encoding="utf-8").endswith("--no-network -- true")  # a real confined `true` was run
    assert any("no seccomp user notification here" in note and "frozen" in note for note in found.notes)
    wrapped, _ = found.wrap(["true"], cwd=container, writable=[container], env={})
    assert "--supervise" not in wrapped


def test_no_landlock_and_no_namespaces_name_both_reasons(container: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "landlock_abi", lambda: 0)
    with pytest.raises(SandboxUnavailable) as caught:
        probe(SandboxSettings(enabled=True))
    assert BWRAP_REFUSAL in str(caught.value) and "Landlock is not available in this kernel" in str(caught.value)


def test_the_outcome_is_probed_once_per_process(launcher_refuses: None, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[SandboxSettings] = []
    real_probe = module.probe

    def counting(settings: SandboxSettings) -> module.Sandbox:
        calls.append(settings)
        return real_probe(settings)

    monkeypatch.setattr(module, "probe", counting)
    wanted = SandboxSettings(enabled=True)
    for _ in range(3):  # fails closed every time, from the one trial
        with pytest.raises(SandboxUnavailable, match=f"^{NONE_CAN_RUN}: "):
            prepared(wanted)
    assert len(calls) == 1
    assert prepared(SandboxSettings()) is None and len(calls) == 1  # off: nothing is tried


@pytest.mark.usefixtures("launcher_refuses")
def test_the_start_up_line_says_it_plainly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--sandbox", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith(f"mcp-codetools: {NONE_CAN_RUN}: ")


@pytest.mark.usefixtures("launcher_refuses")
@pytest.mark.parametrize(("asked", "line"), [("0", "sandbox      off ("), ("1", "sandbox      on (")])
def test_doctor_says_it_plainly(asked: str, line: str, tmp_path: Path) -> None:
    loaded = load_settings([str(tmp_path)], environ={"MCP_CODETOOLS_SANDBOX": asked}, read_files=False)
    out = doctor.sandbox_line(loaded)
    assert out.startswith(line) and f"unavailable here: {NONE_CAN_RUN}: " in out and BWRAP_REFUSAL in out


@pytest.mark.usefixtures("launcher_refuses")
def test_doctor_fails_when_the_sandbox_is_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = cli._parser().parse_args(["doctor", "--sandbox", "--root", str(tmp_path)])
    assert doctor._start_up_ok(lambda: cli.start_up(args).loaded) is None
    out = capsys.readouterr().out
    assert out.startswith(f"  [FAIL] settings: mcp-codetools: {NONE_CAN_RUN}: ") and BWRAP_REFUSAL in out
