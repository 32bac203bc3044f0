"""bubblewrap's launcher that keeps missing protected names from being made: `supervisor.py --keep PATH … -- CMD`.

A bind mount needs something to mount over, so a kept path that does not exist (`.envrc`, `.vscode/`,
`.git/hooks`) cannot be kept by a mount. This launcher runs inside bwrap as the PID namespace's first
process. It forks the command with a seccomp filter that sends every call able to make a name (`open` with
`O_CREAT`, `mkdir`, `mknod`, `symlink`, `link`, `rename`, `bind`) to this process, which carries the call out
itself and answers with the result. It never lets the kernel go on with the call: the kernel would read the
path again, after the check, from memory the command can change (a race).

Each check is made on the folder the name would be made in, opened as the command would reach it (its cwd
or dirfd, the kernel following links on the way), and named by its identity (device and inode), never by
path text: a name is refused when it is a kept path, or a folder on the way to one, that does not exist yet;
and a rename whose source or target is one. A link at the end of the path is followed here, hop by hop, so
a dangling link to `.envrc` cannot make it. Being one thread, the supervisor's own check and operation are
never interleaved with another of its operations. `openat2` (its flags are in memory, which the filter
cannot read) and `io_uring_setup` (its operations pass no filter) answer ENOSYS; callers fall back to
`openat` and plain syscalls. A command cannot add a listener of its own (which would take the calls first).

The launcher is not dumpable, so commands cannot trace or read it. It keeps CAP_SYS_PTRACE, which bwrap
leaves it (the command gets none), so that it can read the memory of a command that made itself not
dumpable (ssh does) and whose calls it would otherwise have to refuse. As PID 1 it reaps orphans, passes
SIGTERM, SIGINT and SIGHUP to the command, and exits with the command's status (a signal as 128+n, as bash
reports it), which ends the namespace. If it dies the kernel fails every such call (ENOSYS): closed. An
architecture without a table here (x86_64 and aarch64 have one) is refused at start, with status 126.

Under Landlock the same loop runs inside the Landlock launcher, not as PID 1, with `landlock_guard.py`'s
subclass, which has every write by name sent to it too (`NOTIFIED_WRITES`).

Standard library and ctypes only: it is run as a file, without `site`, for each command.
"""

from __future__ import annotations

# The C `_signal`, where `signal` would import enum, and `_collections_abc`, loaded already at start-up
# (`collections.abc` and `typing` are not): this runs before every command.
import _signal as signal  # type: ignore[import-not-found]
import _thread
import ctypes
import errno
import os
import select
import stat
import sys
from _collections_abc import Callable, Sequence

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_I386, _ARM = 0x40000003, 0x40000028
# name: (x86_64, aarch64); None where the architecture has no such call
SYSCALLS: dict[str, tuple[int | None, int | None]] = {
    "open": (2, None), "creat": (85, None), "openat": (257, 56), "mkdir": (83, None), "mkdirat": (258, 34),
    "mknod": (133, None), "mknodat": (259, 33), "symlink": (88, None), "symlinkat": (266, 36),
    "link": (86, None), "linkat": (265, 37), "rename": (82, None), "renameat": (264, 38),
    "renameat2": (316, 276), "bind": (49, 200), "openat2": (437, 437), "io_uring_setup": (425, 425),
    "seccomp": (317, 277), "pidfd_getfd": (438, 438), "capset": (126, 91),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "open_tree": (428, 428),
    "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432),
    "fspick": (433, 433), "mount_setattr": (442, 442), "truncate": (76, 45), "unlink": (87, None),
    "unlinkat": (263, 35), "rmdir": (84, None),
}  # fmt: skip
_NOTIFIED = ("creat", "mkdir", "mkdirat", "mknod", "mknodat", "symlink", "symlinkat", "link", "linkat", "rename")
NOTIFIED = (*_NOTIFIED, "renameat", "renameat2", "bind")
"""Always sent to the supervisor; `open` and `openat` only with O_CREAT."""
NOTIFIED_WRITES = ("truncate", "unlink", "unlinkat", "rmdir")
"""Sent as well when the supervisor carries out every write by name (under Landlock, `landlock_guard.py`),
and then `open` and `openat` with any of O_CREAT, O_WRONLY, O_RDWR and O_TRUNC, unless O_PATH."""
REFUSED_NOSYS = ("openat2", "io_uring_setup", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
                 "mount_setattr")  # fmt: skip
REFUSED_EPERM = ("mount", "umount2", "pivot_root")
"""No mounts, not even in a user namespace the command makes (`unshare -Urm`): an overlay whose upper layer is
a root makes names inside the kernel, past the filter, and its folders have an identity of their own."""

_RET_KILL_PROCESS, _RET_ERRNO, _RET_USER_NOTIF, _RET_ALLOW = 0x80000000, 0x00050000, 0x7FC00000, 0x7FFF0000
_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_X32_BIT = 0x40000000
_SET_MODE_FILTER, _FLAG_NEW_LISTENER, _FLAG_WAIT_KILLABLE_RECV = 1, 1 << 3, 1 << 5
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER = 4, 38, 36
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_CAP_SYS_PTRACE = 19
_IOCTL_RECV, _IOCTL_SEND, _IOCTL_ID_VALID, _IOCTL_ADDFD = 0xC0502100, 0xC0182101, 0x40082102, 0x40182103
_ADDFD_FLAG_SEND = 1 << 1
_AT_FDCWD, _AT_SYMLINK_FOLLOW, _AT_EMPTY_PATH = -100, 0x400, 0x1000
_RENAME_EXCHANGE = 1 << 1
_MAX_HOPS = 40
_PATH_MAX = 4096
_AF_UNIX = 1


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


class _Notif(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64), ("pid", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("nr", ctypes.c_int32),
        ("arch", ctypes.c_uint32), ("ip", ctypes.c_uint64), ("args", ctypes.c_uint64 * 6),
    ]  # fmt: skip


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Resp(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("val", ctypes.c_int64), ("error", ctypes.c_int32), ("flags", ctypes.c_uint32)]


class _AddFd(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint64), ("flags", ctypes.c_uint32), ("srcfd", ctypes.c_uint32),
        ("newfd", ctypes.c_uint32), ("newfd_flags", ctypes.c_uint32),
    ]  # fmt: skip


def program(machine: str, *, writes: bool = False) -> list[tuple[int, int, int, int]]:
    """The filter for `machine`, as (code, jt, jf, k) rows: jumps are resolved from labels here.

    `writes`: send every call that writes by name too (`NOTIFIED_WRITES`, and opens for writing).
    """
    column = 0 if machine == "x86_64" else 1
    number: dict[str, int] = {name: nr for name, nrs in SYSCALLS.items() if (nr := nrs[column]) is not None}
    rows: list[tuple[int | str, object, object, int]] = [
        (_LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
        (_JEQ, 0, "kill", AUDIT_ARCH[machine]),  # another ABI (i386 on x86_64, arm32 on aarch64): not ours
        (_LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
    ]
    if machine == "x86_64":
        rows.append((_JGE, "nosys", 0, _X32_BIT))  # the x32 ABI shares the arch value: refuse it
    notified = (*NOTIFIED, *NOTIFIED_WRITES) if writes else NOTIFIED
    rows += [(_JEQ, "notify", 0, number[name]) for name in notified if name in number]
    rows += [(_JEQ, "nosys", 0, number[name]) for name in REFUSED_NOSYS]
    rows += [(_JEQ, "eperm", 0, number[name]) for name in REFUSED_EPERM]
    rows.append((_JEQ, "seccomp", 0, number["seccomp"]))
    if "open" in number:
        rows.append((_JEQ, "open", 0, number["open"]))
    routed = os.O_CREAT | (os.O_WRONLY | os.O_RDWR | os.O_TRUNC if writes else 0)
    # O_PATH makes the kernel ignore every other flag: such an open writes nothing
    flags = [(_JSET, "allow", 0, os.O_PATH)] if writes else []
    rows += [
        (_JEQ, 0, "allow", number["openat"]),
        (_LD_ABS_W, 0, 0, 16 + 8 * 2),  # openat's flags (low half of args[2])
        *flags,
        (_JSET, "notify", "allow", routed),
    ]
    if "open" in number:
        rows += [("open:", 0, 0, 0), (_LD_ABS_W, 0, 0, 16 + 8 * 1), *flags, (_JSET, "notify", "allow", routed)]
    rows += [
        ("seccomp:", 0, 0, 0),
        (_LD_ABS_W, 0, 0, 16 + 8 * 1),  # seccomp(op, flags, …): a listener of the command's own
        (_JSET, "eperm", "allow", _FLAG_NEW_LISTENER),
        ("notify:", 0, 0, 0), (_RET, 0, 0, _RET_USER_NOTIF),
        ("allow:", 0, 0, 0), (_RET, 0, 0, _RET_ALLOW),
        ("nosys:", 0, 0, 0), (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS),
        ("eperm:", 0, 0, 0), (_RET, 0, 0, _RET_ERRNO | errno.EPERM),
        ("kill:", 0, 0, 0), (_RET, 0, 0, _RET_KILL_PROCESS),
    ]  # fmt: skip
    labels: dict[str, int] = {}
    code: list[tuple[int | str, object, object, int]] = []
    for row in rows:
        if isinstance(row[0], str):
            labels[row[0][:-1]] = len(code)
        else:
            code.append(row)

    def jump(target: object, at: int) -> int:
        return target if isinstance(target, int) else labels[str(target)] - at - 1

    return [(int(c), jump(jt, i), jump(jf, i), k) for i, (c, jt, jf, k) in enumerate(code)]


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def drop_capabilities(machine: str, *, keep_ptrace: bool = False) -> None:
    """Give up every capability (bwrap leaves CAP_SYS_PTRACE, for the supervisor alone): none reaches the command.

    With no_new_privs, exec cannot bring them back, not even for root. `keep_ptrace`: keep CAP_SYS_PTRACE if
    this process has it (the supervisor of a root server under Landlock, which needs no other).
    """
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; two 32-bit halves, all empty
    if keep_ptrace and _has_ptrace():
        data[0] = data[1] = 1 << _CAP_SYS_PTRACE
    number = SYSCALLS["capset"][0 if machine == "x86_64" else 1]
    _check(_libc.syscall(number, header, data), "capset")


def _has_ptrace() -> bool:
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"CapPrm:"):
                return bool(int(line.split()[1], 16) >> _CAP_SYS_PTRACE & 1)
    return False


def compiled_filter(machine: str, *, writes: bool = False) -> _Prog:
    """The filter in the kernel's form, built before the fork: in the child, each Python step copies pages."""
    rows = program(machine, writes=writes)
    table = (_Filter * len(rows))(*(_Filter(*row) for row in rows))
    return _Prog(len(rows), table)


def install_filter(machine: str, prog: _Prog) -> int:
    """Set no_new_privs and the filter (`compiled_filter`) on this process; returns the listener's fd."""
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    nr = SYSCALLS["seccomp"][0 if machine == "x86_64" else 1]
    for flags in (_FLAG_NEW_LISTENER | _FLAG_WAIT_KILLABLE_RECV, _FLAG_NEW_LISTENER):  # the first from Linux 5.19
        fd = _libc.syscall(nr, _SET_MODE_FILTER, flags, ctypes.byref(prog))
        if fd >= 0 or ctypes.get_errno() != errno.EINVAL:
            break
    return _check(fd, "seccomp user notification (Linux 5.9+)")


class Refused(Exception):
    """An answer of -errno for the call."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code or errno.EIO  # never a success by mistake


class Deferred(Exception):
    """The open waits for a FIFO's other end: it is finished on a thread of its own (`Supervisor._open_later`)."""

    def __init__(self, pinned: int, flags: int) -> None:
        super().__init__(pinned)
        self.pinned, self.flags = pinned, flags


class Supervisor:
    """Serves one listener: reads each call's arguments, checks the names, carries the call out."""

    WRITES = False
    """Whether the filter sends every write by name here too (`program`'s `writes`)."""

    def __init__(self, listener: int, kept: Sequence[str], machine: str) -> None:
        self.listener = listener
        self.machine = machine
        self.root = os.open("/", os.O_PATH | os.O_DIRECTORY)
        self.guarded = guarded_names(kept)
        column = 0 if machine == "x86_64" else 1
        handlers: dict[str, Callable[[_Notif], int | None]] = {
            "open": lambda n: self._open(_AT_FDCWD, n.args[0], n.args[1], n.args[2], n),
            "creat": lambda n: self._open(_AT_FDCWD, n.args[0], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, n.args[1], n),
            "openat": lambda n: self._open(_int(n.args[0]), n.args[1], n.args[2], n.args[3], n),
            "mkdir": lambda n: self._make(_AT_FDCWD, n.args[0], "dir", n.args[1], 0, n),
            "mkdirat": lambda n: self._make(_int(n.args[0]), n.args[1], "dir", n.args[2], 0, n),
            "mknod": lambda n: self._make(_AT_FDCWD, n.args[0], "node", n.args[1], n.args[2], n),
            "mknodat": lambda n: self._make(_int(n.args[0]), n.args[1], "node", n.args[2], n.args[3], n),
            "symlink": lambda n: self._symlink(n.args[0], _AT_FDCWD, n.args[1], n),
            "symlinkat": lambda n: self._symlink(n.args[0], _int(n.args[1]), n.args[2], n),
            "link": lambda n: self._link(_AT_FDCWD, n.args[0], _AT_FDCWD, n.args[1], 0, n),
            "linkat": lambda n: self._link(_int(n.args[0]), n.args[1], _int(n.args[2]), n.args[3], n.args[4], n),
            "rename": lambda n: self._rename(_AT_FDCWD, n.args[0], _AT_FDCWD, n.args[1], 0, n),
            "renameat": lambda n: self._rename(_int(n.args[0]), n.args[1], _int(n.args[2]), n.args[3], 0, n),
            "renameat2": lambda n: self._rename(_int(n.args[0]), n.args[1], _int(n.args[2]), n.args[3], n.args[4], n),
            "bind": lambda n: self._bind(_int(n.args[0]), n.args[1], n.args[2], n),
        }
        self.handlers = {SYSCALLS[name][column]: handler for name, handler in handlers.items()}
        self.proc = os.stat("/proc").st_dev
        self.me = f"/proc/{os.getpid()}".encode()
        self.fds: list[int] = []
        self.tid = self.tgid = self.umask = 0

    # -- serving --

    def serve_one(self) -> None:
        """Receive one call and answer it: its result, or -errno (never "go on")."""
        notif = _Notif()
        if _libc.ioctl(self.listener, _IOCTL_RECV, ctypes.byref(notif)) < 0:
            return  # interrupted, or the caller went away before it was received
        self.fds = []
        try:
            self._caller(notif)
            handler = self.handlers.get(notif.nr)
            result = -errno.ENOSYS if handler is None else handler(notif)
        except Refused as exc:
            result = -exc.code
        except OSError as exc:
            result = -(exc.errno or errno.EIO)
        except Exception:  # a case not foreseen: refuse the call, never let it through
            result = -errno.EIO
        finally:
            for fd in self.fds:
                os.close(fd)
        if result is not None:
            self._answer(notif.id, result)

    def _answer(self, notif_id: int, result: int) -> None:
        resp = _Resp(notif_id, max(result, 0), min(result, 0), 0)
        _libc.ioctl(self.listener, _IOCTL_SEND, ctypes.byref(resp))  # ENOENT: the caller is gone or interrupted

    def _valid(self, notif: _Notif) -> None:
        """Raise unless the caller is still waiting: what was read from /proc is then the caller's."""
        if _libc.ioctl(self.listener, _IOCTL_ID_VALID, ctypes.byref(ctypes.c_uint64(notif.id))) < 0:
            raise Refused(errno.ESRCH)

    def _keep(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def _string(self, notif: _Notif, address: int) -> bytes:
        """A NUL-terminated string from the caller's memory, read once."""
        if address == 0:
            raise Refused(errno.EFAULT)
        data = b""
        while len(data) < _PATH_MAX:
            at = address + len(data)
            chunk = self._read(notif, at, min(4096 - at % 4096, _PATH_MAX - len(data)))
            if not chunk:
                raise Refused(errno.EFAULT)
            end = chunk.find(b"\0")
            if end >= 0:
                return data + chunk[:end]
            data += chunk
        raise Refused(errno.ENAMETOOLONG)

    def _memory(self, notif: _Notif, address: int, size: int) -> bytes:
        data = self._read(notif, address, size) if address else b""
        if len(data) != size:
            raise Refused(errno.EFAULT)
        return data

    def _read(self, notif: _Notif, address: int, size: int) -> bytes:
        """Up to `size` bytes of the caller's memory (fewer where a page is missing).

        process_vm_readv, not /proc/<pid>/mem: a command that made itself undumpable has its /proc files
        owned by a root that bwrap's user namespace does not map, and only the ptrace check (which
        CAP_SYS_PTRACE passes) applies to the call.
        """
        buffer = ctypes.create_string_buffer(size)
        local, remote = _IoVec(ctypes.addressof(buffer), size), _IoVec(address, size)
        got = _libc.process_vm_readv(notif.pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if got < 0:
            raise Refused(ctypes.get_errno())
        return buffer.raw[:got]

    def _base(self, notif: _Notif, dirfd: int, path: bytes) -> int:
        """The folder `path` is looked up from, as the caller's kernel would take it."""
        if path.startswith(b"/"):
            return self.root
        if dirfd != _AT_FDCWD:  # not /proc/<pid>/fd/N: see `_read`
            return self._keep(take_fd(self.tgid, dirfd, self.machine))
        return self._keep(os.open(f"/proc/{notif.pid}/cwd", os.O_PATH))

    def _caller(self, notif: _Notif) -> None:
        """The calling thread's process and umask (what it creates gets the caller's mode)."""
        self.tid, self.tgid, self.umask = notif.pid, notif.pid, 0o022
        with open(f"/proc/{notif.pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    self.umask = int(line.split()[1], 8)
                elif line.startswith(b"Tgid:"):
                    self.tgid = int(line.split()[1])
                    break

    def _umask(self, notif: _Notif) -> int:
        return self.umask

    def _callers_proc(self, path: bytes) -> bytes:
        """`path` with `/proc/self` and `/proc/thread-self` (and this process's own folder) as the caller's.

        Looked up here, they would name the supervisor: `echo > /dev/stdout` would write to its /dev/null.
        """
        own, thread = f"/proc/{self.tgid}".encode(), f"/proc/{self.tgid}/task/{self.tid}".encode()
        for prefix, caller in ((b"/proc/thread-self", thread), (self.me + b"/task/" + self.me[6:], thread),
                               (b"/proc/self", own), (self.me, own)):  # fmt: skip
            if path == prefix or path.startswith(prefix + b"/"):
                return caller + path[len(prefix) :]
        return path

    def _parent(self, base: int, path: bytes) -> tuple[int, bytes]:
        """The folder holding the path's last name (opened, links on the way followed) and that name."""
        if not path:
            raise Refused(errno.ENOENT)
        path = self._callers_proc(path) if path.startswith(b"/") else path
        trimmed = path.rstrip(b"/") or b"/"
        head, _, name = trimmed.rpartition(b"/")
        if trimmed == b"/":
            head, name = b"/", b"."
        elif not head:
            head = b"/" if trimmed.startswith(b"/") else b"."
        folder = self._keep(os.open(head, os.O_PATH | os.O_DIRECTORY, dir_fd=base))
        if os.fstat(folder).st_dev == self.proc:  # reached through a link (`/dev/fd`): whose /proc was it?
            where = os.fsencode(os.readlink(f"/proc/self/fd/{folder}"))
            if self._callers_proc(where) != where:
                folder = self._keep(os.open(self._callers_proc(where), os.O_PATH | os.O_DIRECTORY))
        return folder, name

    def _guarded_name(self, folder: int, name: bytes) -> bool:
        info = os.fstat(folder)
        return (info.st_dev, info.st_ino, name) in self.guarded

    def _exists(self, folder: int, name: bytes) -> os.stat_result | None:
        try:
            return os.lstat(name, dir_fd=folder)
        except FileNotFoundError:
            return None

    def _creatable(self, folder: int, name: bytes, *, clash: int = errno.EEXIST) -> None:
        """Raise unless `name` may be made in `folder`: a guarded name exists already (`clash`) or is refused."""
        if self._guarded_name(folder, name):
            raise Refused(clash if self._exists(folder, name) is not None else errno.EACCES)

    # -- the calls --

    def _open(self, dirfd: int, address: int, flags: int, mode: int, notif: _Notif) -> int | None:
        flags &= 0xFFFFFFFF
        path = self._string(notif, address)
        base = self._base(notif, dirfd, path)
        umask = self._umask(notif)
        self._valid(notif)
        if flags & os.O_PATH or not flags & self._hop_flags(flags):  # nothing is made or checked (sent all the same)
            fd = os.open(path, flags, dir_fd=base)
        elif flags & os.O_TMPFILE == os.O_TMPFILE:
            fd = self._open_unnamed(base, path, flags, mode & 0o7777, umask)
        else:
            if path.endswith(b"/"):
                raise Refused(errno.EISDIR)
            folder, name = self._parent(base, path)
            try:
                fd = self._open_creating(folder, name, flags, mode & 0o7777, umask)
            except Deferred as wait:
                _thread.start_new_thread(self._open_later, (notif.id, wait.pinned, wait.flags))
                return None
        try:
            return self._hand_over(notif.id, fd, flags & os.O_CLOEXEC)
        finally:
            os.close(fd)

    def _hop_flags(self, flags: int) -> int:
        """The open flags that have the path followed here hop by hop (the folder of what is opened known)."""
        return os.O_CREAT

    def _open_unnamed(self, base: int, path: bytes, flags: int, mode: int, umask: int) -> int:
        """An O_TMPFILE open (sent only when every write is): it makes no name."""
        old = os.umask(umask)
        try:
            return os.open(path, flags, mode, dir_fd=base)
        finally:
            os.umask(old)

    def _open_later(self, notif_id: int, pinned: int, flags: int) -> None:
        """Open the FIFO already checked and pinned (no name is looked up again), then answer."""
        try:
            fd = os.open(f"/proc/self/fd/{pinned}", flags)
        except OSError as exc:
            self._answer(notif_id, -(exc.errno or errno.EIO))
            return
        finally:
            os.close(pinned)
        try:
            result = self._hand_over(notif_id, fd, flags & os.O_CLOEXEC)
            if result is not None:
                self._answer(notif_id, result)
        finally:
            os.close(fd)

    def _open_found(self, folder: int, name: bytes, flags: int, *, follow: bool) -> int:
        """Open what is at `name` without making anything; a FIFO that would wait raises `Deferred`."""
        flags = (flags & ~os.O_CREAT) | (0 if follow else os.O_NOFOLLOW)
        if not flags & os.O_NONBLOCK:
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=follow)
            except OSError:
                info = None  # the open below says why
            if info is not None and stat.S_ISFIFO(info.st_mode):
                pinned = os.open(name, os.O_PATH | (flags & os.O_NOFOLLOW), dir_fd=folder)
                raise Deferred(pinned, flags & ~os.O_NOFOLLOW)  # reopened through its /proc/self/fd link
        return os.open(name, flags, dir_fd=folder)

    def _open_magic(self, folder: int, name: bytes, flags: int) -> int:
        """Open a name in /proc (`/proc/<pid>/fd/N` leads to whatever that descriptor is), link followed."""
        return self._open_found(folder, name, flags, follow=True)

    def _open_existing(self, folder: int, name: bytes, flags: int) -> int:
        """Open the file (not a link) at `name` in `folder`, as the caller asked."""
        return self._open_found(folder, name, flags, follow=False)

    def _open_creating(self, folder: int, name: bytes, flags: int, mode: int, umask: int) -> int:
        """Open `name` in `folder` following links hop by hop, making it when O_CREAT says so and it may be made."""
        for _ in range(_MAX_HOPS):
            if os.fstat(folder).st_dev == self.proc:  # nothing can be made in /proc; its fd links are magic
                return self._open_magic(folder, name, flags)
            info = self._exists(folder, name)
            if info is None and not flags & os.O_CREAT:
                raise Refused(errno.ENOENT)
            if info is None:
                self._creatable(folder, name)
                old = os.umask(umask)
                try:
                    return os.open(name, flags | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder)
                except FileExistsError:
                    if flags & os.O_EXCL:
                        raise
                    continue  # made meanwhile: open what is there
                finally:
                    os.umask(old)
            if flags & os.O_EXCL:
                raise Refused(errno.EEXIST)
            if stat.S_ISLNK(info.st_mode):
                if flags & os.O_NOFOLLOW:
                    raise Refused(errno.ELOOP)
                target = os.readlink(name, dir_fd=folder)
                if target.endswith(b"/"):
                    raise Refused(errno.EISDIR)
                folder, name = self._parent(self.root if target.startswith(b"/") else folder, target)
                continue
            if stat.S_ISDIR(info.st_mode):
                raise Refused(errno.EISDIR)
            try:
                return self._open_existing(folder, name, flags)
            except (FileNotFoundError, OSError) as exc:
                if exc.errno not in (errno.ENOENT, errno.ELOOP):
                    raise
                continue  # removed or replaced by a link meanwhile: look again
        raise Refused(errno.ELOOP)

    def _hand_over(self, notif_id: int, fd: int, cloexec: int) -> int | None:
        """Give `fd` to the caller as the call's result (None: already answered)."""
        add = _AddFd(notif_id, _ADDFD_FLAG_SEND, fd, 0, os.O_CLOEXEC if cloexec else 0)
        if _libc.ioctl(self.listener, _IOCTL_ADDFD, ctypes.byref(add)) >= 0:
            return None
        if ctypes.get_errno() != errno.EINVAL:  # the caller is gone or interrupted: nothing to answer
            return None
        add.flags = 0  # Linux 5.9 to 5.13: no SEND flag, answer with the number
        return _check(_libc.ioctl(self.listener, _IOCTL_ADDFD, ctypes.byref(add)), "ADDFD")

    def _make(self, dirfd: int, address: int, kind: str, mode: int, device: int, notif: _Notif) -> int:
        path = self._string(notif, address)
        base = self._base(notif, dirfd, path)
        umask = self._umask(notif)
        self._valid(notif)
        if kind == "node" and path.endswith(b"/"):
            raise Refused(errno.ENOENT)
        folder, name = self._parent(base, path)
        self._creatable(folder, name)
        old = os.umask(umask)
        try:
            if kind == "dir":
                os.mkdir(name, mode & 0o7777, dir_fd=folder)
            else:
                os.mknod(name, mode & 0xFFFFFFFF, device, dir_fd=folder)
        finally:
            os.umask(old)
        return 0

    def _symlink(self, target_address: int, dirfd: int, address: int, notif: _Notif) -> int:
        target = self._string(notif, target_address)
        path = self._string(notif, address)
        base = self._base(notif, dirfd, path)
        self._valid(notif)
        if not target:
            raise Refused(errno.ENOENT)
        folder, name = self._parent(base, path)
        self._creatable(folder, name)
        os.symlink(target, name, dir_fd=folder)
        return 0

    def _link(self, old_dirfd: int, old_address: int, new_dirfd: int, new_address: int, flags: int, n: _Notif) -> int:
        old = self._string(n, old_address)
        new = self._string(n, new_address)
        if not old and flags & _AT_EMPTY_PATH:
            source = self._keep(take_fd(self.tgid, old_dirfd, self.machine))
            old_base, old, follow = self.root, f"/proc/self/fd/{source}".encode(), True
        else:
            old_base, follow = self._base(n, old_dirfd, old), bool(flags & _AT_SYMLINK_FOLLOW)
        new_base = self._base(n, new_dirfd, new)
        self._valid(n)
        if not old:
            raise Refused(errno.ENOENT)
        if not flags & _AT_EMPTY_PATH:  # its folder as the caller reaches it (`/proc/self/fd/N` is the caller's)
            old_base, old = self._parent(old_base, old)
        self._linkable(old_base, old, follow)
        folder, name = self._parent(new_base, new)
        self._creatable(folder, name)
        os.link(old, name, src_dir_fd=old_base, dst_dir_fd=folder, follow_symlinks=follow)
        return 0

    def _rename(self, old_dirfd: int, old_address: int, new_dirfd: int, new_address: int, flags: int, n: _Notif) -> int:
        old = self._string(n, old_address)
        new = self._string(n, new_address)
        old_base, new_base = self._base(n, old_dirfd, old), self._base(n, new_dirfd, new)
        self._valid(n)
        old_folder, old_name = self._parent(old_base, old)
        new_folder, new_name = self._parent(new_base, new)
        self._movable(old_folder, old_name)
        self._movable(new_folder, new_name)
        if _libc.renameat2(old_folder, old_name, new_folder, new_name, ctypes.c_uint(flags & 0xFFFFFFFF)) < 0:
            raise Refused(ctypes.get_errno())
        return 0

    def _movable(self, folder: int, name: bytes) -> None:
        """Raise unless `name` may be moved, replaced or removed: a kept path, or a folder on the way to one, is not."""
        if self._guarded_name(folder, name):
            raise Refused(errno.EACCES)

    def _linkable(self, base: int, path: bytes, follow: bool) -> None:
        """Raise unless what `path` names may get another name (always, when only names are kept)."""

    def _bind(self, sockfd: int, address: int, size: int, notif: _Notif) -> int:
        size = _int(size)
        if size < 2 or size > 128:
            raise Refused(errno.EINVAL)
        raw = self._memory(notif, address, size)
        sock = self._keep(take_fd(self.tgid, sockfd, self.machine))  # a pidfd names a process, not a thread
        family = int.from_bytes(raw[:2], sys.byteorder)
        if family != _AF_UNIX or size == 2 or raw[2] == 0:  # no name is made: bind as asked
            umask = self._umask(notif)
            self._valid(notif)
            return self._bind_socket(sock, raw, umask)
        path = raw[2:].split(b"\0", 1)[0]
        base = self._base(notif, _AT_FDCWD, path)
        umask = self._umask(notif)
        self._valid(notif)
        folder, name = self._parent(base, path)
        self._creatable(folder, name, clash=errno.EADDRINUSE)
        os.fchdir(folder)  # bind has no dirfd: the name is taken from this process's cwd
        try:
            return self._bind_socket(sock, raw[:2] + name + b"\0", umask)
        finally:
            os.fchdir(self.root)

    def _bind_socket(self, sock: int, raw: bytes, umask: int) -> int:
        old = os.umask(umask)
        try:
            if _libc.bind(sock, ctypes.c_char_p(raw), len(raw)) < 0:
                raise Refused(ctypes.get_errno())
        finally:
            os.umask(old)
        return 0


def take_fd(pid: int, fd: int, machine: str) -> int:
    """A copy of process `pid`'s descriptor `fd` (pidfd_getfd, Linux 5.6+)."""
    pidfd = os.pidfd_open(pid)
    try:
        number = SYSCALLS["pidfd_getfd"][0 if machine == "x86_64" else 1]
        return _check(_libc.syscall(number, pidfd, fd, 0), "pidfd_getfd")
    finally:
        os.close(pidfd)


def guarded_names(kept: Sequence[str]) -> set[tuple[int, int, bytes]]:
    """(device, inode, name) of each folder on the way to a kept path and the next name along it.

    Walked from `/` as far as the path exists. A link on the way is guarded by its own name and followed (a
    root given through a link is kept where it really is); a link at the end is kept in its own right, and
    its target too (`sandbox.kept_paths`).
    """
    guarded: set[tuple[int, int, bytes]] = set()
    for path in kept:
        parts = [p for p in os.fsencode(os.path.normpath(path)).split(b"/") if p]
        folder = os.open("/", os.O_PATH | os.O_DIRECTORY)
        try:
            for part in parts:
                info = os.fstat(folder)
                guarded.add((info.st_dev, info.st_ino, part))
                try:
                    below = os.open(part, os.O_PATH | os.O_DIRECTORY, dir_fd=folder)
                except OSError:
                    break
                os.close(folder)
                folder = below
        finally:
            os.close(folder)
    return guarded


def _int(value: int) -> int:
    """A register's low 32 bits as a C int (dirfds, lengths)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _forward(child: int, signum: int) -> None:
    try:
        os.kill(child, signum)
    except ProcessLookupError:
        pass  # it has ended: its status is on the way


def _status(raw: int) -> int:
    return 128 + os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)


def run(
    kept: Sequence[str],
    command: Sequence[str],
    *,
    serve: type[Supervisor] = Supervisor,
    confine: Callable[[], None] | None = None,
) -> int:
    """Start `command` under the filter and serve it until it ends; returns its status.

    `serve`: the class that checks and carries out the calls (its `WRITES` sets what the filter sends);
    `confine`: run in the child once the filter is set, before the capabilities go (a second Landlock layer).
    """
    machine = os.uname().machine
    if machine not in AUDIT_ARCH:
        print(f"sandbox supervisor: no system call table for {machine}; the command was not run", file=sys.stderr)
        return 126
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    told_read, told_write = os.pipe()  # the child tells the listener's number; this process says when it has it
    taken_read, taken_write = os.pipe()
    prog = compiled_filter(machine, writes=serve.WRITES)
    child = os.fork()
    if child == 0:
        os.close(told_read)
        os.close(taken_write)
        try:
            listener = install_filter(machine, prog)
            if confine is not None:
                confine()
            drop_capabilities(machine)
            os.write(told_write, str(listener).encode())
            os.close(told_write)
            if os.read(taken_read, 1) != b"1":  # no supervisor: never run the command without one
                os._exit(126)
            os.close(listener)  # the command must never hold it: it could answer its own calls
            os.execvp(command[0], list(command))
        except OSError as exc:
            print(f"sandbox supervisor: {command[0]}: {exc.strerror or exc}", file=sys.stderr)
            os._exit(126 if exc.filename is None and exc.errno != errno.ENOENT else 127)
    os.close(told_write)
    os.close(taken_read)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: _forward(child, signum))
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # the command's output ends when the command's own copies close, not when this does
    os.close(null)
    told = os.read(told_read, 16)
    os.close(told_read)
    supervisor = None
    if told.isdigit():  # else the filter could not be set: the child reports that and exits
        try:
            supervisor = serve(take_fd(child, int(told), machine), kept, machine)
        except OSError as exc:  # the child sees the pipe close and exits without running the command
            print(f"sandbox supervisor: cannot serve the command ({exc}); it was not run", file=sys.stderr)
        else:
            os.write(taken_write, b"1")
    os.close(taken_write)
    poller = select.poll()
    poller.register(wake_read, select.POLLIN)
    if supervisor is not None:
        poller.register(supervisor.listener, select.POLLIN)
    while True:
        while True:
            try:
                pid, raw = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 126
            if pid == 0:
                break
            if pid == child:
                return _status(raw)
        for fd, events in poller.poll():
            if fd == wake_read:
                os.read(wake_read, 512)
            elif supervisor is not None and events & select.POLLIN:
                supervisor.serve_one()
            elif supervisor is not None:
                poller.unregister(fd)  # no process has the filter any more: only waiting is left


def main(argv: Sequence[str]) -> int:
    """Parse the options and run the command; 2 for a malformed command line."""
    kept: list[str] = []
    args = list(argv)
    while args and args[0] != "--":
        option = args.pop(0)
        if option == "--keep" and args:
            kept.append(args.pop(0))
        else:
            print(f"sandbox supervisor: unknown option {option!r}", file=sys.stderr)
            return 2
    if len(args) < 2:
        print("sandbox supervisor: no command after --", file=sys.stderr)
        return 2
    return run(kept, args[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
