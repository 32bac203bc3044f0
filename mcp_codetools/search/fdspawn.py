"""Starting rg inside an open folder with `posix_spawn` and an `fchdir` file action: no Python in the child.

Where /proc cannot name a descriptor (macOS, Linux without /proc), rg has to enter the pinned folder by
its descriptor. Popen can only do that with a `preexec_fn`, which turns its vfork path off: a plain fork
of the whole server, about 4 ms a search (benchmarks/RESULTS.md: the portable start). `posix_spawn` with
`posix_spawn_file_actions_addfchdir_np` (glibc 2.29+, musl 1.1.24+, macOS 10.15+) does the same with no
code of ours between fork and exec: the C library's child enters the folder, sets up stdio and execs.
Nothing Python runs there, so a Landlock-restricted thread (search/sandbox.py) can start it too: the
child inherits that thread's domain, as a Popen child does.

Where the symbol is missing or ctypes cannot load the C library, `available()` is False and the caller
keeps Popen with the `preexec_fn`. MCP_CODETOOLS_FDSPAWN=off forces that (tests and benchmarks compare).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

if sys.platform != "win32":  # there `_load` finds no C library to spawn with, so fcntl is never needed
    import fcntl

_SETPGROUP = 0x02
_SETSIGDEF = 0x04
_SETSIGMASK = 0x08
_SETSID_LINUX = 0x80
"""glibc's and musl's POSIX_SPAWN_SETSID; on macOS 0x80 means something else (start suspended)."""
_OPAQUE_WORDS = 128
"""Room for posix_spawn_file_actions_t / posix_spawnattr_t / sigset_t (glibc: 80, 336, 128 bytes; macOS: a
pointer, a pointer, 4 bytes): the C library initialises them, we only hand out the memory, 8-byte aligned."""
WAIT_STEP_S = 0.05
"""The longest pause between two looks at an rg that has not ended (Popen's wait with a timeout polls too)."""

enabled: bool = os.environ.get("MCP_CODETOOLS_FDSPAWN", "") != "off"
"""Whether to start rg with posix_spawn where the C library can; tests and benchmarks clear it to compare."""


def _load() -> Any:
    """The C library with the posix_spawn functions typed, or None where a needed one is missing."""
    if os.name != "posix":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        p, i = ctypes.c_void_p, ctypes.c_int
        argvp = ctypes.POINTER(ctypes.c_char_p)
        signatures: dict[str, list[Any]] = {
            "posix_spawn": [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, p, p, argvp, argvp],
            "posix_spawnp": [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, p, p, argvp, argvp],
            "posix_spawn_file_actions_init": [p],
            "posix_spawn_file_actions_destroy": [p],
            "posix_spawn_file_actions_adddup2": [p, i, i],
            "posix_spawn_file_actions_addfchdir_np": [p, i],
            "posix_spawnattr_init": [p],
            "posix_spawnattr_destroy": [p],
            "posix_spawnattr_setflags": [p, ctypes.c_short],
            "posix_spawnattr_setpgroup": [p, i],
            "posix_spawnattr_setsigmask": [p, p],
            "posix_spawnattr_setsigdefault": [p, p],
            "sigemptyset": [p],
            "sigaddset": [p, i],
        }
        for name, argtypes in signatures.items():
            function = getattr(libc, name)
            function.argtypes, function.restype = argtypes, ctypes.c_int
        # Optional (glibc 2.34+): closes every descriptor above those rg gets, inheritable or not.
        closefrom = getattr(libc, "posix_spawn_file_actions_addclosefrom_np", None)
        if closefrom is not None:
            closefrom.argtypes, closefrom.restype = [p, i], ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


_libc = _load()


def available() -> bool:
    """Whether rg can be started with posix_spawn and an fchdir action here (and that is not turned off)."""
    return enabled and _libc is not None


class SpawnFailed(OSError):
    """posix_spawn refused: either the fchdir into the folder or the exec of rg (the errno cannot tell)."""


class Spawned:
    """rg started by `spawn`: the part of Popen's interface the search uses (pipes, pid, wait, kill)."""

    def __init__(self, args: Sequence[str], pid: int, stdout: int, stderr: int) -> None:
        self.args = list(args)
        self.pid = pid
        self.returncode: int | None = None
        try:
            self.stdout = open(stdout, "rb", buffering=0)
        except BaseException:
            os.close(stdout)
            os.close(stderr)
            raise
        try:
            self.stderr = open(stderr, "rb", buffering=0)
        except BaseException:
            self.stdout.close()
            os.close(stderr)
            raise

    def poll(self) -> int | None:
        """The exit code if rg has ended (it is then reaped), else None."""
        return self._try_wait(os.WNOHANG)

    def wait(self, timeout: float | None = None) -> int:
        """Reap rg and return its exit code (negative: the signal that ended it).

        Raises:
            subprocess.TimeoutExpired: rg has not ended within `timeout` seconds.
        """
        if timeout is None:
            code = self._try_wait(0)
            assert code is not None
            return code
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while (code := self._try_wait(os.WNOHANG)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(min(delay, remaining, WAIT_STEP_S))
            delay *= 2
        return code

    def kill(self) -> None:
        """SIGKILL rg's group (it leads one); nothing if it has been reaped."""
        if self.returncode is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def communicate(self) -> tuple[bytes, bytes]:
        """Read both pipes to their end, close them, reap rg (only after a kill: the reads are sequential)."""
        out, err = self.stdout.read() or b"", self.stderr.read() or b""
        self.stdout.close()
        self.stderr.close()
        self.wait()
        return out, err

    def _try_wait(self, flags: int) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): the status is lost, as Popen says 0
            self.returncode = 0
            return 0
        if pid == 0:
            return None
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def _above_stdio(fd: int, extra: list[int]) -> int:
    """`fd`, or a close-on-exec copy above 2 when it is 0-2 (the dup2 onto 0-2 must not clobber a source)."""
    if fd > 2:
        return fd
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    extra.append(copy)
    return copy


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(result, f"{what}: {os.strerror(result)}")


def spawn(argv: Sequence[str], *, cwd_fd: int, stdin_fd: int, pass_fds: tuple[int, ...] = ()) -> Spawned:
    """Start `argv` in the folder `cwd_fd` holds open, leading a group of its own, stdout and stderr piped.

    Popen's child state is kept: stdin is `stdin_fd`; `pass_fds` stay open under their numbers; every
    other descriptor Python made is close-on-exec (PEP 446), and glibc 2.34+ closes those above as well;
    SIGPIPE and SIGXFSZ, which Python ignores, are back to their defaults; no signal is blocked. On Linux
    rg gets a session of its own, as with `start_new_session` (with scheduler autogroups each session has
    its own share of the CPU); elsewhere a process group, which is what gets killed.

    Raises:
        SpawnFailed: posix_spawn refused (the fchdir or the exec); nothing was started.
        OSError: the pipes or the spawn attributes could not be set up.
    """
    libc = _libc
    assert libc is not None, "spawn() is only called where available()"
    extra: list[int] = []
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    actions = (ctypes.c_uint64 * _OPAQUE_WORDS)()
    attr = (ctypes.c_uint64 * _OPAQUE_WORDS)()
    actions_made = attr_made = False
    try:
        _check(libc.posix_spawn_file_actions_init(actions), "file actions")
        actions_made = True
        _check(libc.posix_spawnattr_init(attr), "spawn attributes")
        attr_made = True
        # The folder first: the descriptor numbers below may be dup2's targets.
        _check(libc.posix_spawn_file_actions_addfchdir_np(actions, cwd_fd), "fchdir action")
        sources = [_above_stdio(fd, extra) for fd in (stdin_fd, out_w, err_w)]
        for target, source in enumerate(sources):
            _check(libc.posix_spawn_file_actions_adddup2(actions, source, target), "dup2 action")
        for fd in pass_fds:
            if fd > 2:  # dup2 from a copy clears close-on-exec on `fd` (dup2 onto itself may not)
                copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
                extra.append(copy)
                _check(libc.posix_spawn_file_actions_adddup2(actions, copy, fd), "dup2 action")
        closefrom = getattr(libc, "posix_spawn_file_actions_addclosefrom_np", None)
        if closefrom is not None:
            _check(closefrom(actions, max((3, *(fd + 1 for fd in pass_fds)))), "closefrom action")
        flags = _SETSIGDEF | _SETSIGMASK
        if sys.platform.startswith("linux"):
            flags |= _SETSID_LINUX
        else:
            flags |= _SETPGROUP
            _check(libc.posix_spawnattr_setpgroup(attr, 0), "process group")
        _check(libc.posix_spawnattr_setflags(attr, flags), "spawn flags")
        signals = (ctypes.c_uint64 * _OPAQUE_WORDS)()
        libc.sigemptyset(signals)
        _check(libc.posix_spawnattr_setsigmask(attr, signals), "signal mask")
        for name in ("SIGPIPE", "SIGXFSZ"):
            libc.sigaddset(signals, getattr(signal, name))
        _check(libc.posix_spawnattr_setsigdefault(attr, signals), "signal defaults")

        encoded = [os.fsencode(arg) for arg in argv]
        c_argv = (ctypes.c_char_p * (len(encoded) + 1))(*encoded, None)
        environment = [key + b"=" + value for key, value in os.environb.items()]
        c_env = (ctypes.c_char_p * (len(environment) + 1))(*environment, None)
        pid = ctypes.c_int(0)
        call = libc.posix_spawn if b"/" in encoded[0] else libc.posix_spawnp
        code = call(ctypes.byref(pid), encoded[0], actions, attr, c_argv, c_env)
        if code != 0:
            raise SpawnFailed(code, os.strerror(code), argv[0])
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, *extra):
            os.close(fd)
        if attr_made:
            libc.posix_spawnattr_destroy(attr)
        if actions_made:
            libc.posix_spawn_file_actions_destroy(actions)
    try:
        return Spawned(argv, pid.value, out_r, err_r)
    except BaseException:  # rg must not run on unseen (its pipes are closed by then)
        os.killpg(pid.value, signal.SIGKILL)
        os.waitpid(pid.value, 0)
        raise
