"""The Landlock launcher: `python -I -S landlock.py --write DIR … [--chdir DIR] [--no-network] -- CMD …`.

It restricts itself (writes only beneath the given folders and to a few harmless devices; TCP bind and
connect denied when asked and the kernel's ABI has it), sets no_new_privs, then execs the command, so the
restriction holds for it and everything it starts. A separate process rather than a `preexec_fn`:
nothing runs between fork and exec in a process with other threads.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_FS_WRITE_FILE = 1 << 1
_FS_WRITES_ABI1 = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
"""WRITE_FILE, REMOVE_DIR, REMOVE_FILE and every MAKE_* right."""
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_FS_IOCTL_DEV = 1 << 15  # ABI 5
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP; ABI 4
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def restrict(writable: Sequence[str], *, deny_network: bool) -> int:
    """Restrict this process; returns the ABI used. Raises OSError when the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    abi = int(libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    if abi < 1:
        raise OSError(ctypes.get_errno(), "Landlock is not available")
    fs = _FS_WRITES_ABI1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    fs |= _FS_IOCTL_DEV if abi >= 5 else 0
    net = _NET_TCP if deny_network and abi >= 4 else 0
    attr = _RulesetAttr(fs, net, 0)
    size = 8 if abi < 4 else 16
    ruleset = int(libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for folder in writable:
            _allow(libc, ruleset, folder, fs)
        device_rights = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0) | (_FS_IOCTL_DEV if abi >= 5 else 0)
        for device in _DEVICES:
            if os.path.exists(device):
                _allow(libc, ruleset, device, device_rights)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneath(rights, fd)
        if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), 0):
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def main(argv: Sequence[str]) -> int:
    """Parse the options, restrict this process, and exec the command (returns only on failure)."""
    writable: list[str] = []
    deny_network = False
    chdir: str | None = None
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option == "--write" and args:
            writable.append(args.pop(0))
        elif option == "--chdir" and args:
            chdir = args.pop(0)
        elif option == "--no-network":
            deny_network = True
        else:
            print(f"landlock launcher: unknown option {option!r}", file=sys.stderr)
            return 2
    command = args[1:]
    if not command:
        print("landlock launcher: no command after --", file=sys.stderr)
        return 2
    try:
        restrict(writable, deny_network=deny_network)
    except OSError as exc:  # fail closed: never run the command unconfined
        print(f"landlock launcher: cannot confine the command ({exc}); it was not run", file=sys.stderr)
        return 126
    try:
        if chdir is not None:
            os.chdir(chdir)
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
