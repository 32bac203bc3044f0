"""The Landlock launcher: `python -I -S landlock.py --write DIR … [options] -- CMD`.

Options: `--hide PATH`, `--read-only PATH` (each repeatable), `--chdir DIR`, `--no-network`, `--supervise`.

It restricts itself (writes only beneath the given folders, and to a few harmless devices; reads everywhere
but beneath the hidden paths; TCP bind and connect denied when asked and the kernel's ABI has it; from ABI
6, signals and abstract Unix sockets only within the command's own processes), sets no_new_privs, then
runs the command, so the restriction holds for it and everything it starts. A separate process rather than
a `preexec_fn`: nothing runs between fork and exec in a process with other threads.

Landlock only grants, and a grant on a folder holds for everything beneath it, so hiding `~/.ssh` means
granting reads on everything else (`around`): every entry of `/` but `home`, every entry of `/home` but
the user's folder, every entry of that folder but `.ssh`. The folders on the way to a hidden path cannot
be listed then (`ls ~` fails; `ls ~/project` works), and an entry created in one of them after the
command started is not readable by it.

The read-only paths cannot be kept that way without freezing folders: writes would be granted on each
entry beside a kept path and beside each folder on the way to it, never on those folders themselves, so
no entry could be created, removed or renamed at a root's top level or at `.git`'s. With `--supervise`
(what the server passes wherever its probe saw it work) this process instead keeps the looser layer (the
writable folders whole) and, importing `supervisor.py` and `landlock_guard.py` from its own folder rather
than starting another Python, serves the command: a seccomp filter sends it every call that writes by name,
and it checks each against the kept paths by identity before carrying it out (`landlock_guard.py`). The
command gets the frozen layer on top as well, for anything the filter does not send. Without `--supervise`
(no seccomp user notification, Linux < 5.9) the frozen layer alone keeps the read-only paths, as it also
keeps a path that does not exist yet: Landlock has no rule for a name, only for what is beneath a folder.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522

_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_WRITES_ABI1 = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
"""WRITE_FILE, REMOVE_DIR, REMOVE_FILE and every MAKE_* right."""
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_FS_IOCTL_DEV = 1 << 15  # ABI 5
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP; ABI 4
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def restrict(
    writable: Sequence[str], *, deny_network: bool, hidden: Sequence[str] = (), read_only: Sequence[str] = ()
) -> int:
    """Restrict this process; returns the ABI used. Raises OSError when the kernel refuses."""
    ruleset, abi = rules(writable, deny_network=deny_network, hidden=hidden, read_only=read_only)
    try:
        enforce(ruleset)
    finally:
        os.close(ruleset)
    return abi


def enforce(ruleset: int) -> None:
    """Set no_new_privs and add `ruleset` as a layer on this process. Raises OSError when the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")


def rules(
    writable: Sequence[str], *, deny_network: bool, hidden: Sequence[str] = (), read_only: Sequence[str] = ()
) -> tuple[int, int]:
    """A ruleset's fd for these folders and paths, and the ABI used. Raises OSError when the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    abi = int(libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    if abi < 1:
        raise OSError(ctypes.get_errno(), "Landlock is not available")
    writes = _FS_WRITES_ABI1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    writes |= _FS_IOCTL_DEV if abi >= 5 else 0
    reads = _FS_READ_FILE | _FS_READ_DIR if hidden else 0
    net = _NET_TCP if deny_network and abi >= 4 else 0
    # Signals only within the command's own processes (not the server, the client or the user's other
    # programs), and abstract Unix sockets only within them when the network is denied (bwrap's network
    # namespace cuts those off too).
    scoped = (_SCOPE_SIGNAL | (_SCOPE_ABSTRACT_UNIX if deny_network else 0)) if abi >= 6 else 0
    attr = _RulesetAttr(writes | reads, net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = int(libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        file_writes = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0) | (_FS_IOCTL_DEV if abi >= 5 else 0)
        for folder in writable:
            # Hidden paths are left writable: freezing their folders would cost much and keep nothing secret
            # (what is moved or linked out of a hidden path would gain reads, which Landlock refuses).
            inside = [p for p in read_only if p.startswith(folder.rstrip("/") + "/")]
            # A root above a hidden path (the home folder) gets no reads: they come from the grants around.
            above = any(h.startswith(folder.rstrip("/") + "/") for h in hidden)
            folder_rights = (0 if inside else writes) | (0 if above else reads)
            if folder_rights:
                _allow(libc, ruleset, folder, folder_rights)
            for path, is_dir in around(inside, top=folder):
                _allow(libc, ruleset, path, writes if is_dir else file_writes, follow=False)
        for device in _DEVICES:
            if os.path.exists(device):
                _allow(libc, ruleset, device, file_writes | (_FS_READ_FILE if hidden else 0))
        for path, is_dir in around(hidden):
            _allow(libc, ruleset, path, reads if is_dir else _FS_READ_FILE, follow=False)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset, abi


def around(kept: Sequence[str], top: str = "/") -> list[tuple[str, bool]]:
    """Every path to grant on so that all beneath `top` is granted but what lies beneath `kept` (absolute, real).

    Returns (path, is a directory) pairs: the entries beside each kept path and beside each folder on
    the way to it, from `top` down (`top` and those folders themselves get nothing). A kept path need
    not exist: its folder is on the way all the same, so nothing can be created in it. Symbolic links
    are left out: what they point to is granted (or not) under its own path.
    """
    top = os.path.normpath(top)
    prefix = top.rstrip("/") + "/"
    kept_set = {os.path.normpath(k) for k in kept if os.path.normpath(k).startswith(prefix)}
    on_the_way = {os.path.dirname(k) for k in kept_set}
    for folder in list(on_the_way):
        while folder != top and folder.startswith(prefix):
            folder = os.path.dirname(folder)
            on_the_way.add(folder)
    granted: list[tuple[str, bool]] = []
    for folder in sorted(on_the_way):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # a folder this process cannot list: nothing beside the kept path is granted there
        for entry in entries:
            if entry.path in kept_set or entry.path in on_the_way or entry.is_symlink():
                continue
            granted.append((entry.path, entry.is_dir(follow_symlinks=False)))
    return granted


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int, *, follow: bool = True) -> None:
    """Grant `rights` beneath `path`.

    A grant around a hidden or read-only path (`follow=False`) that cannot be made is skipped: the entry
    stays unreadable or read-only, which fails closed, and one odd file does not stop every command.
    """
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    except OSError:
        if follow:
            raise
        return
    try:
        rule = _PathBeneath(rights, fd)
        if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), 0):
            if follow:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def main(argv: Sequence[str]) -> int:
    """Parse the options, restrict this process, and exec the command (returns only on failure)."""
    writable: list[str] = []
    hidden: list[str] = []
    read_only: list[str] = []
    deny_network = supervise = False
    chdir: str | None = None
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option == "--write" and args:
            writable.append(args.pop(0))
        elif option == "--hide" and args:
            hidden.append(args.pop(0))
        elif option == "--read-only" and args:
            read_only.append(args.pop(0))
        elif option == "--chdir" and args:
            chdir = args.pop(0)
        elif option == "--no-network":
            deny_network = True
        elif option == "--supervise":
            supervise = True
        else:
            print(f"landlock launcher: unknown option {option!r}", file=sys.stderr)
            return 2
    command = args[1:]
    if not command:
        print("landlock launcher: no command after --", file=sys.stderr)
        return 2
    if supervise:
        return _supervised(
            command, writable, deny_network=deny_network, hidden=hidden, read_only=read_only, chdir=chdir
        )
    try:
        restrict(writable, deny_network=deny_network, hidden=hidden, read_only=read_only)
        if chdir is not None:
            os.chdir(chdir)
        _drop_capabilities()
    except OSError as exc:  # fail closed: never run the command unconfined
        print(f"landlock launcher: cannot confine the command ({exc}); it was not run", file=sys.stderr)
        return 126
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


def _drop_capabilities() -> None:
    """Give up every capability: a root server's command could otherwise make device nodes where it may write.

    With no_new_privs, exec cannot bring them back (the supervised path drops them in `supervisor.py`).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAP_AMBIENT_CLEAR_ALL) failed")
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    if libc.capset(header, (ctypes.c_uint32 * 6)()) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _supervised(
    command: Sequence[str],
    writable: Sequence[str],
    *,
    deny_network: bool,
    hidden: Sequence[str],
    read_only: Sequence[str],
    chdir: str | None,
) -> int:
    """Run `command` under two layers, served by the supervisor that carries out its writes (`landlock_guard.py`).

    This process keeps the looser layer: the roots and scratch writable whole, reads and the network as
    for the command. The command gets the stricter one on top (the kept paths read-only, their folders
    frozen), for whatever the supervisor's filter does not send it. Both are built here, before either is
    enforced; the child only enforces its own.
    """
    try:
        loose, _ = rules(writable, deny_network=deny_network, hidden=hidden)
        strict, _ = rules(writable, deny_network=deny_network, read_only=read_only)
        try:
            enforce(loose)
        finally:
            os.close(loose)
        if chdir is not None:
            os.chdir(chdir)
    except OSError as exc:  # fail closed: never run the command unconfined
        print(f"landlock launcher: cannot confine the command ({exc}); it was not run", file=sys.stderr)
        return 126
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # isolated mode leaves this folder off
    guard = __import__("landlock_guard")
    supervisor = sys.modules["supervisor"]
    machine = os.uname().machine
    if machine in supervisor.AUDIT_ARCH:  # else `run` refuses the command
        # It carries out the command's writes: with a root server's other capabilities it could write what the
        # command (which has none) cannot. CAP_SYS_PTRACE stays, to read a command that made itself undumpable.
        supervisor.drop_capabilities(machine, keep_ptrace=True)
    return int(supervisor.run(read_only, command, serve=guard.LandlockSupervisor, confine=lambda: enforce(strict)))


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    # Without the interpreter's teardown, which took 10-20 ms after a supervised command (sandbox_cost.py)
    os._exit(status)
