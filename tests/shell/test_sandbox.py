"""The Bash sandbox, each backend run for real: what it confines, and the traps bubblewrap sets as root."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_codetools.shell.sandbox import LANDLOCK_LAUNCHER, Sandbox, SandboxSettings, SandboxUnavailable, probe

TIMEOUT_S = 30


def backend(kind: str, **settings: object) -> Sandbox:
    try:
        return probe(SandboxSettings(enabled=True, backend=kind, **settings))  # type: ignore[arg-type]
    except SandboxUnavailable as exc:
        pytest.skip(f"{kind} does not work on this machine: {exc}")


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the roots and outside /tmp: a private /tmp would hide an escape into /tmp."""
    folder = Path.home() / ".cache" / f"mcp-codetools-sandbox-test-{secrets.token_hex(4)}"
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(sandbox: Sandbox, root: Path, script: str, scratch: Path | None = None) -> subprocess.CompletedProcess[str]:
    writable = [root] + ([scratch] if scratch else [])
    env = {**os.environ, "SECRET_TOKEN": "s3cret"}
    argv, env = sandbox.wrap(["bash", "-c", script], cwd=root, writable=writable, env=env, tmpdir=scratch)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)


@pytest.fixture(params=["bwrap", "landlock"])
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


def test_the_environment_is_an_allow_list(sandbox: Sandbox, tmp_path: Path) -> None:
    done = run(sandbox, tmp_path, "printenv SECRET_TOKEN; echo path=$PATH")
    assert "s3cret" not in done.stdout
    assert "path=/" in done.stdout


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


def test_bwrap_cannot_remount_what_is_read_only(tmp_path: Path, outside: Path) -> None:
    sandbox = backend("bwrap")
    done = run(sandbox, tmp_path, f"mount -o remount,rw / ; mount -o remount,rw {outside}; echo x > {outside}/after")
    assert not any(outside.iterdir()), done.stdout + done.stderr


def test_bwrap_has_a_private_tmp(tmp_path: Path) -> None:
    marker = Path("/tmp") / f"mcp-codetools-sandbox-{secrets.token_hex(4)}"
    sandbox = backend("bwrap")
    done = run(sandbox, tmp_path, f"echo x > {marker} && ls /tmp")
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "the sandbox's /tmp is the host's"


def test_bwrap_leaves_no_process_behind(tmp_path: Path) -> None:
    tag = f"sandboxed-{secrets.token_hex(4)}"
    sandbox = backend("bwrap")
    done = run(sandbox, tmp_path, f"(exec -a {tag} sleep 600 &) ; setsid bash -c 'exec -a {tag} sleep 600' & exit 0")
    assert done.returncode == 0, done.stderr
    assert not _processes_tagged(tag), "a process started in the sandbox outlived it"


def _processes_tagged(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if tag.encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_landlock_refuses_to_run_a_command_it_cannot_confine(tmp_path: Path) -> None:
    backend("landlock")
    marker = tmp_path / "ran"
    launcher = [sys.executable, "-I", "-m", LANDLOCK_LAUNCHER, "--write", str(tmp_path / "missing")]
    done = subprocess.run([*launcher, "--", "touch", str(marker)], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 126 and "was not run" in done.stderr
    assert not marker.exists()


def test_an_unknown_backend_machine_is_refused_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools.shell import sandbox as module

    monkeypatch.setattr(module, "find_bwrap", lambda: None)
    monkeypatch.setattr(module, "landlock_abi", lambda: 0)
    with pytest.raises(SandboxUnavailable, match="no backend works"):
        probe(SandboxSettings(enabled=True))
