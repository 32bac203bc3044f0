"""Bash through the real tool with the sandbox on: what it confines, what still works, and refusing to start
without it. Each backend is run for real (Seatbelt on macOS); one that does not work on this machine is skipped."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from mcp_codetools import cli
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import SandboxSettings, Settings
from mcp_codetools.shell import sandbox as sandbox_module
from mcp_codetools.shell import spawning
from mcp_codetools.shell.sandbox import Sandbox, SandboxUnavailable, probe
from tests import facilities
from tests.cmdlines import processes_with
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

WAIT_S = 30


_WORKING: dict[tuple[str, tuple[tuple[str, object], ...]], Sandbox | SandboxUnavailable] = {}
"""Each backend's probe outcome, found once per test process as `prepared` finds it once per server."""


def working(backend: str, **options: object) -> Sandbox:
    """`backend` working here, else skipped (or failed where CI requires it) with the probe's reason.

    The probe (a confined `true`, ~0.06 CPU-s) ran for each of ~250 tests that ask; its outcome is kept. A test
    of the probe itself calls `probe`.
    """
    key = (backend, tuple(sorted(options.items())))
    found = _WORKING.get(key)
    if found is None:
        try:
            found = probe(SandboxSettings(enabled=True, backend=backend, **options))  # type: ignore[arg-type]
        except SandboxUnavailable as exc:
            found = exc
        _WORKING[key] = found
    if isinstance(found, SandboxUnavailable):
        facilities.missing(backend, f"it does not work on this machine: {found}")
    return found


@pytest.fixture(params=["bwrap", "landlock", "seatbelt"])
def backend(request: pytest.FixtureRequest) -> str:
    working(request.param)
    return str(request.param)


@pytest.fixture
def far(beyond_tmp: Path) -> Path:
    """A folder outside the roots and outside /tmp: bwrap's private /tmp would hide an escape into /tmp."""
    return beyond_tmp


@pytest.fixture
def secret_folder(far: Path) -> Path:
    folder = far / "keys"
    folder.mkdir()
    (folder / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    return folder


@pytest.fixture
def settings(root: Path, backend: str, secret_folder: Path) -> Settings:
    sandbox = SandboxSettings(enabled=True, backend=backend, mask=(str(secret_folder),))  # type: ignore[arg-type]
    return Settings(roots=(root,), sandbox=sandbox)


STRAYS = "(exec -a {tag} sleep 600 &) ; setsid bash -c 'exec -a {tag} sleep 600' & exec -a {tag} sleep 600 &"
"""A double-forked sleep, one that left the group and session, and a plain background one."""


# --- what still works ---------------------------------------------------------------------------------


async def test_writes_inside_the_root_work_and_the_cwd_follows_cd(call: Caller, root: Path) -> None:
    (root / "src").mkdir()  # a root's top level is fixed inside the sandbox: see the protected-path tests
    (root / "notes.txt").write_text("", encoding="utf-8")
    command = "echo top >> notes.txt && mkdir -p src/sub && cd src/sub && echo hi > f.txt && pwd"
    text = await call.ok("Bash", {"command": command})
    assert text == str(root / "src" / "sub")
    assert (root / "src" / "sub" / "f.txt").read_text() == "hi\n"
    assert (root / "notes.txt").read_text() == "top\n"
    out = await call("Bash", {"command": "pwd"})
    assert out.text == str(root / "src" / "sub") and out.meta["cwd"] == str(root / "src" / "sub")


async def test_a_heredoc_and_temporary_files_work(call: Caller) -> None:
    text = await call.ok("Bash", {"command": "f=$(mktemp) && echo tmp-ok > $f && cat $f && cat <<EOF\nheredoc\nEOF"})
    assert text == "tmp-ok\nheredoc"


async def test_the_session_and_call_markers_reach_the_command(call: Caller, session: CodeSession) -> None:
    text = await call.ok("Bash", {"command": f"echo ${spawning.SESSION_VAR}; echo ${{#{spawning.CALL_VAR}}}"})
    marker, call_length = text.split()
    assert marker == session.process_marker.value
    assert int(call_length) == 32


async def test_the_read_only_classifier_and_stale_file_checks_are_unchanged(call: Caller, root: Path) -> None:
    (root / "a.txt").write_text("one\n", encoding="utf-8")
    out = await call("Bash", {"command": "cat a.txt"})
    assert out.meta["readOnly"] is True and out.text == "one"
    await call.ok("Read", {"file_path": str(root / "a.txt")})
    out = await call("Bash", {"command": "echo two >> a.txt"})
    assert out.meta["readOnly"] is False
    assert out.meta["staleReadFiles"] == [str(root / "a.txt")]


async def test_the_masks_are_found_once_per_session(
    call: Caller, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox_module.prepared(settings.sandbox)  # the start-up probe (it scans once too)
    scans: list[object] = []
    real = sandbox_module.masked_paths

    def counted(*args: object, **kwargs: object) -> object:
        scans.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox_module, "masked_paths", counted)
    for _ in range(3):
        await call.ok("Bash", {"command": "true"})
    assert len(scans) == 1


async def test_writable_folders_follow_the_client_roots(call: Caller, session: CodeSession, far: Path) -> None:
    """A root the client adds is writable from the next command; one it drops is not any more."""
    added = far / "client-root"
    (added / "src").mkdir(parents=True)
    await call.ok("Bash", {"command": "true"})  # the sandbox is set up before the roots change
    session.workspace.set_client_roots([added])
    await call.ok("Bash", {"command": f"echo in > {added}/src/a.txt"})
    assert (added / "src" / "a.txt").read_text() == "in\n"
    (far / "other-root").mkdir()
    session.workspace.set_client_roots([far / "other-root"])  # the client now lists another folder instead
    out = await call("Bash", {"command": f"echo again > {added}/src/b.txt"})
    assert out.is_error and not (added / "src" / "b.txt").exists(), out.text


# --- what is confined ---------------------------------------------------------------------------------


async def test_writes_outside_the_roots_fail(call: Caller, far: Path) -> None:
    out = await call("Bash", {"command": f"echo x > {far}/escape.txt; mkdir {far}/dir; touch {far}/t"})
    assert out.is_error
    assert not any(p.name != "keys" for p in far.iterdir()), f"the sandbox wrote outside: {list(far.iterdir())}"


async def test_a_host_tcp_port_is_unreachable(call: Caller) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        script = f"import socket; socket.create_connection(('127.0.0.1', {port}), 5)"
        out = await call("Bash", {"command": f'{sys.executable} -c "{script}"'})
        assert out.is_error, "a sandboxed command reached a port on the host"
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing is queued: the connection never arrived


async def test_a_masked_folder_cannot_be_read(call: Caller, secret_folder: Path) -> None:
    out = await call("Bash", {"command": f"cat {secret_folder}/id_rsa; ls {secret_folder}"})
    assert out.is_error
    assert "PRIVATE" not in out.text and "id_rsa\n" not in out.text
    listing = await call("Bash", {"command": f"ls {secret_folder}"})
    assert listing.is_error, "a masked folder must be unreadable, not an empty folder"


async def test_what_lies_around_a_masked_folder_stays_readable(call: Caller, far: Path, secret_folder: Path) -> None:
    """Beside the mask: files and folders next to it, above it and elsewhere (binaries, libraries) read fine."""
    (far / "notes.txt").write_text("beside the keys\n", encoding="utf-8")
    (far / "docs").mkdir()
    (far / "docs" / "a.md").write_text("deeper\n", encoding="utf-8")
    text = await call.ok(
        "Bash",
        {
            "command": f"cat {far}/notes.txt {far}/docs/a.md && ls {far}/docs && head -c 4 /etc/os-release >/dev/null"
            " && echo ok"
        },
    )
    assert text == "beside the keys\ndeeper\na.md\nok"
    out = await call("Bash", {"command": f"cat {secret_folder}/../keys/id_rsa"})
    assert out.is_error and "PRIVATE" not in out.text


async def test_a_symlink_beside_a_masked_folder_does_not_open_it(call: Caller, far: Path, secret_folder: Path) -> None:
    (far / "shortcut").symlink_to(secret_folder)
    out = await call("Bash", {"command": f"cat {far}/shortcut/id_rsa"})
    assert out.is_error and "PRIVATE" not in out.text


@pytest.mark.linux_only  # bwrap only
async def test_a_read_only_folder_cannot_be_remounted(call: Caller, backend: str, far: Path) -> None:
    if backend != "bwrap":
        pytest.skip("remounting is a mount-namespace matter (Landlock refuses it anyway: no_new_privs)")
    await call("Bash", {"command": f"mount -o remount,rw / ; mount -o remount,rw {far} ; echo x > {far}/after"})
    assert not (far / "after").exists()


@pytest.mark.proc  # finds the leftovers in /proc
async def test_no_process_is_left_behind_after_the_call(call: Caller) -> None:
    tag = f"sbx-call-{secrets.token_hex(4)}"
    out = await call(
        "Bash", {"command": STRAYS.format(tag=tag) + f'\nuntil [ $(pgrep -c -x -f "{tag} 600") -ge 3 ]; do :; done'}
    )
    assert not out.is_error, out.text
    assert processes_with(tag) == []


@pytest.mark.proc  # finds the leftovers in /proc
async def test_no_process_is_left_behind_after_killshell(call: Caller, session: CodeSession) -> None:
    tag = f"sbx-job-{secrets.token_hex(4)}"
    out = await call("Bash", {"command": STRAYS.format(tag=tag) + "\nwait", "run_in_background": True})
    job = session.jobs.get(str(out.meta["backgroundTaskId"]))
    assert job is not None
    with anyio.fail_after(WAIT_S):
        while len(processes_with(tag)) < 3:  # noqa: ASYNC110 - bounded wait for the three sleeps to start
            await anyio.sleep(0.01)
    await call.ok("KillShell", {"shell_id": job.id})
    with anyio.fail_after(WAIT_S):
        await job.done.wait()
    assert processes_with(tag) == []


@pytest.mark.proc  # finds the leftovers in /proc
async def test_a_timeout_stops_the_sandboxed_command(call: Caller) -> None:
    tag = f"sbx-timeout-{secrets.token_hex(4)}"
    out = await call.fails(
        "Bash", {"command": f"(exec -a {tag} sleep 600 &) ; exec -a {tag} sleep 600", "timeout": 500}
    )
    assert out.text.startswith("Command timed out after 500ms")
    assert processes_with(tag) == []


async def test_exit_codes_come_through(call: Caller) -> None:
    out = await call.fails("Bash", {"command": "echo out; exit 3"})
    assert out.meta["exitCode"] == 3 and out.text.startswith("Exit code 3\nout")


# --- the thread that spawns bwrap -----------------------------------------------------------------------


def test_bwrap_dies_with_the_thread_that_spawned_it(tmp_path: Path) -> None:
    """Why sandboxed commands are spawned on the event loop's thread: this is the trap."""
    sandbox = working("bwrap")
    argv, env = sandbox.wrap(
        ["bash", "-c", "echo ready; exec sleep 600"], cwd=tmp_path, writable=[tmp_path], env=dict(os.environ)
    )
    started: list[subprocess.Popen[bytes]] = []

    def spawn_and_exit() -> None:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        started.append(proc)
        assert proc.stdout is not None
        proc.stdout.readline()  # the command runs: bwrap set its parent-death signal before starting it

    thread = threading.Thread(target=spawn_and_exit)
    thread.start()
    thread.join(WAIT_S)
    proc = started[0]
    try:
        assert proc.wait(WAIT_S) == -9, "bwrap was expected to be killed when its spawning thread exited"
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


async def test_a_sandboxed_spawn_off_the_loop_thread_is_refused(session: CodeSession, root: Path) -> None:
    confinement = session.confinement
    assert confinement is not None
    read, write = os.pipe()
    try:
        with pytest.raises(RuntimeError, match="event loop's thread"):
            await anyio.to_thread.run_sync(
                lambda: spawning.spawn("true", cwd=root, env=dict(os.environ), output_fd=write, confinement=confinement)
            )
    finally:
        os.close(read)
        os.close(write)


async def test_a_background_job_outlives_the_call_and_its_threads(call: Caller, session: CodeSession) -> None:
    out = await call("Bash", {"command": "echo up; exec sleep 600", "run_in_background": True})
    job = session.jobs.get(str(out.meta["backgroundTaskId"]))
    assert job is not None
    for _ in range(3):  # other calls come and go, in worker threads too
        await call.ok("Bash", {"command": "true"})
        await anyio.to_thread.run_sync(lambda: None)
    with anyio.fail_after(WAIT_S):
        while "up" not in job.log_path.read_text():  # noqa: ASYNC110 - bounded wait for the job's output
            await anyio.sleep(0.01)
    assert job.running
    await call.ok("KillShell", {"shell_id": job.id})
    assert job.state == "killed"


# --- no backend ------------------------------------------------------------------------------------------


@pytest.fixture
def no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda: None)
    monkeypatch.setattr(sandbox_module, "landlock_abi", lambda: 0)
    monkeypatch.setattr(sandbox_module.seatbelt, "SANDBOX_EXEC", "/nonexistent/sandbox-exec")
    monkeypatch.setattr(sandbox_module, "_probed", {})


@pytest.mark.usefixtures("no_backend")
def test_the_server_refuses_to_start_without_a_working_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--sandbox", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no sandbox backend can run here" in err and "without --sandbox" in err


@pytest.mark.usefixtures("no_backend")
async def test_a_session_without_a_working_backend_runs_nothing(pipeline: Pipeline, tmp_path: Path) -> None:
    session = CodeSession(Settings(roots=(tmp_path,), sandbox=SandboxSettings(enabled=True)))
    try:
        call = Caller(pipeline, session)
        out = await call.fails("Bash", {"command": "touch ran"})
        assert "was not run" in out.text and "no sandbox backend can run here" in out.text
        await call.fails("Bash", {"command": "touch ran", "run_in_background": True})
        assert not (tmp_path / "ran").exists()
    finally:
        await session.aclose()
