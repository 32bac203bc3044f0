"""Bash on the `container` backend, for real: one container per session, the roots at their own paths,
processes stopped inside it, nothing left behind. Skipped, with the reason, where Docker's daemon or a local
image cannot be had (`.ci/container-lane` starts the daemon and builds `mcp-codetools-ci:*` in CI)."""

from __future__ import annotations

import dataclasses
import os
import resource
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Literal

import anyio
import pytest

from mcp_codetools import doctor
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import SandboxSettings, Settings, load_settings
from mcp_codetools.shell import container as containers
from mcp_codetools.shell import procs
from mcp_codetools.shell import sandbox as sandbox_module
from mcp_codetools.shell.sandbox import NONE_CAN_RUN, SandboxUnavailable, probe
from tests import facilities
from tests.conftest import Caller

pytestmark = [pytest.mark.anyio, pytest.mark.serial]  # Docker's daemon: one container test at a time

WAIT_S = 60
CLI_S = 30


_ENGINE = ["docker"]
"""The engine the module's tests drive now (set by the `image` fixture, one engine at a time)."""


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    """The engine's command line (Docker's or Podman's: the backend relies on what they share)."""
    return subprocess.run([_ENGINE[0], *args], capture_output=True, text=True, timeout=CLI_S, stdin=subprocess.DEVNULL)


def _find_image(engine: str) -> str:
    """The image to run: MCP_CODETOOLS_TEST_IMAGE, else the container lane's; skips when there is none."""
    if shutil.which(engine) is None:
        facilities.missing(engine, "no such command (the container lane installs docker.io; Debian's podman: podman)")
    try:
        info = _docker("info", "--format", "{{.Host.OCIRuntime.Name}}" if engine == "podman" else "{{.ServerVersion}}")
    except subprocess.TimeoutExpired:
        facilities.missing(engine, "it did not answer")
    if info.returncode != 0:
        facilities.missing(engine, f"it cannot run containers here: {info.stderr.strip()[:200]}")
    wanted = os.environ.get("MCP_CODETOOLS_TEST_IMAGE")
    if wanted:
        return wanted
    listed = _docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    listed = [name for name in listed if name.rpartition("/")[2].startswith("mcp-codetools-ci:")]
    if not listed:
        facilities.missing(
            engine,
            f"no local image for {engine}: run .ci/container-lane (for podman, `podman import` its root "
            "filesystem tarball), or set MCP_CODETOOLS_TEST_IMAGE",
        )
    return min(listed, key=len)  # the base image, without the test dependencies


@pytest.fixture(scope="module", params=["docker", "podman"])
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Each engine in turn; for rootful Podman, limits its runtime can set.

    Rootful Podman asks for nofile 1048576 and nproc 4194304, which runc cannot set where the server
    lacks CAP_SYS_RESOURCE (in a container, as here): the server's own nofile, and an nproc below the
    caller's, are given in a containers.conf instead (the pids limit is the setting that counts).
    """
    name: str = request.param
    _ENGINE[0] = name
    with pytest.MonkeyPatch.context() as patch:
        if name == "podman":
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            conf = tmp_path_factory.mktemp("podman") / "containers.conf"
            conf.write_text(
                f'[containers]\ndefault_ulimits = ["nofile={soft}:{hard}", "nproc=16384:16384"]\n', encoding="utf-8"
            )
            patch.setenv("CONTAINERS_CONF", str(conf))
        yield name
    _ENGINE[0] = "docker"


@pytest.fixture(scope="module")
def image(engine: str) -> str:
    return _find_image(engine)


@pytest.fixture
def boxed(image: str, engine: Literal["docker", "podman"]) -> SandboxSettings:
    return SandboxSettings(enabled=True, backend="container", engine=engine, image=image, memory="1g", pids=256, cpus=1)


@pytest.fixture
def settings(root: Path, boxed: SandboxSettings) -> Settings:
    return Settings(roots=(root,), sandbox=boxed)


@pytest.fixture
async def session(settings: Settings) -> AsyncIterator[CodeSession]:
    code_session = CodeSession(settings)
    yield code_session
    await code_session.aclose()
    box = _box(code_session)
    if box is not None:
        assert _docker("ps", "-aq", "--filter", f"name={box.name}").stdout.strip() == ""


@pytest.fixture
def host_blind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server cannot see the container's processes (an engine in a VM, as on macOS): only what is done
    inside the container can stop them, so the host's marker and descendant scans find nothing."""
    monkeypatch.setattr(procs, "scan", lambda name, value, since=None: ([], []))
    monkeypatch.setattr(procs, "descendants", lambda pid: [])


def _box(session: CodeSession) -> containers.SessionContainer | None:
    confinement = session._confinement
    return None if confinement is None else confinement.container


def _processes(session: CodeSession) -> str:
    box = _box(session)
    assert box is not None
    return _docker("exec", box.name, "ps", "-eo", "args").stdout


async def test_commands_run_in_the_container_on_the_same_paths(call: Caller, session: CodeSession, root: Path) -> None:
    (root / "sub").mkdir()
    assert "sleep infinity" in await call.ok("Bash", {"command": "tr '\\0' ' ' < /proc/1/cmdline"})
    assert (await call.ok("Bash", {"command": "id -u; id -g"})).split() == [str(os.getuid()), str(os.getgid())]
    (root / "from-host.txt").write_text("written outside\n", encoding="utf-8")
    assert "written outside" in await call.ok("Bash", {"command": "cat from-host.txt"})
    await call.ok("Bash", {"command": f"echo written inside > {root}/sub/from-box.txt"})
    assert (root / "sub" / "from-box.txt").read_text(encoding="utf-8") == "written inside\n"
    await call.ok("Bash", {"command": "mkdir -p sub/deeper && cd sub/deeper"})
    assert (await call.ok("Bash", {"command": "pwd"})).strip() == str(root / "sub" / "deeper")
    out = await call.fails("Bash", {"command": "echo out; echo err >&2; exit 3"})
    assert "Exit code 3" in out.text and "out" in out.text and "err" in out.text


async def test_a_link_left_for_the_cwd_report_is_not_followed(
    call: Caller, session: CodeSession, root: Path, outside: Path
) -> None:
    (root / "elsewhere").mkdir()
    (outside / "planted").write_text(f"{root / 'elsewhere'}\n", encoding="utf-8")
    await call.ok("Bash", {"command": "true"})  # the container runs
    box = _box(session)
    assert box is not None
    # The command swaps its own cwd report for a link to a file that only the host can see.
    await call.ok("Bash", {"command": f"ln -sf {outside / 'planted'} {box.state_dir}/$MCP_CODETOOLS_CALL.cwd"})
    assert (await call.ok("Bash", {"command": "pwd"})).strip() == str(root)


async def test_protected_paths_are_read_only_in_the_container(call: Caller, root: Path) -> None:
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / "docs").mkdir()
    out = await call("Bash", {"command": "echo '[core] fsmonitor = evil' >> .git/config; touch .git/hooks/pre-commit"})
    assert out.is_error
    assert (root / ".git" / "config").read_text(encoding="utf-8") == "[core]\n"
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    await call.ok("Bash", {"command": "echo fine > docs/notes.txt"})  # the rest of the root stays writable
    # A protected path that did not exist when the container started cannot be made either (the supervisor).
    out = await call("Bash", {"command": "mkdir -p .claude && echo '{}' > .claude/settings.json"})
    assert out.is_error and "Permission denied" in out.text, out.text  # refused, not made and removed
    assert not (root / ".claude").exists()
    # The root's top level takes new entries, removals and renames all the same.
    await call.ok("Bash", {"command": "echo 1 > new.txt && mkdir build && mv new.txt build/ && rm -r build"})


async def test_no_network_and_the_limits_hold(call: Caller, session: CodeSession) -> None:
    assert (await call.ok("Bash", {"command": "ls /sys/class/net"})).split() == ["lo"]
    box = _box(session)
    assert box is not None
    limits = _docker("inspect", "--format", "{{.HostConfig.Memory}} {{.HostConfig.PidsLimit}}", box.name).stdout
    assert limits.split() == [str(1 << 30), "256"]


@pytest.mark.usefixtures("host_blind")
async def test_a_timeout_stops_the_tree_inside_the_container(call: Caller, session: CodeSession) -> None:
    out = await call.fails("Bash", {"command": "sleep 3001 & setsid sleep 3002 & sleep 3003", "timeout": 1000})
    assert "timed out" in out.text
    assert "sleep 300" not in _processes(session)


@pytest.mark.usefixtures("host_blind")
async def test_leftovers_and_escaped_processes_are_stopped(call: Caller, session: CodeSession) -> None:
    text = await call.ok("Bash", {"command": "sleep 3011 & setsid sleep 3012 & nohup sleep 3013 >/dev/null & echo ok"})
    assert "ok" in text and "were stopped" in text
    assert "sleep 301" not in _processes(session)


@pytest.mark.usefixtures("host_blind")
async def test_a_background_job_is_read_and_killed_inside(call: Caller, session: CodeSession) -> None:
    started = await call.ok(
        "Bash", {"command": "echo begun; setsid sleep 3021 & sleep 3022", "run_in_background": True}
    )
    assert "bash_1" in started
    with anyio.fail_after(WAIT_S):
        while True:
            if "begun" in await call.ok("BashOutput", {"bash_id": "bash_1"}):
                break
            await anyio.sleep(0.05)
    assert "sleep 3022" in _processes(session)
    await call.ok("KillShell", {"shell_id": "bash_1"})
    assert "sleep 302" not in _processes(session)


async def _job_ends(session: CodeSession, job_id: str) -> None:
    job = session.jobs.get(job_id)
    assert job is not None
    with anyio.fail_after(WAIT_S):
        await job.done.wait()


async def test_a_background_job_cannot_make_a_protected_path(call: Caller, session: CodeSession, root: Path) -> None:
    (root / ".git" / "objects").mkdir(parents=True)  # a repository without hooks: `.git/hooks` is missing
    (root / "src").mkdir()
    made = (
        "mkdir -p .claude; echo '{}' > .claude/settings.json; echo 'x = 1' > mcp-codetools.toml; "
        "mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit; echo fine > src/made.txt; echo obj > .git/objects/o"
    )
    await call.ok("Bash", {"command": made, "run_in_background": True})  # the session's first command
    await _job_ends(session, "bash_1")
    for path in (".claude", "mcp-codetools.toml", ".git/hooks"):
        assert not os.path.lexists(root / path), path
    assert (root / "src" / "made.txt").read_text(encoding="utf-8") == "fine\n"
    assert (root / ".git" / "objects" / "o").exists()
    # A protected path made on the host since (by Write, asked about) is read-only inside too: with nothing
    # running in it, the container is started again with it mounted.
    (root / ".claude").mkdir()
    await call.ok("Bash", {"command": "echo '{}' > .claude/settings.json", "run_in_background": True})
    await _job_ends(session, "bash_2")
    assert not (root / ".claude" / "settings.json").exists()


def test_a_supervisor_cannot_be_traced_by_a_command_of_the_same_user(image: str, engine: str) -> None:
    """Started as root, each supervisor switches to the server's user keeping CAP_SYS_PTRACE alone: a command of
    that user (which holds no capability) can never trace it, not even during its start, to make names unfiltered."""
    script = "grep -E '^(Uid|CapPrm)' /proc/$PPID/status /proc/self/status"
    argv = ["run", "--rm", "--network", "none", *containers.SUPERVISED_OPTIONS, "--user", "0:0"]
    argv += ["--mount", containers._supervisor_mount(), "--entrypoint", "python3", image]
    argv += [*containers._supervisor_argv([])[1:], "/bin/sh", "-c", script]
    at = argv.index(f"{containers.SUPERVISOR_AT}/container_start.py") + 1
    argv[at : at + 2] = ["1234", "1234"]  # a user, not root
    done = _docker(*argv)
    assert done.returncode == 0, done.stderr
    seen: dict[tuple[str, str], str] = {}
    for line in done.stdout.splitlines():
        path, key, values = line.split(":", 2)
        seen["command" if path == "/proc/self/status" else "supervisor", key] = values.split()[0]
    assert seen["supervisor", "Uid"] == seen["command", "Uid"] == "1234", done.stdout
    assert int(seen["supervisor", "CapPrm"], 16) == 1 << 19 and int(seen["command", "CapPrm"], 16) == 0, done.stdout


def _git_repository(root: Path) -> None:
    """A repository as `git init` makes it: `.git/hooks` and `.git/config` exist, `.git/commondir` does not."""
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=CLI_S)
    assert (root / ".git" / "hooks").is_dir() and (root / ".git" / "config").is_file()


async def test_a_background_job_cannot_make_a_git_commondir(call: Caller, session: CodeSession, root: Path) -> None:
    """It would send git on the host to another folder's config and hooks, and nothing checks a job after it."""
    _git_repository(root)
    command = "echo elsewhere > .git/commondir; echo made=$?"
    out = await call.ok("Bash", {"command": command, "run_in_background": True})
    assert "bash_1" in out
    await _job_ends(session, "bash_1")
    assert not os.path.lexists(root / ".git" / "commondir")
    assert "made=0" not in await call.ok("BashOutput", {"bash_id": "bash_1"})


async def test_no_command_can_make_a_git_commondir_for_a_process_to_outlive(
    call: Caller, session: CodeSession, root: Path
) -> None:
    """A foreground command's is refused, not made and removed after: the container's processes may outlive it."""
    _git_repository(root)
    out = await call("Bash", {"command": "echo elsewhere > .git/commondir"})
    assert out.is_error and "Permission denied" in out.text and "`.git/commondir` is read-only" in out.text
    assert not os.path.lexists(root / ".git" / "commondir")
    # The rest of the repository stays writable, its top level too: git makes its lock files there.
    await call.ok("Bash", {"command": "echo obj > .git/objects/o && touch .git/index.lock && rm .git/index.lock"})
    assert (root / ".git" / "objects" / "o").exists()
    # `.git/config` replaced on the host (git's own atomic rename) took its mount away: with nothing running
    # in it, the container is started again, the new file read-only.
    config = root / ".git" / "config"
    (root / ".git" / "objects" / "config.new").write_text("[core]\n", encoding="utf-8")
    os.replace(root / ".git" / "objects" / "config.new", config)
    out = await call("Bash", {"command": "echo '[core] fsmonitor = evil' >> .git/config"})
    assert out.is_error and "Read-only file system" in out.text, out.text
    assert config.read_text(encoding="utf-8") == "[core]\n"


async def test_no_process_of_the_container_runs_outside_a_supervisor(call: Caller, session: CodeSession) -> None:
    """Each process but the supervisors has its filter above the engine's: one of the same user left unfiltered
    (an init, the call's wrapper) could be traced, and made to create a protected name for the command."""
    listing = "for p in /proc/[0-9]*; do echo \"$(grep Seccomp_filters $p/status)|$(tr '\\0' ' ' < $p/cmdline)\"; done"
    out = await call.ok("Bash", {"command": f"sleep 3071 & {listing}"})
    rows = [line.partition("|") for line in out.splitlines() if "Seccomp_filters" in line]
    assert any("sleep 3071" in args for _, _, args in rows) and any("sleep infinity" in args for _, _, args in rows)
    supervisor = containers.SUPERVISOR_AT
    unfiltered = [args for filters, _, args in rows if filters.split()[-1] == "1" and supervisor not in args]
    assert not unfiltered, out


async def test_masked_paths_inside_a_root_are_unreadable_in_the_container(
    pipeline: Pipeline, root: Path, boxed: SandboxSettings
) -> None:
    """As under bubblewrap: credentials in the mounts (a home folder as a root) are masked, folders too.

    A folder is covered by an empty one (Podman copies a folder's files into a tmpfs mounted over it).
    """
    (root / "creds").mkdir()
    (root / "creds" / "key").write_text("secret\n", encoding="utf-8")
    (root / "token.txt").write_text("secret\n", encoding="utf-8")
    masked = dataclasses.replace(boxed, mask=(str(root / "creds"), str(root / "token.txt")))
    session = CodeSession(Settings(roots=(root,), sandbox=masked))
    try:
        out = await Caller(pipeline, session)(
            "Bash", {"command": "cat token.txt; cat creds/key; echo listed=$(ls -A creds | wc -l)"}
        )
        assert "secret" not in out.text and "listed=0" in out.text, out.text
    finally:
        await session.aclose()


async def test_a_kept_file_replaced_on_the_host_refuses_commands_while_a_job_runs(
    pipeline: Pipeline, root: Path, boxed: SandboxSettings
) -> None:
    """An atomic save on the host renames a new file over the one mounted over: the kernel drops the mount."""
    token = root / "token.txt"
    token.write_text("old secret\n", encoding="utf-8")
    masked = dataclasses.replace(boxed, mask=(str(token),))
    session = CodeSession(Settings(roots=(root,), sandbox=masked))
    try:
        call = Caller(pipeline, session)
        # The container starts with token.txt masked; a job runs in it.
        await call.ok("Bash", {"command": "sleep 3081", "run_in_background": True})
        (root / ".token.new").write_text("new secret\n", encoding="utf-8")
        os.replace(root / ".token.new", token)
        out = await call.fails("Bash", {"command": "cat token.txt"})
        assert "was not run" in out.text and "replaced or removed outside it" in out.text, out.text
        assert "still runs in it" in out.text and "secret" not in out.text.replace(str(token), "")
        # Once nothing runs in it, the container is started again with the new file masked.
        await call.ok("KillShell", {"shell_id": "bash_1"})
        await _job_ends(session, "bash_1")
        out = await call("Bash", {"command": "cat token.txt; echo shown"})
        assert "shown" in out.text and "secret" not in out.text.replace(str(token), ""), out.text
    finally:
        await session.aclose()


@pytest.mark.usefixtures("host_blind")
async def test_a_command_moved_to_the_background_stays_in_the_container(
    pipeline: Pipeline, root: Path, boxed: SandboxSettings
) -> None:
    session = CodeSession(Settings(roots=(root,), sandbox=boxed, bash_return_after_s=0.5))
    try:
        call = Caller(pipeline, session)
        moved = await call.ok("Bash", {"command": "echo begun; setsid sleep 3061 & sleep 3062"})
        assert "moved to the background" in moved and "bash_1" in moved
        job = session.jobs.get("bash_1")
        assert job is not None and job.confinement is not None and job.confinement.container is not None
        assert "sleep 3062" in _processes(session)
        await call.ok("KillShell", {"shell_id": "bash_1"})
        assert "sleep 306" not in _processes(session)
    finally:
        await session.aclose()


async def test_two_sessions_cannot_see_each_other(pipeline: Pipeline, tmp_path: Path, boxed: SandboxSettings) -> None:
    roots = [tmp_path / "a", tmp_path / "b"]
    sessions = []
    for folder in roots:
        folder.mkdir()
        sessions.append(CodeSession(Settings(roots=(folder.resolve(),), sandbox=boxed)))
    first, second = sessions
    try:
        await Caller(pipeline, first).ok("Bash", {"command": "sleep 3031", "run_in_background": True})
        with anyio.fail_after(WAIT_S):
            while True:
                if "sleep 3031" in _processes(first):
                    break
                await anyio.sleep(0.05)
        seen = await Caller(pipeline, second).ok(
            "Bash", {"command": f"ps -eo args; ls {roots[0]} || echo no-a; ls {first.scratch_dir} || echo no-scratch"}
        )
        assert "sleep 3031" not in seen and "no-a" in seen and "no-scratch" in seen
        first_box, second_box = _box(first), _box(second)
        assert first_box is not None and second_box is not None and first_box.name != second_box.name
    finally:
        for each in sessions:
            await each.aclose()
    for box in (first_box, second_box):
        assert _docker("ps", "-aq", "--filter", f"name={box.name}").stdout.strip() == ""


async def test_ending_a_session_leaves_no_container(pipeline: Pipeline, settings: Settings) -> None:
    session = CodeSession(settings)
    try:
        await Caller(pipeline, session).ok("Bash", {"command": "sleep 3041", "run_in_background": True})
        box = _box(session)
        assert box is not None
        assert _docker("ps", "-q", "--filter", f"name={box.name}").stdout.strip()
    finally:
        await session.aclose()
    assert _docker("ps", "-aq", "--filter", f"name={box.name}").stdout.strip() == ""


def _labelled(image: str, owner: str) -> str:
    name = f"mcp-codetools-test-{os.urandom(4).hex()}"
    started = _docker(
        "run", "-d", "--init", "--stop-timeout", "1", "--network", "none", "--name", name,
        "--label", f"{containers.LABEL_INSTANCE}=test", "--label", f"{containers.LABEL_OWNER}={owner}",
        "--entrypoint", "sleep", image, "infinity",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    return name


def test_a_killed_servers_containers_are_removed_at_start(image: str, boxed: SandboxSettings) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: its pid names no process (nothing forks between here and the look)
    host = socket.gethostname()
    stale = _labelled(image, f"{host}:{gone.pid}")
    live = _labelled(image, f"{host}:{os.getpid()}")
    elsewhere = _labelled(image, f"another-host:{gone.pid}")
    try:
        found = probe(boxed)
        assert found.backend == "container"
        names = set(_docker("ps", "-a", "--format", "{{.Names}}").stdout.split())
        assert stale not in names and live in names and elsewhere in names
    finally:
        for name in (stale, live, elsewhere):  # one each: Podman's `rm -f` stops at a name that is gone
            _docker("rm", "-f", name)
    assert not {stale, live, elsewhere} & set(_docker("ps", "-a", "--format", "{{.Names}}").stdout.split())


def test_doctor_reports_the_engine_and_the_image(
    image: str, engine: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sandbox_module, "_probed", {})
    env = {"MCP_CODETOOLS_SANDBOX": "1", "MCP_CODETOOLS_SANDBOX_BACKEND": "container"}
    env["MCP_CODETOOLS_SANDBOX_ENGINE"] = engine
    env["MCP_CODETOOLS_SANDBOX_IMAGE"] = image
    out = doctor.sandbox_line(load_settings([str(tmp_path)], environ=env, read_files=False))
    assert f"container: engine {engine}" in out and f"image {image}" in out
    assert "kept from being made by the supervisor; the image read-only, /tmp private" in out, out


# --- without a daemon ----------------------------------------------------------------------------------------


def test_a_missing_engine_or_image_says_no_backend_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containers, "engine_path", lambda settings: None)
    with pytest.raises(SandboxUnavailable, match=f"^{NONE_CAN_RUN}: the container backend cannot run: `podman`"):
        probe(SandboxSettings(enabled=True, backend="container", engine="podman", image="x"))
    monkeypatch.setattr(containers, "engine_path", lambda settings: "/usr/bin/docker")
    with pytest.raises(SandboxUnavailable, match="no image is set"):
        probe(SandboxSettings(enabled=True, backend="container"))


def test_the_container_is_made_from_the_settings(tmp_path: Path) -> None:
    settings = SandboxSettings(enabled=True, backend="container", image="img:1", memory="2g", pids=99, cpus=1.5)
    box = containers.SessionContainer("/usr/bin/podman", settings, (tmp_path,), tmp_path / ".container")
    argv = box.run_argv()
    assert argv[:3] == ["/usr/bin/podman", "run", "-d"] and argv[-2:] == ["sleep", "infinity"]
    assert "--init" not in argv and argv[argv.index("--entrypoint") + 1 : argv.index("--entrypoint") + 3] == [
        "python3",
        "img:1",
    ]
    joined = " ".join(argv)
    for part in (
        "--read-only",
        "--cap-add SYS_PTRACE",
        f"target={containers.SUPERVISOR_AT},readonly",
        "--network none",
        "--memory 2g",
        "--pids-limit 99",
        "--cpus 1.5",
        f"--user {os.getuid()}:{os.getgid()}",
    ):
        assert part in joined
    assert f"type=bind,source={tmp_path},target={tmp_path}" in joined
    assert f"{containers.LABEL_OWNER}={socket.gethostname()}:{os.getpid()}" in joined
    networked = containers.SessionContainer("docker", dataclasses.replace(settings, network=True), (), tmp_path)
    assert "--network" not in networked.run_argv()


def test_an_image_without_python_freezes_folders_instead_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = SandboxSettings(enabled=True, backend="container", image="img:1")
    answers = iter([(127, "exec: python3: not found"), (0, "")])

    def engine(argv: list[str], timeout: float = 0) -> subprocess.CompletedProcess[str]:
        status, said = next(answers)
        return subprocess.CompletedProcess(argv, status, "", said)

    monkeypatch.setattr(containers, "_cli", engine)
    problem, unsupervised = containers.trial("docker", settings)
    assert problem is None and "python3" in unsupervised
    (tmp_path / "ws").mkdir()
    box = containers.SessionContainer("docker", settings, (tmp_path / "ws",), tmp_path, supervised=False)
    box.read_only = (tmp_path / "ws" / ".envrc",)
    argv = box.run_argv()
    assert "--init" in argv and "--read-only" not in argv and "SYS_PTRACE" not in argv
    assert f"source={tmp_path / 'ws'},target={tmp_path / 'ws'},readonly" in " ".join(argv)  # frozen
    found = sandbox_module.Sandbox("container", settings, engine="docker", unsupervised=unsupervised)
    assert "python3" in found.describe() and "frozen" in found.describe()
    confinement = sandbox_module.Confinement(found, (tmp_path / "ws",), container=box)
    note = sandbox_module.refusal_note("x: Read-only file system", confinement)
    assert note is not None and "python3" in note and "top level" in note


def test_a_missing_path_kept_since_the_start_needs_a_new_container(tmp_path: Path) -> None:
    """The container's own supervisors (its first process's) keep the paths of its start: a rule added since
    on a missing path is not theirs, and a command could make the path through such a process."""
    settings = SandboxSettings(enabled=True, backend="container", image="img")
    box = containers.SessionContainer("docker", settings, (tmp_path,), tmp_path, kept=(str(tmp_path / ".envrc"),))
    (tmp_path / "there").touch()
    wanted = [str(tmp_path / ".envrc"), str(tmp_path / "new-rule"), str(tmp_path / "there")]
    assert box.unkept(wanted) == [tmp_path / "new-rule"]


def test_values_are_passed_by_name_never_on_the_command_line(tmp_path: Path) -> None:
    settings = SandboxSettings(enabled=True, backend="container", image="img", env=("EXTRA",))
    box = containers.SessionContainer("docker", settings, (tmp_path,), tmp_path)
    env = {"LANG": "C.UTF-8", "EXTRA": "fine", "SECRET_TOKEN": "s3cret", "MCP_CODETOOLS_CALL": "abc", "PATH": "/x"}
    argv, cli_env = box.exec_argv(["bash", "-c", "true"], cwd=tmp_path, env=env, marker="MCP_CODETOOLS_CALL=abc")
    assert "s3cret" not in " ".join(argv) and "fine" not in argv
    assert {"LANG", "EXTRA", "MCP_CODETOOLS_CALL"} <= {argv[i + 1] for i, a in enumerate(argv) if a == "-e"}
    assert "SECRET_TOKEN" not in cli_env and cli_env["EXTRA"] == "fine" and cli_env.get("PATH") != "/x"
