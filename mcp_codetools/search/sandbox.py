"""A Landlock sandbox for rg: it may read only below the folder (or the one file) it was given.

Pinning the search path (targets.PinnedTarget) keeps rg's starting point; but rg walks below it by path,
so a folder swapped for a link out while rg walks could still lend it outside files. Landlock rules
hold on the folders themselves, not on paths: whatever link rg follows, the kernel lets it read only
below the pinned folder, plus the ignore files of the folders above it (read as rules, never shown).

Landlock restricts a thread and what it starts, for good; so rg is started from a thread made for that
one start. Where the kernel lacks Landlock (before 5.13, or disabled) rg runs unsandboxed, and
confinement rests on the pinned path and the check of the names rg reports.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
IGNORE_FILES = (".gitignore", ".ignore", ".rgignore", ".git", ".git/info/exclude")
"""What rg reads in the folders above the one it searches."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _load() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    return libc


_libc = _load()
enabled: bool = _libc is not None and os.environ.get("MCP_CODETOOLS_RG_SANDBOX", "") != "off"
"""Whether to sandbox rg; cleared when the kernel says it has no Landlock. Tests turn it off to compare."""


def available() -> bool:
    """Whether this kernel has Landlock (asked once per process)."""
    global enabled
    if not enabled or _libc is None:
        return False
    version = int(_libc.syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION))
    if version < 1:
        enabled = False
    return enabled


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def _restrict(allowed: list[tuple[int, int]]) -> None:
    """Restrict the calling thread (and what it starts) to reading the given (descriptor, access) pairs."""
    assert _libc is not None
    attr = _RulesetAttr(_READ_FILE | _READ_DIR)
    ruleset = _check(int(_libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)), "ruleset")
    try:
        for fd, access in allowed:
            rule = _PathBeneathAttr(access, fd)
            _check(int(_libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)), "rule")
        _check(int(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)), "no_new_privs")
        _check(int(_libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0)), "restrict")
    finally:
        os.close(ruleset)


P = TypeVar("P")
"""The started process: a Popen, or fdspawn's."""

SYSTEM_LIBRARIES = (
    "/lib",
    "/lib64",
    "/lib32",
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib32",
    "/usr/local/lib",
    "/etc/ld.so.cache",
)
"""What a dynamically linked rg needs to read to start (its loader and shared libraries)."""


@functools.lru_cache(maxsize=8)
def executable_kind(path: str) -> str:
    """Tell "static" (an ELF file with no loader), "dynamic" (an ELF file with one), or "other" (a script...)."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit ELF only; anything else is not sandboxed
                return "other"
            order = "<" if header[5] == 1 else ">"
            (phoff,) = struct.unpack_from(order + "Q", header, 32)
            phentsize, phnum = struct.unpack_from(order + "HH", header, 54)
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
    except (OSError, struct.error, IndexError):
        return "other"
    for index in range(phnum):
        (kind,) = struct.unpack_from(order + "I", table, index * phentsize)
        if kind == 3:  # PT_INTERP
            return "dynamic"
    return "static"


def _system_libraries() -> list[int]:
    fds: list[int] = []
    for path in SYSTEM_LIBRARIES:
        try:
            fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK))
        except OSError:
            continue
    return fds


def _ignore_files_above(folder: Path) -> list[int]:
    """Descriptors of the ignore files in the folders above `folder` (rg reads them as rules)."""
    fds: list[int] = []
    for parent in folder.parents:
        for name in IGNORE_FILES:
            try:
                fd = os.open(parent / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a .git folder: rg only looks at it
                os.close(fd)
                continue
            fds.append(fd)
    return fds


def spawn(start: Callable[[], P], fd: int, is_dir: bool, real: Path, executable: str) -> P:
    """Run `start` (which spawns `executable`) in a thread that may read only what rg needs.

    That is: below `fd` (the pinned target), the ignore files above it, and the executable itself (exec
    reads it).

    Raises:
        OSError: the sandbox could not be set up (then rg is not started: fail closed).
    """
    kind = executable_kind(executable)
    if kind == "other":  # a script or an unknown format: what it needs to read cannot be told
        return start()
    ignore_fds = _ignore_files_above(real if is_dir else real.parent)
    ignore_fds.append(os.open(executable, os.O_RDONLY | os.O_CLOEXEC))
    if kind == "dynamic":
        ignore_fds += _system_libraries()
    allowed = [(fd, _READ_FILE | _READ_DIR if is_dir else _READ_FILE)] + [(f, _READ_FILE) for f in ignore_fds]
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            _restrict(allowed)
            box["process"] = start()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    try:
        worker = threading.Thread(target=work, name="rg-sandbox", daemon=True)
        worker.start()
        worker.join()
    finally:
        for f in ignore_fds:
            os.close(f)
    if "error" in box:
        error = box["error"]
        if isinstance(error, OSError) and error.errno in (errno.ENOSYS, errno.EOPNOTSUPP):
            global enabled
            enabled = False
            return start()
        raise error
    process: P = box["process"]
    return process
