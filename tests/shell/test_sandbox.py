"""The Bash sandbox, each backend run for real: what it confines, and the traps bubblewrap sets as root."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_codetools.shell.sandbox import (
    LANDLOCK_LAUNCHER,
    Sandbox,
    SandboxSettings,
    SandboxUnavailable,
    probe,
)
from tests import facilities
from tests.cmdlines import processes_with

TIMEOUT_S = 30


def backend(kind: str, **settings: object) -> Sandbox:
    try:
        return probe(SandboxSettings(enabled=True, backend=kind, **settings))  # type: ignore[arg-type]
    except SandboxUnavailable as exc:
        facilities.missing(kind, f"it does not work on this machine: {exc}")


@pytest.fixture
def outside(beyond_tmp: Path) -> Path:
    """A folder outside the roots and outside /tmp: a private /tmp would hide an escape into /tmp."""
    return beyond_tmp


def run(sandbox: Sandbox, root: Path, script: str, scratch: Path | None = None) -> subprocess.CompletedProcess[str]:
    writable = [root] + ([scratch] if scratch else [])
    env = {**os.environ, "SECRET_TOKEN": "s3cret"}
    argv, env = sandbox.wrap(["bash", "-c", script], cwd=root, writable=writable, env=env, tmpdir=scratch)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)


@pytest.fixture(params=["bwrap", "landlock", "seatbelt"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    return backend(request.param)


def test_writes_inside_the_root_work(sandbox: Sandbox, tmp_path: Path) -> None:
    done = run(sandbox, tmp_path, "echo hi > inside.txt && cat inside.txt")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "inside.txt").read_text() == "hi\n"


def test_writes_outside_the_roots_fail(sandbox: Sandbox, tmp_path: Path, outside: Path) -> None:
    done = run(sandbox, tmp_path, f"echo x > {outside}/escape.txt; mkdir {outside}/dir; touch {outside}/t")
    assert not any(outside.iterdir()), f"the sandbox wrote outside: {list(outside.iterdir())}"
    assert done.returncode != 0


def test_the_network_is_unreachable(sandbox: Sandbox, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        probe_script = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)'"
        done = run(sandbox, tmp_path, probe_script)
        assert done.returncode != 0, "a sandboxed command reached a port on the host"
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing is queued: the connection never arrived


def test_the_environment_is_an_allow_list(sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"/opt/mcp-codetools-test-bin:{os.environ['PATH']}")
    monkeypatch.setenv("MCP_CODETOOLS_CALL", "call-marker")
    done = run(sandbox, tmp_path, "printenv SECRET_TOKEN; echo path=$PATH; echo marker=$MCP_CODETOOLS_CALL")
    assert "s3cret" not in done.stdout
    # the allow-list itself gets through (bash would invent a default PATH, so look for ours)
    assert "path=/opt/mcp-codetools-test-bin:" in done.stdout
    assert "marker=call-marker" in done.stdout, "the process markers must reach the command"


@pytest.mark.linux_only
def test_bwrap_masks_credential_folders(tmp_path: Path, outside: Path) -> None:
    secret = outside / "keys"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE")
    sandbox = backend("bwrap", mask=(str(secret),))
    done = run(sandbox, tmp_path, f"cat {secret}/id_rsa; ls {secret}; echo x > {secret}/new")
    assert "PRIVATE" not in done.stdout
    assert "id_rsa" not in done.stdout
    assert sorted(p.name for p in secret.iterdir()) == ["id_rsa"]
    listing = run(sandbox, tmp_path, f"ls {secret}")
    assert listing.returncode != 0, "a masked folder must be unreadable, not an empty folder"


@pytest.mark.linux_only
def test_bwrap_cannot_remount_what_is_read_only(tmp_path: Path, outside: Path) -> None:
    sandbox = backend("bwrap")
    done = run(sandbox, tmp_path, f"mount -o remount,rw / ; mount -o remount,rw {outside}; echo x > {outside}/after")
    assert not any(outside.iterdir()), done.stdout + done.stderr


@pytest.mark.linux_only
def test_bwrap_has_a_private_tmp(tmp_path: Path) -> None:
    marker = Path("/tmp") / f"mcp-codetools-sandbox-{secrets.token_hex(4)}"
    sandbox = backend("bwrap")
    done = run(sandbox, tmp_path, f"echo x > {marker} && ls /tmp")
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the sandbox's /tmp is the host's"


@pytest.mark.linux_only
@pytest.mark.proc  # finds the leftovers in /proc
def test_bwrap_leaves_no_process_behind(tmp_path: Path) -> None:
    tag = f"sandboxed-{secrets.token_hex(4)}"
    sandbox = backend("bwrap")
    done = run(sandbox, tmp_path, f"(exec -a {tag} sleep 600 &) ; setsid bash -c 'exec -a {tag} sleep 600' & exit 0")
    assert done.returncode == 0, done.stderr
    assert not processes_with(tag, live_only=False), "a process started in the sandbox outlived it"


def test_landlock_grants_reads_around_a_hidden_path_and_nothing_beneath_it(tmp_path: Path) -> None:
    from mcp_codetools.shell.landlock import around

    (tmp_path / "keep" / "deep").mkdir(parents=True)
    (tmp_path / "keys" / "sub").mkdir(parents=True)
    (tmp_path / "note.txt").write_text("x")
    (tmp_path / "to-keys").symlink_to(tmp_path / "keys")
    granted = dict(around([str(tmp_path / "keys")]))
    assert granted[str(tmp_path / "keep")] is True and granted[str(tmp_path / "note.txt")] is False
    assert str(tmp_path / "keys") not in granted and str(tmp_path / "to-keys") not in granted
    assert not [p for p in granted if p == str(tmp_path) or p.startswith(str(tmp_path / "keys"))]
    assert not [p for p in granted if tmp_path.is_relative_to(p)], "a folder on the way would open the hidden path"
    assert granted.get("/usr") is True, "what lies elsewhere (binaries, libraries) stays readable"


def test_writes_are_granted_around_a_kept_path_from_its_writable_folder_down(tmp_path: Path) -> None:
    """A kept path need not exist: the folder it would be made in gets nothing, what is in it gets writes."""
    from mcp_codetools.shell.landlock import around

    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "objects").mkdir()
    (tmp_path / "src").mkdir()
    granted = dict(around([str(tmp_path / "mcp-codetools.toml"), str(tmp_path / ".git" / "hooks")], top=str(tmp_path)))
    assert granted == {str(tmp_path / "src"): True, str(tmp_path / ".git" / "objects"): True}


@pytest.mark.parametrize(
    "script",
    [
        "echo x >> mcp-codetools.toml",
        "echo x > .git/hooks/pre-commit",
        "rm -r .git/hooks",
        "mv .git/hooks hooks2",
        "echo x > .git/config",
    ],
)
def test_kept_paths_stay_read_only_and_missing_ones_are_not_created(
    sandbox: Sandbox, tmp_path: Path, script: str
) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "src").mkdir()
    kept = [tmp_path / "mcp-codetools.toml", tmp_path / ".git" / "hooks", tmp_path / ".git" / "config"]
    argv, env = sandbox.wrap(["bash", "-c", script], cwd=tmp_path, writable=[tmp_path], env=dict(os.environ),
                             read_only=kept)  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    # Under bubblewrap the top level takes new entries (supervisor.py): `mv` across the kept mount copies the
    # hooks to `hooks2` (a copy, which reading allows) and then fails to remove them.
    assert set(os.listdir(tmp_path)) - {"hooks2"} == {".git", "src"}
    assert os.listdir(tmp_path / ".git" / "hooks") == [] and (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert run(sandbox, tmp_path, "echo ok > src/f && cat src/f").stdout == "ok\n"


@pytest.mark.linux_only
def test_a_bwrap_background_job_gets_the_live_top_level_too(tmp_path: Path) -> None:
    """A background job (`lasting`) is kept by the supervisor like a foreground command: no frozen folder."""
    sandbox = backend("bwrap")
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    kept = [tmp_path / "mcp-codetools.toml", tmp_path / ".git" / "hooks"]
    script = (
        "echo x > mcp-codetools.toml; echo x > .git/hooks/pre-commit; touch new; "
        "echo lock > .git/index.lock && echo tmp > /tmp/t && cat new /tmp/t"
    )
    argv, env = sandbox.wrap(["bash", "-c", script], cwd=tmp_path, writable=[tmp_path], env=dict(os.environ),
                             read_only=kept, lasting=True)  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert done.stdout == "tmp\n", done.stderr
    assert sorted(os.listdir(tmp_path)) == [".git", "new"]
    assert os.listdir(tmp_path / ".git" / "hooks") == [] and (tmp_path / ".git" / "index.lock").exists()


@pytest.mark.linux_only
def test_landlock_hides_masked_paths_from_reads(tmp_path: Path, outside: Path) -> None:
    secret = outside / "keys"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE")
    (outside / "beside.txt").write_text("visible")
    sandbox = backend("landlock", mask=(str(secret),))
    done = run(sandbox, tmp_path, f"cat {outside}/beside.txt; cat {secret}/id_rsa; ls {secret}")
    assert "visible" in done.stdout and "PRIVATE" not in done.stdout and "id_rsa" not in done.stdout


@pytest.mark.linux_only
def test_landlock_commands_signal_only_their_own_processes(tmp_path: Path) -> None:
    sandbox = backend("landlock")
    if sandbox.landlock_abi < 6:
        pytest.skip(f"signal scoping needs Landlock ABI 6 (this kernel has {sandbox.landlock_abi})")
    outsider = subprocess.Popen(["sleep", "30"])  # stands for the server, the client, the user's programs
    try:
        done = run(sandbox, tmp_path, f"kill -TERM {outsider.pid}; echo kill=$?; sleep 30 & kill $! && echo own=ok")
        assert "kill=1" in done.stdout and "own=ok" in done.stdout, done.stdout + done.stderr
        assert outsider.poll() is None, "a sandboxed command signalled a process outside the sandbox"
    finally:
        outsider.kill()
        outsider.wait()


@pytest.mark.linux_only
def test_landlock_refuses_to_run_a_command_it_cannot_confine(tmp_path: Path) -> None:
    backend("landlock")
    marker = tmp_path / "ran"
    launcher = [*LANDLOCK_LAUNCHER, "--write", str(tmp_path / "missing")]
    done = subprocess.run([*launcher, "--", "touch", str(marker)], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 126 and "was not run" in done.stderr
    assert not marker.exists()


def test_an_unknown_backend_machine_is_refused_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools.shell import sandbox as module

    monkeypatch.setattr(module, "find_bwrap", lambda: None)
    monkeypatch.setattr(module, "landlock_abi", lambda: 0)
    monkeypatch.setattr(module.seatbelt, "SANDBOX_EXEC", "/nonexistent/sandbox-exec")
    with pytest.raises(SandboxUnavailable, match="no sandbox backend can run here"):
        probe(SandboxSettings(enabled=True))


@pytest.mark.parametrize(
    ("first", "tries", "works"),
    [
        ('bwrap: Can\'t bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount "/newroot/x"', 2, True),
        ("bwrap: Creating new namespace failed: Operation not permitted", 1, False),
    ],
)
def test_bwrap_is_tried_again_only_after_a_mount_that_changed_under_it(
    monkeypatch: pytest.MonkeyPatch, first: str, tries: int, works: bool
) -> None:
    from mcp_codetools.shell import sandbox as module

    outcomes = [first, None]
    ran: list[list[str]] = []
    monkeypatch.setattr(module, "find_bwrap", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(module, "compiled_launcher", lambda folder=None: None)
    monkeypatch.setattr(module, "_try", lambda argv: ran.append(argv) or outcomes[len(ran) - 1])
    if works:
        assert probe(SandboxSettings(enabled=True, backend="bwrap")).backend == "bwrap"
    else:
        with pytest.raises(SandboxUnavailable, match="Creating new namespace failed"):
            probe(SandboxSettings(enabled=True, backend="bwrap"))
    assert len(ran) == tries and ran[0] == ran[-1]


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools.settings import settings_from_env

    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX", "1")
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX_NETWORK", "yes")
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX_BACKEND", "Landlock")
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX_MASK", "~/.vault, /srv/keys,,")
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX_ENV", "CI, GOPATH")
    assert settings_from_env(["/tmp"]).sandbox == SandboxSettings(
        enabled=True, network=True, backend="landlock", mask=("~/.vault", "/srv/keys"), env=("CI", "GOPATH")
    )


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("MCP_CODETOOLS_SANDBOX", "maybe", "not an on/off value"),
        ("MCP_CODETOOLS_SANDBOX_NETWORK", "2", "not an on/off value"),
        ("MCP_CODETOOLS_SANDBOX_BACKEND", "docker", "not a sandbox backend"),
        ("MCP_CODETOOLS_SANDBOX_ENV", "CI,A-B", "not variable names"),
    ],
)
def test_bad_settings_are_refused_not_defaulted(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, said: str
) -> None:
    from mcp_codetools.settings import settings_from_env

    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=said):
        settings_from_env(["/tmp"])


def test_the_flags_set_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools import cli
    from mcp_codetools.settings import load_settings

    for name in ("MCP_CODETOOLS_SANDBOX", "MCP_CODETOOLS_SANDBOX_NETWORK", "MCP_CODETOOLS_SANDBOX_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    args = cli._parser().parse_args(["--sandbox", "--sandbox-network", "--sandbox-backend", "landlock"])
    settings = load_settings(["/tmp"], flags=cli.flag_values(args), read_files=False).settings
    assert settings.sandbox == SandboxSettings(enabled=True, network=True, backend="landlock")
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["--sandbox-backend", "docker"])


def test_a_bad_environment_value_stops_the_server_with_a_message(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_CODETOOLS_SANDBOX": "perhaps"}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "--root", str(tmp_path)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "environment variable MCP_CODETOOLS_SANDBOX: not an on/off value" in done.stderr
    assert "'perhaps'" in done.stderr


def test_a_symlinked_root_is_bound_by_its_real_path(sandbox: Sandbox, tmp_path: Path, outside: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = outside / "link"  # outside /tmp: bwrap's private /tmp would hide a link kept there
    link.symlink_to(real)
    done = run(sandbox, link, f"echo via-link > {link}/a.txt && echo via-real > {real}/b.txt")
    assert done.returncode == 0, done.stderr
    assert (real / "a.txt").read_text() == "via-link\n" and (real / "b.txt").read_text() == "via-real\n"


@pytest.mark.linux_only
def test_bwrap_never_shows_missing_kept_names_and_the_folder_takes_the_rest(tmp_path: Path) -> None:
    """No placeholder exists, inside or outside, even mid-command; every other new entry is made."""
    sandbox = backend("bwrap")
    (tmp_path / "a.py").write_text("x\n")
    kept = [tmp_path / ".envrc", tmp_path / ".vscode"]
    script = "ls -A; read -r _; echo x > .envrc; echo made > new.txt; rm a.py; mkdir .vscode; ls -A"
    argv, env = sandbox.wrap(["bash", "-c", script], cwd=tmp_path, writable=[tmp_path], env=dict(os.environ),
                             read_only=kept)  # fmt: skip
    with subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as child:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().strip() == "a.py"  # `ls -A` printed: the command is waiting
        assert sorted(os.listdir(tmp_path)) == ["a.py"]
        child.stdin.write("go\n")
        child.stdin.close()
        assert child.stdout.read().split() == ["new.txt"]
        child.wait(timeout=TIMEOUT_S)
    assert sorted(os.listdir(tmp_path)) == ["new.txt"]


@pytest.mark.linux_only
def test_bwrap_pins_the_folders_on_the_way_to_a_kept_path(tmp_path: Path) -> None:
    """`.git` holds kept paths: it cannot be moved aside for a new, writable `.git/hooks`."""
    sandbox = backend("bwrap")
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    kept = [tmp_path / ".git" / "hooks", tmp_path / ".envrc"]
    argv, env = sandbox.wrap(["bash", "-c", "mv .git .git-old; mkdir -p .git/hooks; touch .git/hooks/pre-commit"],
                             cwd=tmp_path, writable=[tmp_path], env=dict(os.environ), read_only=kept)  # fmt: skip
    subprocess.run(argv, env=env, capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert sorted(os.listdir(tmp_path)) == [".git"] and os.listdir(tmp_path / ".git" / "hooks") == []
