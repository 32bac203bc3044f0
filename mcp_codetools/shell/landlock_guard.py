"""The supervisor under Landlock: it carries out every call that writes by name, and keeps the kept paths.

Landlock grants rights on whole folders, inherited by all beneath and never taken back, so a folder that
takes new files (a root's top level) cannot also keep one of its files (`.git/config`), or a folder's
contents (`.git/hooks/`), read-only. The launcher (`landlock.py`) therefore restricts itself to a looser
layer (the roots and scratch wholly writable) and serves the command through this class, whose filter
sends it every open for writing, `truncate`, `unlink`, `rmdir` and every call that makes or moves a name.
The command itself runs under a second, stricter layer (the kept paths read-only, the folders holding them
frozen, as before), which stays in force for anything the filter does not send.

The checks, all by identity (device and inode), never by path text:

- no missing kept name, nor a folder on the way to one, may be made (as under bubblewrap);
- nothing is made, removed, moved or opened for writing in a kept folder or beneath one: the folder reached
  is walked up with `..` to `/`, each step compared with the kept folders as they are now;
- a kept name, or a folder on the way to one, is neither removed nor moved;
- an opened file that is a kept file (reached through a hard link too) is refused before anything is
  written to it (O_TRUNC is applied only after the check); one reached through a `/proc/<pid>/fd` link
  is checked in the folder its path names, once that name is found to be the same file;
- a file in a kept folder gets no other name (`link`), which would write it from elsewhere.

Why the walk cannot be fooled: every folder it passes either is beneath a kept folder, and then nothing
in it can be moved out (a move's source folder would be checked), or lies on the way to one, and then its
name is guarded. The command's calls are carried out one at a time here, so nothing it does moves a
folder during a walk; only the host could.

It runs with no capability but CAP_SYS_PTRACE (a root server's supervisor would otherwise make device nodes
or write files the command, which has none, may not). Its process is the launcher, not a namespace's first
process: a process the command leaves behind when it ends has no supervisor left, and its routed calls fail
(ENOSYS), closed; the server stops such leftovers by process group and marker, as without the sandbox.

The supervisor reads the command's memory and descriptors as its parent of the same user (Landlock allows
tracing a more restricted process; Yama's scope 1 allows descendants), so no capability is needed. A
command that made itself undumpable cannot be read without CAP_SYS_PTRACE: its routed calls are refused
(EPERM), closed. Standard library and ctypes only: it runs inside the launcher, before every command.
"""

from __future__ import annotations

import errno
import os
import stat
from _collections_abc import Callable, Sequence

if __package__:
    from mcp_codetools.shell.supervisor import _AT_FDCWD, SYSCALLS, Refused, Supervisor, _int, _Notif
else:  # imported by the launcher from this folder (`landlock.py`)
    from supervisor import _AT_FDCWD, SYSCALLS, Refused, Supervisor, _int, _Notif  # type: ignore[import-not-found,no-redef]

_AT_REMOVEDIR = 0x200
_MAX_DEPTH = 2048
_WRITING = os.O_CREAT | os.O_WRONLY | os.O_RDWR | os.O_TRUNC


class LandlockSupervisor(Supervisor):
    """Carries out every write by name for a command under Landlock, keeping the kept paths by identity."""

    WRITES = True

    def __init__(self, listener: int, kept: Sequence[str], machine: str) -> None:
        super().__init__(listener, kept, machine)
        column = 0 if machine == "x86_64" else 1
        handlers = {
            "truncate": lambda n: self._truncate(n.args[0], n.args[1], n),
            "unlink": lambda n: self._remove(_AT_FDCWD, n.args[0], 0, n),
            "unlinkat": lambda n: self._remove(_int(n.args[0]), n.args[1], _int(n.args[2]), n),
            "rmdir": lambda n: self._remove(_AT_FDCWD, n.args[0], _AT_REMOVEDIR, n),
        }
        for call, handler in handlers.items():
            number = SYSCALLS[call][column]
            if number is not None:
                self.handlers[number] = handler
        # Each kept path by its folder, held open: its current identity is one fstatat away. The folder
        # cannot be moved meanwhile: it is the kept path's, whose name on the way is guarded.
        self.kept_at: list[tuple[int, bytes]] = []
        for path in kept:
            head, _, name = os.fsencode(os.path.normpath(path)).rpartition(b"/")
            try:
                self.kept_at.append((os.open(head or b"/", os.O_PATH | os.O_DIRECTORY), name))
            except OSError:
                continue  # its folder is missing, and cannot be made: it is on the way to a kept path
        self.kept: tuple[set[tuple[int, int]], set[tuple[int, int]]] | None = None

    def serve_one(self) -> None:
        """Serve one call, with the kept paths' identities looked up afresh (the host may have replaced one)."""
        self.kept = None
        super().serve_one()

    # -- what is kept now --

    def _kept_now(self) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
        """The identities of the kept folders and of the kept files, as they are for this call."""
        if self.kept is None:
            self.kept = self._kept_identities()
        return self.kept

    def _kept_identities(self) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
        folders: set[tuple[int, int]] = set()
        files: set[tuple[int, int]] = set()
        for folder, name in self.kept_at:
            try:
                info = os.lstat(name, dir_fd=folder)
            except OSError:
                continue  # missing: its name is guarded
            if stat.S_ISDIR(info.st_mode):
                folders.add((info.st_dev, info.st_ino))
            elif not stat.S_ISLNK(info.st_mode):  # a link's target is kept under its own path
                files.add((info.st_dev, info.st_ino))
        return folders, files

    def _in_kept_folder(self, folder: int) -> bool:
        """Whether `folder` is a kept folder or lies beneath one (walked up with `..` to `/`)."""
        # No folder on the way up can be moved while this walks: the command's calls are carried out here one
        # at a time, a folder beneath a kept one cannot be moved out (its folder is checked by `_movable`), and
        # a folder above one is on the way to a kept path, whose name is guarded. Only the host could move one.
        kept, _ = self._kept_now()
        if not kept:
            return False
        current = os.dup(folder)
        try:
            for _ in range(_MAX_DEPTH):
                info = os.fstat(current)
                if (info.st_dev, info.st_ino) in kept:
                    return True
                above = os.open("..", os.O_PATH | os.O_DIRECTORY, dir_fd=current)
                up = os.fstat(above)
                os.close(current)
                current = above
                if (up.st_dev, up.st_ino) == (info.st_dev, info.st_ino):
                    return False  # `/` (or this process's root)
        finally:
            os.close(current)
        raise Refused(errno.ELOOP)

    def _writable_folder(self, folder: int) -> None:
        if self._in_kept_folder(folder):
            raise Refused(errno.EACCES)

    def _not_kept_content(self, fd: int, folder: int | None) -> None:
        """Raise when `fd` is a kept file, or a file in a kept folder (its folder unknown: found from its path)."""
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return  # a folder, device, FIFO or socket: opening it writes no kept file's contents
        if (info.st_dev, info.st_ino) in self._kept_now()[1]:
            raise Refused(errno.EACCES)
        if folder is not None:
            self._writable_folder(folder)
            return
        if info.st_nlink == 0:
            return  # unnamed (O_TMPFILE) or removed: it is in no folder
        where = os.fsencode(os.readlink(f"/proc/self/fd/{fd}"))
        head, _, name = where.rpartition(b"/")
        if not where.startswith(b"/") or not name:
            raise Refused(errno.EACCES)
        holder = self._keep(os.open(head or b"/", os.O_PATH | os.O_DIRECTORY))
        try:
            named = os.lstat(name, dir_fd=holder)
        except OSError:
            named = None
        if named is None or (named.st_dev, named.st_ino) != (info.st_dev, info.st_ino):
            raise Refused(errno.EACCES)  # the path no longer names it: its folder cannot be told, closed
        self._writable_folder(holder)

    # -- the checks the supervisor's calls make --

    def _hop_flags(self, flags: int) -> int:
        return _WRITING

    def _creatable(self, folder: int, name: bytes, *, clash: int = errno.EEXIST) -> None:
        super()._creatable(folder, name, clash=clash)
        self._writable_folder(folder)

    def _movable(self, folder: int, name: bytes) -> None:
        super()._movable(folder, name)
        self._writable_folder(folder)

    def _linkable(self, base: int, path: bytes, follow: bool) -> None:
        source = self._keep(os.open(path, os.O_PATH | (0 if follow else os.O_NOFOLLOW), dir_fd=base))
        self._not_kept_content(source, None)

    def _open_unnamed(self, base: int, path: bytes, flags: int, mode: int, umask: int) -> int:
        folder, name = self._parent(base, path)
        target = self._keep(os.open(name, os.O_PATH | os.O_DIRECTORY, dir_fd=folder))
        self._writable_folder(target)
        return super()._open_unnamed(target, b".", flags, mode, umask)

    def _open_magic(self, folder: int, name: bytes, flags: int) -> int:
        opening = super()._open_magic
        return self._opened_checked(flags, None, lambda plain: opening(folder, name, plain))

    def _open_existing(self, folder: int, name: bytes, flags: int) -> int:
        if self._guarded_name(folder, name):
            raise Refused(errno.EACCES)
        self._writable_folder(folder)
        opening = super()._open_existing
        return self._opened_checked(flags, folder, lambda plain: opening(folder, name, plain))

    def _opened_checked(self, flags: int, folder: int | None, opening: Callable[[int], int]) -> int:
        """Open without O_TRUNC, check what was opened, then truncate: a refused file is never changed."""
        fd = opening(flags & ~os.O_TRUNC)
        try:
            if flags & _WRITING:
                self._not_kept_content(fd, folder)
            if flags & os.O_TRUNC and stat.S_ISREG(os.fstat(fd).st_mode):
                os.truncate(f"/proc/self/fd/{fd}", 0)  # as the kernel does for O_TRUNC, even on a read-only open
        except BaseException:
            os.close(fd)
            raise
        return fd

    # -- the calls only this mode receives --

    def _truncate(self, address: int, length: int, notif: _Notif) -> int:
        path = self._string(notif, address)
        base = self._base(notif, _AT_FDCWD, path)
        self._valid(notif)
        if length >= 1 << 63:
            raise Refused(errno.EINVAL)
        folder, name = self._parent(base, path)
        fd = self._keep(self._open_creating(folder, name, os.O_WRONLY | os.O_NONBLOCK, 0, 0))
        os.ftruncate(fd, length)
        return 0

    def _remove(self, dirfd: int, address: int, flags: int, notif: _Notif) -> int:
        path = self._string(notif, address)
        base = self._base(notif, dirfd, path)
        self._valid(notif)
        if flags & ~_AT_REMOVEDIR:
            raise Refused(errno.EINVAL)
        folder, name = self._parent(base, path)
        self._movable(folder, name)
        if flags & _AT_REMOVEDIR:
            os.rmdir(name, dir_fd=folder)
        elif path.endswith(b"/"):  # `unlink("x/")`: the kernel refuses it whatever x is
            info = os.lstat(name, dir_fd=folder)
            raise Refused(errno.EISDIR if stat.S_ISDIR(info.st_mode) else errno.ENOTDIR)
        else:
            os.unlink(name, dir_fd=folder)
        return 0
