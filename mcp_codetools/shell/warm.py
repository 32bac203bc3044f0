"""A bash started before the call that uses it, so the call does not wait for bash to start.

Starting bash (vfork, exec, the dynamic loader, bash's own start-up) is most of an `echo hi`: about 1.5 ms
of a `bash -c` on a quiet machine, and several times that under load. When calls come back to back (the
call came within `BACK_TO_BACK_S` of the last one's end), the next bash is started while a foreground command
runs (`WarmSlot.prepare_during`: the loop's next turn, once the command has its own bash, in a thread so that
the loop serves the command's end while the vforked bash waits for a CPU), so it has finished starting by the
time the next request comes; started after the answer instead, it was still starting then.
When calls come with pauses between them (an agent thinking), it is started after the answer only
(`WarmSlot.prepare_soon`): the spawn (`Popen`'s Python, and under load the wait for the vforked child to get
a CPU) then stays off the call's path (issue 38: p50 0.58x at load 9 with 20 ms pauses, while back to back
it was 1.05-1.14x the start during the command). After the call the waiting bash is kept if it waits in the
folder the command left (its idle time counts from then), else replaced there.

It waits, in its own session and group like any command's bash, for a header line and the command on a
pipe. The call that takes it writes them and closes the pipe; from there it is a call's bash like any other
(spawning.py's wrapper: `eval`, the exit status, the final `pwd -P` on the cwd pipe).

What a warm bash must match, or it is stopped and a bash is started for the call as before: the call's
working directory (the same folder, by device and inode, not only by name) and the call's environment
(the variables `git_env` adds for a read-only command are exported by the wrapper, as the header says). Used only
without a sandbox, for commands of at most `MAX_CHARS`, and with bash 4.1 or later (`read -N`). It holds
the call marker it was started with, so leftovers are found as for any call; their pid window starts when the
command is sent (bash forks nothing while it waits), so a long wait does not widen the scan.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import os
import shlex
import signal
import struct
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from mcp_codetools.shell import procs
from mcp_codetools.shell.exit_watcher import ExitWatcher
from mcp_codetools.shell.git_env import read_only_git
from mcp_codetools.shell.output_or_exit import OutputOrExit
from mcp_codetools.shell.spawning import BASH, CALL_VAR, Marker, with_marker

logger = logging.getLogger(__name__)

MAX_CHARS = 16 * 1024
"""Longer commands start their own bash (the pipe takes the command without blocking; over 128 KiB the
classic start says plainly that the system cannot pass it)."""
AFTER_ANSWER_S = 0.0005
"""The next bash is started this long after a call's result, once the loop has written the answer."""
BACK_TO_BACK_S = 0.01
"""A call that comes within this long of the last one's end is taken as one of a quick series (a script, not
a model thinking): the next bash starts during it."""
SETTLE_S = 2.0
"""How long a call waits for a bash still starting for it before it starts its own (a start takes milliseconds;
the bound only matters if the starting thread is stuck)."""
IDLE_S = 5.0
"""A bash not taken within this long is stopped: an agent that pauses longer pays one spawn, and an idle
session keeps no process or pipe of its own (so a check for leftovers after a pause finds none)."""

READY = "r"
"""The wrapper's first line on the cwd pipe: bash has started, and whatever it printed at its start is in the
output pipe (a locale it cannot set warns there). Never a cwd, which `pwd -P` prints from `/`."""

_WRAPPER = (
    f"builtin printf '{READY}\\n' >&{{fd}}; "
    "while IFS= read -r -u {c} __mcp_h || exit 97; do "
    'if [ "${{__mcp_h:1:1}}" = a ]; then IFS= read -r -N "${{__mcp_h#* }}" -u {c} __mcp_c || exit 97; '
    'else LC_ALL=C IFS= read -r -N "${{__mcp_h#* }}" -u {c} __mcp_c || exit 97; fi; '
    '[ "${{__mcp_h:2:1}}" = k ] || break; SECONDS=0; eval "$__mcp_c"; builtin printf \'%d\\n\' $? >&{fd}; done; '
    "exec {c}<&-; "
    'if [ "${{__mcp_h:0:1}}" = 1 ]; then export {read_only}; fi; '
    'unset __mcp_h; SECONDS=0; eval "$__mcp_c"\n__mcp_rc=$?\nbuiltin pwd -P >&{fd} 2>/dev/null\nexit $__mcp_rc\n'
)
"""Reads a header (`RKS N`: R 1 or 0, export a read-only command's git variables or not; K `a` for ASCII, `b` for
other bytes; S `k` for a command that leaves bash as it was (`in_place.py`), after which bash reports its exit
status on the cwd pipe and waits for the next header, else a space; N bytes of command), then the command, and
never runs a part of one: at a short read or a closed pipe it exits 97 before `eval`. Other bytes are read under
`LC_ALL=C` (`read -N` counts characters otherwise); ASCII is one character a byte in any locale glibc has, so it
is read without that switch: two `setlocale` calls (~40-55 µs of bash's time before the command, issue 38), and
with an unusable locale in the environment a second warning in the output that a bash started for the call does
not print. `SECONDS` restarts, as it would in a bash started for the call, and both `eval`s stand on the first
line, as in spawning.py's wrapper, so `$LINENO` and bash's error messages are the same."""


@dataclass(eq=False)
class WarmShell:
    """One bash waiting for its command; its output and cwd pipes are read by `running.run` once taken."""

    proc: subprocess.Popen[bytes]
    marker: Marker
    out_r: int
    cwd_r: int
    command_w: int | None
    cwd: Path
    folder: tuple[int, int]
    env: dict[str, str]
    read_only_env: dict[str, str]
    """`env` with the variables `git_env` adds for a read-only command: built at the start, off the call's path."""
    watcher: ExitWatcher | None = None
    together: OutputOrExit | None = None
    """Its pidfd and the epoll set of its output and exit, opened at its start (off the call's path, ~50 µs of
    the loop's CPU a call); the call that takes the bash owns and closes them, like the pipes."""
    quiet: bool | None = None
    """`quiet_start`, once known."""

    def fits(self, cwd: Path, env: Mapping[str, str]) -> bool | None:
        """None when it cannot run this call; else whether the wrapper must export the read-only git variables."""
        if cwd != self.cwd or self.proc.poll() is not None:
            return None
        try:
            st = os.stat(cwd)
        except OSError:
            return None
        if (st.st_dev, st.st_ino) != self.folder:
            return None
        if self.env == env:
            return False
        if env == self.read_only_env:
            return True
        return None

    async def quiet_start(self) -> bool:
        """Whether bash has started and printed nothing at its start (then a command run in place prints all it would).

        A bash that printed at its start (a locale it cannot set) would print that for every command of its own.
        Waits (at most `SETTLE_S`) while bash is still starting, as a command sent to it would.
        """
        if self.quiet is None:
            with anyio.move_on_after(SETTLE_S):
                await anyio.wait_readable(self.cwd_r)
            try:
                ready = os.read(self.cwd_r, len(READY) + 1) == READY.encode() + b"\n"
            except BlockingIOError:  # not started in time: the command is run as its last
                return False
            self.quiet = ready and _pipe_holds(self.out_r) == 0
        return self.quiet

    def send(self, command: str, read_only: bool, *, window: bool = True, in_place: bool = False) -> None:
        """Hand bash its command; the pipe is then closed. Raises OSError when bash is gone (it ran nothing).

        `window=False` for a command that forks nothing (`forkless`): no scan will need the pid window.
        `in_place`: bash runs it, reports its status and waits for another command; the pipe stays open.
        """
        data = os.fsencode(command)  # as a spawn encodes its arguments, errors included
        # Without ESC not even a stateful charset (ISO-2022) could read ASCII as other than a character a byte.
        kind = b"a" if data.isascii() and b"\x1b" not in data else b"b"
        then = b"k" if in_place else b""
        message = b"%d%s%s %d\n" % (int(read_only), kind, then, len(data)) + data
        if in_place:
            assert self.command_w is not None, "a bash that ran its last command takes no other"
            _write_all(self.command_w, message)
            return
        fd, self.command_w = self.command_w, None
        assert fd is not None, "a warm bash is given one command"
        # Bash has forked nothing while it waited, so whatever carries the marker is forked after this point:
        # the pid window for leftovers starts here, not at its start (however long it waited). Not so when
        # BASH_ENV had it run a file at its start: what that started is found from its start, as before.
        forks, last = (procs.fork_count(), procs.last_pid()) if window else (None, None)
        if forks is not None and last is not None and not self.env.get("BASH_ENV"):
            self.marker = dataclasses.replace(self.marker, since=procs.Since(last, forks))
        try:
            _write_all(fd, message)
        finally:
            os.close(fd)

    def discard(self) -> None:
        """Stop it unused: kill its group (nothing has run in it), reap it, close the pipes."""
        if self.proc.returncode is None:  # not reaped, so the pid (and group id) is still this bash's
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL of our own child
            logger.warning("an unused bash (pid %d) did not end at SIGKILL", self.proc.pid)
        if self.together is not None:
            self.together.close()
        if self.watcher is not None:
            self.watcher.close()
        for fd in (self.out_r, self.cwd_r, self.command_w):
            if fd is not None:
                os.close(fd)
        self.command_w = None


def _pipe_holds(fd: int) -> int | None:
    """How many bytes wait in a pipe, without reading them; None where it cannot be asked."""
    try:
        import fcntl  # POSIX only (asked once a bash)
        import termios

        return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
    except (ImportError, OSError, AttributeError):
        return None


def _write_all(fd: int, message: bytes) -> None:
    view = memoryview(message)
    while view:
        view = view[os.write(fd, view) :]


def start(cwd: Path, env: Mapping[str, str]) -> WarmShell:
    """A bash in `cwd` with `env` (without the call marker, which it gets here) waiting for its command.

    Raises:
        OSError: as a spawn does (the cwd is gone, bash is missing).
    """
    marker = Marker.new(CALL_VAR)
    git = read_only_git(env)
    out_r, out_w = os.pipe()
    cwd_r, cwd_w = os.pipe()
    cmd_r, cmd_w = os.pipe()
    try:
        folder = os.stat(cwd)
        # Only BASH_ENV makes it fork before its command; otherwise `send` starts the pid window (and where it
        # cannot read the count, no count here means the whole table is read: never a narrower window).
        forks = procs.fork_count() if env.get("BASH_ENV") else None
        proc = subprocess.Popen(
            [BASH, "-c", _WRAPPER.format(c=cmd_r, fd=cwd_w, read_only=_exports(git)), "bash"],
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=out_w,
            pass_fds=(cwd_w, cmd_r),
            cwd=cwd,
            env=with_marker(env, marker),
            start_new_session=True,
        )
    except BaseException:
        for fd in (out_r, cwd_r, cmd_w):
            os.close(fd)
        raise
    finally:
        for fd in (out_w, cwd_w, cmd_r):
            os.close(fd)
    os.set_blocking(out_r, False)
    os.set_blocking(cwd_r, False)
    watcher = ExitWatcher(proc)
    return WarmShell(
        proc,
        marker.started(proc.pid, forks),
        out_r,
        cwd_r,
        cmd_w,
        cwd,
        (folder.st_dev, folder.st_ino),
        dict(env),
        {**env, **git},
        watcher,
        OutputOrExit.open(out_r, watcher.pidfd),
    )


def _exports(variables: Mapping[str, str]) -> str:
    return " ".join(f"{name}={shlex.quote(value)}" for name, value in variables.items())


class WarmSlot:
    """A session's one warm bash, if any."""

    def __init__(self) -> None:
        self._shell: WarmShell | None = None
        self._closed = False
        self._expiry: asyncio.TimerHandle | None = None
        self._ended_at: float | None = None
        """`time.monotonic()` when the last call's next bash was prepared (`prepare_soon`): the end of that call."""
        self._starting: object | None = None
        """The token of the start in flight in the thread; `_landed` keeps only the bash of the current one."""
        self._starting_for: tuple[Path, dict[str, str]] | None = None
        self._work: set[concurrent.futures.Future[Any]] = set()
        """What the thread is to do for this slot (starts, stops): `aclose` waits for it."""
        self._settled = asyncio.Event()

    def take(self, cwd: Path, env: Mapping[str, str]) -> tuple[WarmShell, bool] | None:
        """The warm bash for a call in `cwd` with `env`, and whether it is to export the read-only git variables.

        None (an unfit one is stopped) when the call is to start its own.
        """
        shell, self._shell = self._shell, None
        self._cancel_expiry()
        if shell is None:
            return None
        read_only = shell.fits(cwd, env)
        if read_only is None:
            shell.discard()
            return None
        return shell, read_only

    def give_back(self, shell: WarmShell) -> None:
        """Put back a bash that ran a command in place (`in_place.run`) and waits for the next one."""
        if self._closed:  # here, so that `aclose` leaves no process behind
            shell.discard()
            return
        if self._shell is not None:  # another took its place meanwhile
            self._discard_off_loop(shell)
            return
        self._shell = shell
        self._arm(shell)

    def prepare_during(self, cwd: Path, env: Mapping[str, str]) -> None:
        """Start the next bash in `cwd` at the loop's next turn, while this call's command runs.

        Called just before `running.run`, whose first wait comes after the command has its bash: the spawn
        overlaps the command. Only for a call that came back to back with the last one: otherwise the one
        `prepare_soon` starts after the answer is ready in time, and the spawn stays off this call's path.
        Without an event loop (a direct caller), nothing: `prepare_soon` starts one.
        """
        if self._ended_at is None or time.monotonic() - self._ended_at > BACK_TO_BACK_S:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        loop.call_soon(self._prepare, cwd, dict(env), False)

    def prepare_soon(self, cwd: Path, env: Mapping[str, str]) -> None:
        """After a call: keep the waiting bash if it waits in `cwd` with `env`, else start one there.

        A start waits until the event loop has written this call's answer; keeping the bash (or the one still
        starting for it) is done now: deferred, it cost every back-to-back call one more wake of the loop.
        Off asyncio, all of it now.
        """
        env = dict(env)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._prepare(cwd, env)
            return
        if self._waits_for(cwd, env):
            self._prepare(cwd, env)
            return
        loop.call_later(AFTER_ANSWER_S, self._prepare, cwd, env)

    def _waits_for(self, cwd: Path, env: dict[str, str]) -> bool:
        """Whether the bash waiting (or the one starting) is in `cwd` with `env`: `_prepare` would start none."""
        shell = self._shell
        if shell is not None:
            return shell.cwd == cwd and shell.env == env
        return self._starting is not None and self._starting_for == (cwd, env)

    def _prepare(self, cwd: Path, env: dict[str, str], after_call: bool = True) -> None:
        if after_call:
            self._ended_at = time.monotonic()
        if self._closed or not _bash_reads_counted_bytes():
            return
        shell = self._shell
        if shell is not None:
            self._cancel_expiry()
            if shell.cwd == cwd and shell.env == env:  # what `fits` compares by name; it checks the rest
                self._arm(shell)  # idle from now: a long command does not use up its wait
                return
            self._shell = None  # the command moved the cwd (or the server's environment changed)
            self._discard_off_loop(shell)
        if self._starting is not None and self._starting_for == (cwd, env):
            return  # the one in flight is wanted; it is armed when it lands
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a direct caller: started here
            loop = None
        if loop is None or after_call:
            # After the answer the loop has nothing to wait for: started here, without the thread's hand-overs
            # (two threads taking turns with the GIL cost ~0.45 ms of CPU a start at load 8).
            self._starting = self._starting_for = None  # one still in flight elsewhere is stopped when it lands
            self._settled.set()
            self._install(_start_or_none(cwd, env))
            return
        # During a command, started in a thread: `fork_exec` lets go of the GIL while the vforked child gets a CPU
        # and execs, which under load took milliseconds (3.3 ms a start at load 8), all of it on the loop before:
        # a command that ended meanwhile waited for it. One in flight at a time; a later one replaces it.
        token = self._starting = object()
        self._starting_for = (cwd, env)
        self._settled = asyncio.Event()
        future = _spawner().submit(_start_or_none, cwd, env)
        future.add_done_callback(lambda done: _land(loop, self, token, done))
        self._track(future)

    def _discard_off_loop(self, shell: WarmShell) -> None:
        """Stop an unused bash in the thread: its reaping is not waited for on the loop."""
        try:
            self._track(_spawner().submit(shell.discard))
        except RuntimeError:  # the interpreter is shutting down: stopped here
            shell.discard()

    def _track(self, future: concurrent.futures.Future[Any]) -> None:
        self._work.add(future)
        future.add_done_callback(self._work.discard)

    def _landed(self, token: object, shell: WarmShell | None) -> None:
        """On the loop: a bash started in the thread; kept if it is still the one wanted, else stopped."""
        if self._starting is not token:  # replaced by a later start, or the slot was closed
            if shell is not None and self._closed:  # here, so that `aclose` leaves no process behind
                shell.discard()
            elif shell is not None:
                self._discard_off_loop(shell)
            return
        self._starting = self._starting_for = None
        self._settled.set()
        self._install(shell)

    def _install(self, shell: WarmShell | None) -> None:
        if shell is None:
            return
        if self._shell is not None:  # pragma: no cover - `_prepare` empties the slot before a start
            self._discard_off_loop(self._shell)
        self._shell = shell
        self._arm(shell)

    async def settled(self) -> None:
        """Wait (at most `SETTLE_S`) for a bash starting in the thread, so that `take` sees it."""
        if self._starting is None:
            return
        with anyio.move_on_after(SETTLE_S):
            await self._settled.wait()

    def _arm(self, shell: WarmShell) -> None:
        try:
            self._expiry = asyncio.get_running_loop().call_later(IDLE_S, self._expire, shell)
        except RuntimeError:  # no event loop (a direct caller): it waits until taken or closed
            pass

    def _expire(self, shell: WarmShell) -> None:
        self._expiry = None
        if self._shell is shell:
            self._shell = None
            shell.discard()

    def _cancel_expiry(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    def close(self) -> None:
        """Stop the waiting bash, and start no more (the session is ending)."""
        self._closed = True
        self._starting = self._starting_for = None  # what is still starting is stopped when it lands
        self._settled.set()
        self._cancel_expiry()
        shell, self._shell = self._shell, None
        if shell is not None:
            shell.discard()

    async def aclose(self) -> None:
        """`close`, as a session closer; waits (at most `SETTLE_S`) until the thread has stopped what it started."""
        self.close()
        with anyio.move_on_after(SETTLE_S):
            while pending := list(self._work):  # a copy: the thread removes what it has done
                await asyncio.shield(asyncio.wrap_future(pending[0]))
                await anyio.lowlevel.checkpoint()  # a start's hand-over, queued on the loop before, runs first


_executor: concurrent.futures.ThreadPoolExecutor | None = None


def _spawner() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread that starts (and stops) waiting bashes for every session: starts come one at a time."""
    global _executor
    if _executor is None:
        _executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-warm-bash")
    return _executor


def _start_or_none(cwd: Path, env: Mapping[str, str]) -> WarmShell | None:
    try:
        return start(cwd, env)
    except OSError as exc:  # the cwd went away meanwhile, or bash is missing: the call will say so
        logger.debug("no warm bash: %s", exc)
        return None


def _land(loop: asyncio.AbstractEventLoop, slot: WarmSlot, token: object, done: concurrent.futures.Future[Any]) -> None:
    """In the thread: hand the started bash to the loop, or stop it here when the slot has closed or the loop ended."""
    shell: WarmShell | None = None if done.cancelled() or done.exception() is not None else done.result()
    if shell is not None and slot._closed:
        shell.discard()
        return
    try:
        loop.call_soon_threadsafe(slot._landed, token, shell)
    except RuntimeError:  # the loop has closed (the server is ending): nobody will take it
        if shell is not None:
            shell.discard()


_bash_ok: bool | None = None


def _bash_reads_counted_bytes(run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> bool:
    """Whether this bash has `read -N` (4.1+; macOS ships 3.2), asked once per process."""
    global _bash_ok
    if _bash_ok is None:
        try:
            done = run(
                [BASH, "-c", 'echo "${BASH_VERSINFO[0]} ${BASH_VERSINFO[1]}"'],
                capture_output=True,
                text=True,
                timeout=10,
                stdin=subprocess.DEVNULL,
                env={},  # nothing of the server's environment (BASH_ENV would run a file)
            )
            major, minor = (int(part) for part in done.stdout.split()[:2])
            _bash_ok = (major, minor) >= (4, 1)
        except (OSError, ValueError, subprocess.SubprocessError):
            _bash_ok = False
    return _bash_ok
