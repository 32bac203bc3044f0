"""Keeping the server's secrets from the commands it runs: its environment block, memory and descriptors.

A command's own environment never holds the secrets (`spawning.command_env`), but the server's process is
right beside it: `/proc/<server>/environ` is the environment the server was started with, and
`/proc/<server>/mem` and `/proc/<server>/fd/*` are its memory and its descriptors (the stdio pipes, the
HTTP socket). Linux lets a process read those of another with the same uid, and root read them all. At
start-up `protect` closes each way in, on Linux:

- the process is marked non-dumpable (`PR_SET_DUMPABLE` 0): a process of the same uid without
  `CAP_SYS_PTRACE` can no longer open its environ, mem or fd entries;
- its commands lose `CAP_SYS_PTRACE` and `CAP_PERFMON` (dropped from the bounding set, and the ambient
  set, which every later thread and child inherits). As root that matters most: `CAP_SYS_PTRACE`
  overrides non-dumpable, and recent kernels (6.18 here) let `CAP_PERFMON` or `CAP_SYS_ADMIN` read any
  process's environ and auxv, past the ptrace checks and Landlock's scoping alike. `CAP_SYS_ADMIN`
  stays (bubblewrap, `mount` and `unshare` as root need it), so the next point is what closes the
  environ for a root command;
- the secrets' bytes are erased from the initial environment block, which is what `/proc/<pid>/environ`
  shows (unsetting a variable only drops libc's pointer to it), and libc's `environ` no longer lists
  them, so a child started with the inherited environment does not get them either. `os.environ`, a
  copy made when Python started, keeps them for the server's own use. All of `protect` takes under
  1 ms; a re-exec without the secrets would cost a second start (0.18 s for `--version` alone).

What still holds against a command running as root with `CAP_SYS_ADMIN`: nothing the kernel enforces
(it may load an eBPF tracer, or rewrite the server's installed code for the next start); run the server
as an ordinary user for a boundary. A binary with file capabilities (`setcap cap_sys_ptrace+ep`) regains
what an unprivileged server cannot drop from its bounding set.

`MCP_CODETOOLS_DEBUGGABLE=1` in the server's environment keeps it dumpable, so a debugger or profiler
of the same user (py-spy, gdb) can attach, and a test can count its descriptors; any Bash command of an
ordinary user can then read its memory too, so it is for debugging only. The rest still holds.

Elsewhere (macOS) `protect` does nothing: commands get no secrets in their environment, but a process of
the same user can still read the server's initial environment (`ps -E`), as it can debug it.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp_codetools.settings import Settings
from mcp_codetools.shell import spawning

logger = logging.getLogger(__name__)

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_LOWER = 47, 3
_CAP_SETPCAP = 8
DEBUGGABLE_VAR = "MCP_CODETOOLS_DEBUGGABLE"
DROPPED_CAPS = {"CAP_SYS_PTRACE": 19, "CAP_PERFMON": 38}
"""Capabilities commands never get: each lets a process read another's environment or memory."""


@dataclass(frozen=True, slots=True)
class Protection:
    """What `protect` did, and what it could not do (each note says why)."""

    non_dumpable: bool = False
    erased: tuple[str, ...] = ()
    """Variables erased from the initial environment block."""
    dropped: tuple[str, ...] = ()
    """Capabilities the server's commands no longer get."""
    notes: tuple[str, ...] = field(default=())


def protect(is_secret: Callable[[str], bool]) -> Protection:
    """Keep the secrets (the variables `is_secret` names) and the process itself from its commands.

    Call it once at start-up, from the main thread, before any other thread starts: the bounding set is
    a per-thread attribute that new threads copy from the thread that creates them.
    """
    if not sys.platform.startswith("linux"):
        return Protection(notes=("not Linux: the server's environment stays readable by processes of its user",))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return Protection(notes=(f"libc could not be loaded ({exc}): nothing was hardened",))
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.prctl.restype = ctypes.c_int
    notes: list[str] = []
    non_dumpable = False
    if os.environ.get(DEBUGGABLE_VAR) == "1":
        notes.append(f"{DEBUGGABLE_VAR}=1: left dumpable, so processes of this user can read its memory")
    elif libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0:
        non_dumpable = True
    else:
        notes.append(f"could not mark the process non-dumpable ({os.strerror(ctypes.get_errno())})")
    dropped = _drop_caps(libc, notes)
    erased = _erase_secrets(libc, is_secret, notes)
    if threading.active_count() > 1 or _thread_count() > 1:
        notes.append("other threads were running: commands they start keep the full bounding set")
    return Protection(non_dumpable, erased, dropped, tuple(notes))


def _caps(field_name: str) -> int:
    """A capability set of this thread from /proc/thread-self/status (`CapEff`, `CapBnd`, `CapAmb`)."""
    try:
        with open("/proc/thread-self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def _drop_caps(libc: ctypes.CDLL, notes: list[str]) -> tuple[str, ...]:
    bounding, ambient, effective = _caps("CapBnd"), _caps("CapAmb"), _caps("CapEff")
    if bounding == 0 and os.geteuid() == 0:
        notes.append("the capability sets could not be read: commands run as root keep every capability")
    dropped = []
    for name, bit in DROPPED_CAPS.items():
        if ambient >> bit & 1:
            libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_LOWER, bit, 0, 0)
        if not bounding >> bit & 1:
            continue
        if effective >> _CAP_SETPCAP & 1:
            if libc.prctl(_PR_CAPBSET_DROP, bit, 0, 0, 0) == 0:
                dropped.append(name)
                continue
            notes.append(f"could not drop {name} from the bounding set ({os.strerror(ctypes.get_errno())})")
        elif os.geteuid() == 0:
            # Root without CAP_SETPCAP: its commands, also root, get every capability of the bounding set.
            notes.append(f"running as root without CAP_SETPCAP: commands keep {name}")
    return tuple(dropped)


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _environment_block() -> tuple[int, int] | None:
    """Where the initial environment lies in memory (`env_start`, `env_end` of /proc/self/stat)."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            raw = handle.read()
        fields = raw[raw.rfind(b")") + 2 :].split()
        # fields[0] is the state, field 3 of the line; env_start and env_end are fields 50 and 51.
        return int(fields[47]), int(fields[48])
    except (OSError, ValueError, IndexError):
        return None


def _erase_secrets(libc: ctypes.CDLL, is_secret: Callable[[str], bool], notes: list[str]) -> tuple[str, ...]:
    """Erase the secrets' entries from the environment block and drop them from libc's `environ`."""
    try:
        environ = ctypes.POINTER(ctypes.c_void_p).in_dll(libc, "environ")
    except ValueError:
        notes.append("libc has no `environ`: the secrets stay in the initial environment block")
        return ()
    found: list[tuple[str, int, int]] = []
    index = 0
    while (address := environ[index]) is not None:
        entry = ctypes.string_at(address)
        name = os.fsdecode(entry.partition(b"=")[0])
        if is_secret(name):
            found.append((name, address, len(entry)))
        index += 1
    block = _environment_block()
    names = sorted({name for name, _, _ in found})
    for name in names:
        os.unsetenv(name)  # libc's own removal, before the bytes go, so it still matches the name
    for name, address, size in found:
        if block is not None and block[0] <= address and address + size <= block[1]:
            ctypes.memset(address, 0, size)
        else:
            # Set after start-up (libc's own copy, which it may reuse): out of /proc/<pid>/environ anyway.
            notes.append(f"{name} lies outside the initial environment block and was only unset")
    return tuple(names)


def protect_server(settings: Settings) -> Protection:
    """`protect` for the server's secrets (`spawning.is_secret` with the settings' exclude list), logged."""
    done = protect(lambda name: spawning.is_secret(name, settings.bash_env_exclude))
    logger.info(
        "hardened: non-dumpable %s; erased from the environment block: %s; commands lose: %s",
        done.non_dumpable,
        ", ".join(done.erased) or "nothing",
        ", ".join(done.dropped) or "nothing",
    )
    for note in done.notes:
        logger.warning("hardening: %s", note)
    return done
