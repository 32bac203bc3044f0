"""Bash in a container: one long-lived container per session, each command run in it by `docker exec`.

The container is started at the session's first command (`run -d … sleep infinity`) from the image the
settings name, with the roots and the session's scratch folder bind-mounted at the same paths (so Read,
Edit and Bash see the same files by the same names), the existing kept paths bound read-only, no network
unless the setting gives it, memory, pids and CPU limits, the server's uid and gid, and no new privileges.
It is removed when the session ends. Mounts hold for the container's life: a file mounted over that the
host replaces (an atomic save) or removes takes its mount away in every namespace, so commands are refused
from then on (`unpinned`); so are they once a kept path appears on the host (`uncovered`). Each container
is labelled with the server instance and its pid: at the next start, labelled containers whose server is
gone (killed, so it could not remove them) are removed.

Missing kept paths are kept by bubblewrap's supervisor (`supervisor.py`), run inside the container with
the image's python3 from this folder, mounted read-only: every process of the container runs under one
(each exec's first process is a supervisor, and the container's first process too), so names are made
as the command asks, anywhere but at a kept path. What the container needs for it, and why, is in
`SUPERVISED_OPTIONS`. An image in which the supervisor cannot run (no python3, found by `trial`) keeps
the older way: the folder a missing kept path would be made in is frozen (`SessionContainer.frozen`).

The engine is driven through its command line, which Docker and Podman share (`run`, `exec`, `rm`, `ps
--filter label=…`, `image inspect`), rather than the `docker` Python package: Podman is reached the same
way, the CLI brings the user's own context and credentials configuration as they are, and no dependency
is added.

Processes are handled inside the container, as on the host: each command runs under a small bash wrapper
that records its process group (a `docker exec` process is a session leader, so its first process's pid
is the group: the supervisor's, which runs the wrapper) in the scratch folder, runs the command, then
stops what it left behind: members of its group and any process carrying the call's marker (an escaped
`setsid` daemon), TERM then KILL. A timeout or KillShell runs the same stop through a second `exec`. The
final working directory comes back through a file beside it, since no descriptor crosses `docker exec`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from mcp_codetools.settings import SandboxSettings

__all__ = ["ContainerError", "SessionContainer", "instance_id", "remove_stale"]

CALL_VAR = "MCP_CODETOOLS_CALL"
"""The per-call marker (`spawning.CALL_VAR`): named here because spawning imports this layer."""

LABEL_INSTANCE = "mcp-codetools.instance"
LABEL_OWNER = "mcp-codetools.owner"
"""`<host name>:<pid>` of the server that started the container."""
START_TIMEOUT_S = 120.0
CLI_TIMEOUT_S = 30.0
STOP_GRACE_STEPS = 20
"""TERM, then up to 20 looks 50 ms apart, then KILL (the host's grace is one second too)."""
PASSED_ENV = (
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "MCP_CODETOOLS",
    "TERM",
    "PAGER",
    "GIT_PAGER",
    "GIT_TERMINAL_PROMPT",
    "GIT_EDITOR",
    "GIT_OPTIONAL_LOCKS",
)
"""What a command gets from the server's environment; PATH, HOME and the like are the image's own."""
_MARKER_PREFIXES = ("MCP_CODETOOLS_SESSION", "MCP_CODETOOLS_CALL")
CALL_FD = 9
"""The descriptor spawning's wrapper reports the final cwd on, opened on a file in the container."""
SUPERVISOR_FOLDER = Path(__file__).parent
"""The folder of `supervise.py` and `supervisor.py` (and its compiled form): mounted read-only in the container."""
SUPERVISOR_AT = "/.mcp-codetools"
"""Where the container sees `SUPERVISOR_FOLDER`: a path of its own, never inside a root."""
SUPERVISED_OPTIONS = (
    "--read-only",
    "--tmpfs", "/tmp:rw,exec,nosuid,nodev,mode=1777",
    "--cap-add", "SYS_PTRACE",
    "--security-opt", "no-new-privileges",
)  # fmt: skip
"""What a supervised container adds to its `run`, and why (measured on Docker 20.10, Linux 6.18):

- no `--init`: the container's first process is a supervisor too (`sleep infinity` under it), so that no
  process of the container runs unfiltered, which a command of the same user could trace and make names
  through (the wrapper and the stop script run under one as well; a supervisor itself is not dumpable);

- `--read-only` (with a private `/tmp`): the supervisor runs from the image's own Python, bash and libraries,
  so no command may change them for the next one; a root user's commands could, capabilities or not (they
  own the files), and `/etc/ld.so.preload` would reach every later process. A non-root user cannot write them
  anyway, so for it nothing changes but a writable image layer it rarely has.
- `--cap-add SYS_PTRACE`: Docker's default seccomp profile refuses `pidfd_getfd` (which the supervisor uses
  to take the listener and a caller's dirfd or socket) unless the container has this capability; `seccomp`
  with a listener, `pidfd_open` and `process_vm_readv` are allowed as they are. Only the supervisors hold
  it (`container_start.py`: started as root, they switch to the server's user keeping it alone, so that no
  command can trace one); they drop every capability for the command (`supervisor.drop_capabilities`), and
  with no-new-privileges none can be gained (a command's CapEff and CapPrm read 0). The kernel's ptrace
  check still limits `pidfd_getfd` to a caller's own dumpable processes, as it does `ptrace`, which the
  profile allows. No profile of ours replaces the engine's (or the one the user's daemon is configured with).
- `--user 0:0`: so that each supervisor starts as root (`container_start.py`); every command runs as the
  server's user all the same.
"""

# Finds the processes of a call inside the container: members of group $1 and carriers of the marker $2
# (NAME=value), never the script itself nor its supervisor (its parent). Pure bash over /proc, so a look
# costs no fork per process.
_FIND = r"""
__mcp_find() {
    local p pid stat rest e
    for p in /proc/[0-9]*; do
        pid=${p#/proc/}
        [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] || [ "$pid" = "$PPID" ] && continue
        read -r stat 2>/dev/null < "$p/stat" || continue
        rest=${stat##*) }
        set -- $rest
        if [ "$3" = "$__mcp_group" ] && [ "$1" != Z ]; then echo "$pid"; continue; fi
        while IFS= read -r -d '' e; do
            [ "$e" = "$__mcp_marker" ] && { echo "$pid"; break; }
        done 2>/dev/null < "$p/environ"
    done
}
__mcp_stop() {
    local left i
    left=$(__mcp_find)
    [ -n "$left" ] || return 1
    kill -s TERM $left 2>/dev/null
    for ((i = 0; i < __STEPS__; i++)); do
        left=$(__mcp_find)
        [ -n "$left" ] || return 0
        sleep 0.05
    done
    kill -s KILL $left 2>/dev/null
    return 0
}
""".replace("__STEPS__", str(STOP_GRACE_STEPS))

# Runs the command (`"$@"`, the call's bash) as a child, so that afterwards it can stop what the command
# left; records the group, and whether leftovers were stopped, in files named after the call. The group is
# the exec's first process's: the wrapper's own, or its supervisor's (then the wrapper runs under it).
_WRAPPER = (
    _FIND
    + r"""
__mcp_state=$1 __mcp_marker=$2
shift 2
read -r __mcp_group < /proc/$$/stat
__mcp_group=(${__mcp_group##*) })
__mcp_group=${__mcp_group[2]}
printf '%s\n' "$__mcp_group" > "$__mcp_state.group"
"$@" __FD__> "$__mcp_state.cwd"
__mcp_rc=$?
if __mcp_stop; then : > "$__mcp_state.left"; fi
exit $__mcp_rc
""".replace("__FD__", str(CALL_FD))
)

# Stops a call from outside: its group (read from the file the wrapper wrote) and its marker's carriers.
_STOPPER = (
    _FIND
    + r"""
__mcp_marker=$2
# A call whose client was only just started may not have written its group yet.
for ((i = 0; i < __STEPS__; i++)); do
    [ -s "$1.group" ] && break
    sleep 0.05
done
__mcp_group=$(cat "$1.group" 2>/dev/null) || __mcp_group=none
__mcp_stop
exit 0
""".replace("__STEPS__", str(STOP_GRACE_STEPS))
)


# Prints the processes an `exec` started (ppid 0: their parent is outside), but the container's first one, this
# script and its supervisor: a command or background job of a call still running.
_BUSY = r"""
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = "$$" ] || [ "$pid" = "$PPID" ] && continue
    read -r stat 2>/dev/null < "$p/stat" || continue
    rest=(${stat##*) })
    [ "${rest[1]}" = 0 ] && [ "${rest[0]}" != Z ] && echo "$pid"
done
exit 0
"""


class ContainerError(RuntimeError):
    """The engine could not start, reach or remove a container; the message has its own words."""


def instance_id() -> str:
    """This server process's label value: its host and pid, and a nonce against a reused pid."""
    return _INSTANCE


_INSTANCE = f"{os.getpid()}-{os.urandom(4).hex()}"


def _new_name() -> str:
    return f"mcp-codetools-{_INSTANCE}-{os.urandom(3).hex()}"


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def engine_path(settings: SandboxSettings) -> str | None:
    """Where the engine's command is (`docker` or `podman`), None when it is not installed."""
    return shutil.which(settings.engine)


def _cli(argv: Sequence[str], timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired:
        raise ContainerError(f"`{' '.join(argv[:3])} …` did not answer within {timeout:.0f} s") from None
    except OSError as exc:
        raise ContainerError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}")[:300]


def trial(engine: str, settings: SandboxSettings) -> tuple[str | None, str]:
    """Try the image in throw-away containers: why it cannot run (None: it can), why not supervised ("": it is).

    The second says why commands would run without the supervisor. The supervisor is tried first, as each
    command would be run (`SUPERVISED_OPTIONS`, this user): a folder and a file made through it, a kept name
    refused. An image without `python3` (3.9+), or an engine that refuses the calls it needs, fails that; a
    plain `true` then says whether the image runs at all.
    """
    if not settings.image:
        return "no image is set (sandbox.image, MCP_CODETOOLS_SANDBOX_IMAGE)", ""
    script = "mkdir /tmp/probe && : > /tmp/probe/made && [ -f /tmp/probe/made ] && ! (: > /tmp/kept) 2>/dev/null"
    supervised = [engine, "run", "--rm", "--network", "none", *SUPERVISED_OPTIONS, "--user", "0:0"]
    supervised += ["--mount", _supervisor_mount(), "--entrypoint", "python3", settings.image]
    supervised += [*_supervisor_argv(["/tmp/kept"])[1:], "/bin/sh", "-c", script]  # after python3
    try:
        done = _cli(supervised, START_TIMEOUT_S)
        if done.returncode == 0:
            return None, ""
        said = _said(done)
        said = said if len(said) <= 160 else "…" + said[-160:]  # the engine's words end with the reason
        why = f"the supervisor cannot run in the image (it needs python3 3.9+: {said})"
        done = _cli(
            [engine, "run", "--rm", "--network", "none", "--entrypoint", "true", settings.image], START_TIMEOUT_S
        )
    except ContainerError as exc:
        return str(exc), ""
    if done.returncode == 0:
        return None, why
    return f"{settings.engine} could not run the image {settings.image}: {_said(done)}", ""


def _user() -> str:
    return f"{os.getuid()}:{os.getgid()}"


def _supervisor_mount() -> str:
    return f"type=bind,{_mount_path('source', SUPERVISOR_FOLDER)},target={SUPERVISOR_AT},readonly"


def _supervisor_argv(kept: Sequence[str]) -> list[str]:
    """The supervisor's command line up to the command, its own `kept` paths included.

    The image's python3 runs it, started as root, and it switches to the server's user
    (`container_start.py`, whose docstring says why).
    """
    argv = ["python3", "-I", "-S", f"{SUPERVISOR_AT}/container_start.py", str(os.getuid()), str(os.getgid())]
    for path in kept:
        argv += ["--keep", path]
    return [*argv, "--"]


def remove_stale(engine: str) -> list[str]:
    """Remove the labelled containers of this host whose server process is gone; returns their names.

    Containers of a live server (another instance running now) and of other hosts sharing the daemon are
    left alone.
    """
    listed = _cli([engine, "ps", "-a", "--filter", f"label={LABEL_INSTANCE}", "--format", "{{.Names}}"])
    if listed.returncode != 0:
        raise ContainerError(f"cannot list containers: {_said(listed)}")
    names = listed.stdout.split()
    if not names:
        return []
    # The owner through `inspect`, whose `.Config.Labels` is a map in both engines (`ps` has Docker's
    # `.Label` and Podman's map `.Labels`, but no template both read); Docker's `.Name` starts with "/".
    template = f'{{{{.Name}}}} {{{{index .Config.Labels "{LABEL_OWNER}"}}}}'
    inspected = _cli([engine, "inspect", "--format", template, *names])
    if inspected.returncode != 0 and not inspected.stdout.strip():  # one removed since the listing: the rest
        raise ContainerError(f"cannot inspect containers: {_said(inspected)}")
    host = socket.gethostname()
    stale: list[str] = []
    for line in inspected.stdout.splitlines():
        name, _, owner = line.strip().lstrip("/").partition(" ")
        owner_host, _, pid = owner.rpartition(":")
        if name and owner_host == host and pid.isdigit() and not _alive(int(pid)):
            stale.append(name)
    for name in stale:  # one each: Podman 4.3's `rm -f` given a name that is gone removes none of the others
        _cli([engine, "rm", "-f", name])
    return stale


def _mount_path(key: str, path: Path) -> str:
    """`key=path` for `--mount`, whose fields are comma-separated: a path with a comma or a quote is refused."""
    text = str(path)
    if any(c in text for c in ',"\n'):
        raise ContainerError(f"{text!r} cannot be mounted: `--mount` cannot hold a comma or a quote in a path")
    return f"{key}={text}"


def _bind(path: Path, *, read_only: bool) -> str:
    spec = f"type=bind,{_mount_path('source', path)},{_mount_path('target', path)}"
    return spec + ",readonly" if read_only else spec


def _write_new(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _empty_folder(beside: Path) -> Path:
    """An empty folder of mode 0 of this user's beside `beside` (made once), to bind over hidden folders.

    Raises:
        ContainerError: what is at its name is not an empty folder of this user's.
    """
    folder = beside.with_name(beside.name + "-dir")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    try:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise ContainerError(f"{folder} is not a folder of this user's: remove it")
        os.chmod(folder, 0o700)
        if os.listdir(folder):
            raise ContainerError(f"{folder} should be empty: remove it")
        os.chmod(folder, 0)
    except OSError as exc:
        raise ContainerError(f"cannot prepare {folder}: {exc.strerror or exc}") from None
    return folder


def _identity(path: Path) -> tuple[int, int] | None:
    """The file a bind mount of `path` is made of (links followed, as the engine does), None when gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class SessionContainer:
    """One session's container: started on first use, commands exec'd into it, removed at the end."""

    engine: str
    settings: SandboxSettings
    mounts: tuple[Path, ...]
    state_base: Path
    """A mounted folder of the server's own (the scratch folder): this container's files go in a new
    folder inside it, made by the server and named after the container."""
    name: str = field(default_factory=lambda: _new_name())
    started: bool = False
    removed: bool = False
    supervised: bool = True
    """Commands run under the supervisor, which keeps missing kept paths from being made (`trial`); without
    it (an image without python3) the folders they would be made in are frozen instead (`frozen`)."""
    read_only: tuple[Path, ...] = ()
    """Paths inside the mounts kept read-only from start (protected paths, Edit denies): an existing one
    bound read-only over itself; a missing one is kept by the supervisor, or by freezing the folder it would
    be made in (`frozen`). Supervised, only the existing ones are kept here: one made on the host later is
    not mounted over (`uncovered`)."""
    hidden: tuple[Path, ...] = ()
    """Paths inside the mounts covered at start: an empty file, or an empty folder no one may enter."""
    kept: tuple[str, ...] = ()
    """The kept paths at start (links and their targets), which the supervisors of the container's own
    processes (its first, the stop script) keep; each command's supervisor keeps that command's."""
    unreadable: Path | None = None
    """An empty file of mode 0 on the host, bound over hidden files (an empty folder beside it over folders)."""
    pinned: dict[Path, tuple[int, int]] = field(default_factory=dict)
    """What each path mounted over at start was (device, inode): one replaced or removed on the host since
    (an atomic save renames a new file over it) has taken the container's mount over it away with it."""
    unpinned_ok: frozenset[Path] = frozenset()
    """Kept paths in a frozen folder: read-only through the folder's mount whatever file is there now."""
    _lock: anyio.Lock | None = None

    @property
    def state_dir(self) -> Path:
        """The per-call group, cwd and leftovers files, and the two scripts.

        Commands can write here (it is inside a mount), so the server makes the folder and the scripts
        new (never through a link a command left), and reads only regular files back, without following
        links (see `final_cwd`).
        """
        return self.state_base / f".{self.name}"

    def run_argv(self) -> list[str]:
        """The `run -d` command line of this container."""
        s = self.settings
        # `rm -f` kills at once on Docker but stops first on Podman, waiting the stop timeout (10 s by default).
        argv = [self.engine, "run", "-d", *(() if self.supervised else ("--init",)), "--stop-timeout", "1"]
        argv += ["--name", self.name]
        argv += ["--label", f"{LABEL_INSTANCE}={_INSTANCE}", "--label", f"{LABEL_OWNER}={_owner()}"]
        if not s.network:
            argv += ["--network", "none"]
        if s.memory:
            argv += ["--memory", s.memory]
        if s.pids > 0:
            argv += ["--pids-limit", str(s.pids)]
        if s.cpus > 0:
            argv += ["--cpus", f"{s.cpus:g}"]
        if self.supervised:  # as root: each process's supervisor switches to the server's user (`_supervisor_argv`)
            argv += [*SUPERVISED_OPTIONS, "--user", "0:0", "--mount", _supervisor_mount()]
        else:
            argv += ["--user", _user(), "--security-opt", "no-new-privileges"]
        frozen = self.frozen()
        for folder in self.mounts:  # a frozen one read-only: an engine refuses two mounts at one target
            argv += ["--mount", _bind(folder, read_only=folder in frozen)]
        for path in self.read_only:
            if os.path.lexists(path):
                argv += ["--mount", _bind(path, read_only=True)]
        for folder, entries in frozen.items():
            if folder not in self.mounts:
                argv += ["--mount", _bind(folder, read_only=True)]
            for entry in entries:
                argv += ["--mount", _bind(entry, read_only=False)]
        for path in self.hidden:
            # An empty folder bound over a folder, not a tmpfs: Podman copies what is under a tmpfs mount into
            # it (`tmpcopyup`, its default), which showed the folder's files; Docker refuses Podman's option.
            cover = (
                None
                if self.unreadable is None
                else _empty_folder(self.unreadable)
                if path.is_dir()
                else self.unreadable
            )
            if cover is None:
                raise ContainerError(f"nothing empty to cover {path} with")
            argv += ["--mount", f"type=bind,{_mount_path('source', cover)},{_mount_path('target', path)},readonly"]
        if self.supervised:  # `sleep infinity` under a supervisor of its own, which reaps orphans as `--init` would
            return [*argv, "--entrypoint", "python3", s.image, *_supervisor_argv(self.kept)[1:], "sleep", "infinity"]
        return [*argv, "--entrypoint", "sleep", s.image, "infinity"]

    def frozen(self) -> dict[Path, list[Path]]:
        """The folders frozen against kept paths that do not exist, each with the entries bound writable again.

        A mount needs something to mount over, and the engine makes a missing target in the source folder, which is the
        user's (an empty `.claude/settings.json` or `mcp-codetools.toml` left in the root, read by other tools as broken
        config); a placeholder removed from the host afterwards would take the mount with it (the kernel detaches mounts
        over an unlinked entry in every namespace). So, as bubblewrap once did (it now has a supervisor,
        `supervisor.py`), the nearest existing folder above each missing kept path is bound read-only over itself: no
        entry can be made, removed or renamed in it, by any command of the container's life, background jobs too. Its
        folders (not kept ones, not folders frozen in turn) are bound writable again; its files are not: a bind pins the
        file, and the atomic replace Edit and Write do would leave the container reading the old one for the rest of the
        session, where a read-only file at least says so. The engine applies mounts by the depth of their target (Docker
        and Podman both sort them), so the writable folders land above their frozen parent, and kept paths deeper inside
        above them. A supervised container freezes nothing.
        """
        if self.supervised:
            return {}
        kept = set(self.read_only) | set(self.hidden)
        frozen: dict[Path, list[Path]] = {}
        for path in self.read_only:
            if os.path.lexists(path):
                continue
            folder = path.parent
            while not os.path.lexists(folder) and folder != folder.parent:
                folder = folder.parent
            if any(folder == m or folder.is_relative_to(m) for m in self.mounts):
                frozen.setdefault(folder, [])
        for folder in frozen:
            try:
                with os.scandir(folder) as listed:
                    names = sorted(e.name for e in listed if e.is_dir(follow_symlinks=False))
            except OSError as exc:
                raise ContainerError(f"cannot list {folder} to keep paths in it: {exc.strerror or exc}") from None
            skip = kept | set(frozen) | set(self.mounts)
            frozen[folder] = [folder / n for n in names if folder / n not in skip]
        return frozen

    def uncovered(self, read_only: Sequence[Path], hidden: Sequence[Path]) -> list[Path]:
        """The paths a command must be kept from that this container was not started with."""
        return [p for p in read_only if p not in self.read_only and p not in self.hidden] + [
            p for p in hidden if p not in self.hidden
        ]

    def unkept(self, kept: Sequence[str]) -> list[Path]:
        """Missing kept paths the container's own supervisors were not started with (a rule added since)."""
        if not self.supervised:
            return []
        return [Path(p) for p in kept if p not in self.kept and not os.path.lexists(p)]

    def unpinned(self) -> list[Path]:
        """The paths whose mount the host took away, replaced or removed there since the start.

        Those not kept by a frozen folder instead: the container can write (or read, a hidden one) them now.
        """
        return [p for p, was in self.pinned.items() if p not in self.unpinned_ok and _identity(p) != was]

    async def ensure_started(
        self,
        *,
        read_only: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
        unreadable: Callable[[], Path] | None = None,
        kept: Sequence[str] = (),
    ) -> None:
        """Start the container unless it runs already (once, however many calls ask at the same time).

        `read_only` (kept paths, existing or not) and `hidden` (existing paths) inside the mounts are kept
        from the start: mounted over, or, for a missing kept path, frozen (unsupervised). `kept`: the
        same kept paths as the supervisor takes them (`kept`).

        Raises:
            ContainerError: the engine refused; its words are in the message.
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.started:
                return
            if self.removed:
                raise ContainerError("the session's container was removed")
            self.read_only, self.hidden, self.kept = tuple(read_only), tuple(hidden), tuple(kept)
            if self.supervised:
                self.read_only = tuple(p for p in self.read_only if os.path.lexists(p))
            if self.hidden and unreadable is not None:
                self.unreadable = unreadable()
            # As files in the mounted scratch folder, so `ps` in the container shows a short command line.
            try:
                self.state_dir.mkdir(mode=0o700)
                _write_new(self.state_dir / "run.sh", _WRAPPER)
                _write_new(self.state_dir / "stop.sh", _STOPPER)
            except OSError as exc:
                raise ContainerError(f"cannot prepare {self.state_dir}: {exc.strerror or exc}") from None
            argv = self.run_argv()
            self.pinned = {p: i for p in (*self.read_only, *self.hidden) if (i := _identity(p)) is not None}
            frozen = self.frozen()
            self.unpinned_ok = frozenset(p for p in self.read_only if p.parent in frozen)
            done = await anyio.to_thread.run_sync(_cli, argv, START_TIMEOUT_S)
            if done.returncode != 0:
                await anyio.to_thread.run_sync(_cli, [self.engine, "rm", "-f", self.name])
                raise ContainerError(f"{self.settings.engine} could not start {self.settings.image}: {_said(done)}")
            self.started = True

    def exec_argv(
        self, command: Sequence[str], *, cwd: Path, env: Mapping[str, str], marker: str, kept: Sequence[str] = ()
    ) -> tuple[list[str], dict[str, str]]:
        """The `exec` command line that runs `command` (bash and its arguments) in the container.

        Variables are passed by name (`-e NAME`), their values through the CLI's own environment, so no
        value shows on a command line; beside the allow-list, those the `sandbox.env` setting names.
        `marker` is the call's `NAME=value`; `kept` the paths the supervisor keeps from being made (this
        command's, links and their targets both). The supervisor is the exec's first process (its group is
        the call's), and runs the wrapper, which runs the command: nothing of the call runs unfiltered.
        """
        allowed = set(PASSED_ENV) | set(self.settings.env)
        passed = {k: v for k, v in env.items() if k in allowed or k.startswith(_MARKER_PREFIXES)}
        cli_env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG")}
        cli_env.update({k: v for k, v in os.environ.items() if k.startswith(("DOCKER_", "CONTAINER_", "XDG_"))})
        argv = [self.engine, "exec", "-w", str(os.path.realpath(cwd))]
        for name in sorted(passed):
            argv += ["-e", name]
        state = str(self.call_state(marker))
        supervisor = _supervisor_argv(kept) if self.supervised else []
        argv += [self.name, *supervisor, "bash", str(self.state_dir / "run.sh"), state, marker, "bash", *command[1:]]
        return argv, {**cli_env, **passed}

    def call_state(self, marker: str) -> Path:
        """Where the files of the call with `marker` live (`.group`, `.cwd`, `.left` beside it)."""
        return self.state_dir / marker.partition("=")[2]

    def final_cwd(self, marker: str) -> str | None:
        """The cwd the command ended in, as the wrapper reported it (None when that file is not a plain one)."""
        path = self.call_state(marker).with_suffix(".cwd")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device a command put there
                return None
            raw = os.read(fd, 65536)
        except OSError:
            return None
        finally:
            os.close(fd)
        found = os.fsdecode(raw).splitlines()
        return found[-1] if found else None

    def finish(self, marker: str) -> bool:
        """Forget a finished call's files; True when its wrapper had leftovers to stop."""
        base = self.call_state(marker)
        left = base.with_suffix(".left").exists()
        for suffix in (".group", ".cwd", ".left"):
            base.with_suffix(suffix).unlink(missing_ok=True)
        return left

    async def stop_call(self, marker: str) -> None:
        """Stop a call's processes inside the container: its group and its marker's carriers, TERM then KILL."""
        if not self.started or self.removed:
            return
        state = str(self.call_state(marker))
        supervisor = _supervisor_argv(self.kept) if self.supervised else []
        argv = [self.engine, "exec", self.name, *supervisor, "bash", str(self.state_dir / "stop.sh"), state, marker]
        await anyio.to_thread.run_sync(_cli, argv)

    async def renew(self) -> bool:
        """Remove the container if nothing of a command runs in it; False, leaving it, when something does.

        The next `ensure_started` then starts a new one with the mounts of now. Every call's first process in
        the container was started by `exec` (its parent is outside: ppid 0); what is left besides the
        container's own first process is leftovers, which end with it.
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.removed:
                return False
            if not self.started:
                return True
            supervisor = _supervisor_argv(self.kept) if self.supervised else []
            argv = [self.engine, "exec", self.name, *supervisor, "bash", "-c", _BUSY]
            done = await anyio.to_thread.run_sync(_cli, argv)
            if done.returncode != 0 or done.stdout.strip():
                return False
            await anyio.to_thread.run_sync(_cli, [self.engine, "rm", "-f", self.name])
            self.started = False
            self.name = _new_name()
            return True

    async def remove(self) -> None:
        """Remove the container and everything running in it (at the session's end)."""
        self.removed = True
        if self.started:
            self.started = False
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_cli, [self.engine, "rm", "-f", self.name])
