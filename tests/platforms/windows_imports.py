"""Import every module of the package as Windows would: `python windows_imports.py [MODULE…]` prints what fails.

Run in its own process. The standard library and the dependencies are imported first, with the real
platform (they have their own Windows code, which cannot run here); then `sys.platform` says `win32`,
the POSIX-only modules cannot be imported, and the POSIX-only names of `os`, `signal`, `select` and
`socket` are gone, and each of the package's modules is imported. One line per failure: the module,
then the error; nothing printed means every module imports.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import os
import select
import signal
import socket
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parents[2] / "mcp_codetools"
POSIX_ONLY = frozenset(
    {"fcntl", "termios", "resource", "pwd", "grp", "pty", "tty", "syslog", "crypt", "readline", "curses", "posix"}
)
WINDOWS_SIGNALS = frozenset({"SIGINT", "SIGTERM", "SIGABRT", "SIGFPE", "SIGILL", "SIGSEGV", "SIGBREAK"})
POSIX_OS_NAMES = (
    "setsid", "getsid", "killpg", "getpgid", "setpgid", "getpgrp", "setpgrp", "fchdir", "getuid", "geteuid",
    "getgid", "getegid", "getgroups", "fork", "forkpty", "openpty", "pipe2", "memfd_create", "sched_getaffinity",
    "posix_spawn", "posix_spawnp", "statvfs", "fstatvfs", "sysconf", "pathconf", "fpathconf", "getloadavg",
    "wait3", "wait4", "fchmod", "fchown", "lchown", "chown", "mkfifo", "mknod", "sync", "fdatasync", "uname",
    "nice", "ttyname", "WNOHANG", "O_NOFOLLOW", "O_DIRECTORY", "O_PATH", "O_CLOEXEC", "O_NOCTTY", "O_NONBLOCK",
    "O_NOATIME", "O_NOFOLLOW_ANY", "O_SYMLINK",
)  # fmt: skip


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".")[0] in POSIX_ONLY:
            raise ModuleNotFoundError(f"No module named {fullname!r} (there is none on Windows)", name=fullname)
        return None


def package_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def imported_elsewhere() -> set[str]:
    """Every module the package imports from outside itself when its modules are imported.

    Imports inside functions are left out: importing a module does not run them, and the heaviest dependencies
    (jedi, the language server, psutil, uvicorn) are imported only so (~1-2 CPU-s of the audit's start).
    """
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
            for block in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(node, block, None)
                if isinstance(inner, list):
                    visit(inner)

    for path in PACKAGE.rglob("*.py"):
        visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {name for name in found if not name.startswith("mcp_codetools")}


def pretend_windows() -> None:
    for name in sorted(imported_elsewhere()):
        if name.split(".")[0] not in POSIX_ONLY:
            try:
                importlib.import_module(name)
            except ImportError:
                pass  # an optional dependency: the package must cope with it missing anyway
    for name in list(sys.modules):  # imported by the standard library: the package's own import must fail
        if name.split(".")[0] in POSIX_ONLY - {"posix"}:
            del sys.modules[name]
    sys.meta_path.insert(0, _Refuse())
    sys.platform = "win32"
    for name in dir(signal):
        if name.startswith("SIG") and not name.startswith("SIG_") and name not in WINDOWS_SIGNALS:
            delattr(signal, name)
    for name in POSIX_OS_NAMES:
        if hasattr(os, name):
            delattr(os, name)
    for name in ("poll", "epoll", "kqueue", "devpoll"):
        if hasattr(select, name):
            delattr(select, name)
    if hasattr(socket, "AF_UNIX"):
        delattr(socket, "AF_UNIX")


def main(argv: Sequence[str]) -> int:
    """Import the package's modules (or the modules named in `argv`) as Windows would; 1 when any fails."""
    pretend_windows()
    failed = 0
    for name in argv or package_modules():
        if name == "mcp_codetools.__main__":
            continue  # it runs the command line; `cli` is what it imports
        try:
            importlib.import_module(name)
        except Exception:
            failed += 1
            print(name, traceback.format_exc().strip().splitlines()[-1])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
