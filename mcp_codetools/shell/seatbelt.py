"""The macOS backend: a Seatbelt profile (SBPL) for `sandbox-exec`, made from the same settings as the others.

`sandbox-exec -p PROFILE bash -c …` applies the profile and execs bash, so the command and everything it
starts run under it (a process cannot leave its sandbox), in the process group and with the markers
spawning set. The profile denies everything by default, then allows:

- starting programs, signals and process information only within the sandbox, reading sysctls, POSIX
  semaphores and shared memory, pseudo-terminals, and the few system services bash and common tools
  need (user and group look-ups, logging); not Launch Services, which would start an application
  outside the sandbox;
- reading everything but the masked paths (credentials, Read-denied paths): they and all beneath them
  are unreadable, while the folders around them stay listable (unlike under Landlock);
- writing (and making hard links) beneath the writable folders (the roots, the scratch folder and the
  private tmp inside it) and to a few devices, but not to the kept paths (protected paths, Edit denies)
  nor the masked ones, and not to the folders on the way to them inside a writable folder, which may not
  be renamed or removed (renaming `.git` and back would otherwise reach `.git/hooks`). Unlike bind
  mounts and Landlock, Seatbelt rules name paths, so a kept path that does not exist yet cannot be
  created and the folder it would be made in stays open to new entries;
- the network only when the setting allows it.

Not allowed at all: copy-on-write clones (`clonefile`; a clone of a masked file would be a readable
copy), Launch Services, and whatever else the profile does not name.

A profile longer than `INLINE_MAX` is passed as a file (`command`). Every rule that keeps something is
written twice, as an exclusion in the allow rule and as a deny rule
after it, so the profile holds whichever way the rules' order is read. Seatbelt matches the path the
kernel resolved, so every path is given as the kernel names it (`/tmp` is `/private/tmp` there, and the
letter case is the volume's: `resolved`), and a kept or masked path is also matched by a pattern that
ignores letter case, because macOS volumes usually do (`MCP-CODETOOLS.TOML` is `mcp-codetools.toml`).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from functools import cache

__all__ = ["SANDBOX_EXEC", "command", "kernel_path", "profile", "resolved", "sbpl_string"]

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
"""By its full path: a `sandbox-exec` earlier on the PATH would be trusted with the confinement."""

_SERVICES = (
    "com.apple.system.opendirectoryd.libinfo",  # getpwuid and friends (bash, git, ssh need the user's name)
    "com.apple.system.opendirectoryd.membership",
    "com.apple.system.logger",
    "com.apple.logd",
    "com.apple.system.notification_center",
    "com.apple.bsd.dirhelper",  # confstr(_CS_DARWIN_USER_TEMP_DIR)
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
    "com.apple.sysmond",
)
_NETWORK_SERVICES = (
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.dnssd.service",
    "com.apple.trustd",
    "com.apple.trustd.agent",
    "com.apple.SecurityServer",
    "com.apple.ocspd",
    "com.apple.networkd",
)
INLINE_MAX = 64 * 1024
"""A longer profile (many Read-denied paths) goes in a file: the command line has a size limit (ARG_MAX)."""
_DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper", "/dev/ptmx")
_TTYS = r'(regex #"^/dev/ttys[0-9]+$")'
_CASE_FREE = frozenset("0123456789/_- ~,:@%=!#&';<>`")
_BRACKETED = frozenset(".+*?()|{}$")


def resolved(path: str | os.PathLike[str]) -> list[str]:
    """The paths Seatbelt must name for `path`: its folder's links resolved, and where it leads, if elsewhere.

    The first keeps the name itself (a link kept read-only may not be replaced); the second what a
    link leads to. A path that does not exist keeps its missing part as given. Where the kernel can say
    how it names a file (macOS: `F_GETPATH`), that name is used: the one Seatbelt matches, in the letter
    case and form the volume stored (`/Users/me/Project` for `/users/me/project`).
    """
    text = os.path.abspath(path)
    folder, name = os.path.split(text)
    named = os.path.join(kernel_path(folder), name) if name else kernel_path(text)
    return list(dict.fromkeys([named, kernel_path(text)]))


def kernel_path(path: str) -> str:
    """`path` with its links resolved, its existing part as the kernel names it where it can say (macOS)."""
    real = os.path.realpath(path)
    try:
        import fcntl
    except ImportError:  # Windows: nothing here runs there, but the module imports
        return real
    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is None:
        return real
    head, missing = real, list[str]()
    while True:
        try:
            # O_EVTONLY: no read access needed; O_NONBLOCK: a FIFO does not hold the open
            fd = os.open(head, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_EVTONLY", 0) | os.O_CLOEXEC)
        except OSError:
            parent = os.path.dirname(head)
            if parent == head:
                return real
            missing.insert(0, os.path.basename(head))
            head = parent
            continue
        try:
            named = fcntl.fcntl(fd, getpath, bytes(1024)).split(b"\0", 1)[0]
        except OSError:
            return real
        finally:
            os.close(fd)
        return os.path.join(os.fsdecode(named), *missing)


def sbpl_string(text: str) -> str:
    """`text` as an SBPL string literal: backslashes and double quotes escaped, everything else as it is."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def caseless_pattern(path: str, *, beneath: bool) -> str:
    """An SBPL regex matching `path` in any letter case (and, with `beneath`, what lies beneath it).

    Letters become `[aA]`; characters a regex would read (`.`, `+`, …) are bracketed; a quote, a
    backslash, a bracket, a control character or a non-ASCII one matches any one to four characters
    (its bytes, or a decomposed form): this pattern only denies, so matching a little more fails closed.
    """
    out = ["^"]
    for char in path:
        if char.isascii() and char.isalpha():
            out.append(f"[{char.lower()}{char.upper()}]")
        elif char in _CASE_FREE:
            out.append(char)
        elif char in _BRACKETED:
            out.append(f"[{char}]")
        else:
            out.append("..?.?.?")
    out.append("(/.*)?$" if beneath else "$")
    return '(regex #"' + "".join(out) + '")'


def _path_filters(paths: Iterable[str]) -> list[str]:
    """Filters matching each path and all beneath it, exactly and in any letter case."""
    filters: list[str] = []
    for path in paths:
        filters += [f"(subpath {sbpl_string(path)})", caseless_pattern(path, beneath=True)]
    return filters


def _folders_on_the_way(paths: Iterable[str], writable: Sequence[str]) -> list[str]:
    """The folders above each path that lie inside a writable folder (the writable folder itself excluded)."""
    found: list[str] = []
    for path in paths:
        folder = os.path.dirname(path)
        while folder != os.path.dirname(folder):
            if any(folder.startswith(w.rstrip("/") + "/") for w in writable):
                found.append(folder)
            folder = os.path.dirname(folder)
    return sorted(dict.fromkeys(found))


def profile(
    *, writable: Sequence[str], masks: Sequence[str] = (), read_only: Sequence[str] = (), network: bool = False
) -> str:
    """The SBPL profile confining a command; every path absolute (`resolved` is applied here)."""
    folders = list(dict.fromkeys(p for path in writable for p in resolved(path)[-1:]))
    hidden = list(dict.fromkeys(p for path in masks for p in resolved(path)))
    kept = list(dict.fromkeys(p for path in read_only for p in resolved(path)))
    hidden_filters = _path_filters(hidden)
    fixed = _folders_on_the_way([*kept, *hidden], folders)
    fixed_filters = [f"(literal {sbpl_string(f)})" for f in fixed] + [caseless_pattern(f, beneath=False) for f in fixed]
    unwritable = [*_path_filters(kept), *hidden_filters, *fixed_filters]
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow process-info* (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow user-preference-read)",
        "(allow ipc-posix-sem)",
        "(allow ipc-posix-shm)",
        "(allow pseudo-tty)",
        "(allow mach-lookup " + " ".join(f"(global-name {sbpl_string(s)})" for s in _services(network)) + ")",
        "(allow file-ioctl " + " ".join(f"(literal {sbpl_string(d)})" for d in _DEVICES) + f" {_TTYS})",
        _allow("file-read*", None, hidden_filters),
        "(allow file-test-existence)",  # a masked path is present but unreadable, as under bubblewrap
        "(allow file-map-executable)",  # mapping code needs an open descriptor, which reading grants
    ]
    for folder in folders:
        within = f"(subpath {sbpl_string(folder)})"
        lines.append(_allow("file-write*", within, unwritable))
        # Hard links are a separate operation (also checked when a file with several names is renamed):
        # only among the writable paths, so a kept or masked file gets no second name to be reached by.
        lines.append(_allow("file-link", within, unwritable))
    devices = " ".join(f"(literal {sbpl_string(d)})" for d in _DEVICES)
    lines.append(f'(allow file-write* {devices} (subpath "/dev/fd") {_TTYS})')
    # The same again as deny rules, last: they hold whether the later or the more specific rule wins.
    if hidden_filters:
        lines.append("(deny file-read* " + " ".join(hidden_filters) + ")")
    if unwritable:
        lines.append("(deny file-write* file-link " + " ".join(unwritable) + ")")
    lines.append("(allow network*)" if network else "(deny network*)")
    return "\n".join(lines) + "\n"


def _services(network: bool) -> tuple[str, ...]:
    return (*_SERVICES, *_NETWORK_SERVICES) if network else _SERVICES


def _allow(operation: str, within: str | None, excluded: Sequence[str]) -> str:
    """`(allow OPERATION …)` within a filter (or everywhere), except where any of `excluded` matches."""
    if not excluded:
        return f"(allow {operation}{'' if within is None else ' ' + within})"
    parts = ([] if within is None else [within]) + [f"(require-not {f})" for f in excluded]
    return f"(allow {operation} (require-all {' '.join(parts)}))"


def command(text: str, argv: Sequence[str]) -> list[str]:
    """The command line running `argv` under the profile `text`: inline, or from a file when it is long.

    The file is named by its content in a folder of the server's own, outside every writable folder, so
    no sandboxed command (a background job, say) can change a profile before `sandbox-exec` reads it.
    """
    if len(text.encode()) <= INLINE_MAX:
        return [SANDBOX_EXEC, "-p", text, *argv]
    path = os.path.join(_profile_folder(), hashlib.sha256(text.encode()).hexdigest() + ".sb")
    if not os.path.exists(path):
        spare = f"{path}.{os.getpid()}.tmp"
        with open(spare, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(spare, path)  # whole or not at all: a command started meanwhile never reads half of it
    return [SANDBOX_EXEC, "-f", path, *argv]


@cache
def _profile_folder() -> str:
    folder = tempfile.mkdtemp(prefix="mcp-codetools-seatbelt-")  # mode 0700
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
