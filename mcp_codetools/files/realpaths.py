"""An existing file held while its path is judged, with its real path as the kernel names it (for Read).

`os.path.realpath` walks the path in Python, an `lstat` (and a `readlink` per link) for each component,
and the confined open then walks it again from the root. Where the system can name an open descriptor
(`fdpaths.usable`: Linux with /proc), the path is opened with O_PATH instead, which follows links the way
realpath does but opens nothing for reading (no FIFO waits, no device's open runs), and
`/proc/self/fd/N` then gives the path the kernel reached it by.

That answer is taken only when `lstat` of it names the very file the descriptor holds, so a name the
kernel marks as ` (deleted)`, a file no longer reachable from our root, or a path renamed meanwhile falls
back. Every doubt answers None and the caller takes the portable `realpath`; so do a missing file, a
dangling link, a loop and every other error (realpath says what those mean). macOS and Windows have no
O_PATH (an open there runs a device's open before the path is checked), so they keep `realpath`.

The file is then read through the held descriptor (`open_pinned`): what is read is the file whose path
was judged, whatever is renamed or swapped for a link after the check, and no path is walked again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mcp_codetools.files import fdpaths

_O_PATH = getattr(os, "O_PATH", None)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class Pinned:
    """An O_PATH descriptor of a file, its real path when it was opened, and its status then."""

    fd: int
    real: str
    st: os.stat_result

    def close(self) -> None:
        """Let the descriptor go (once: a second call would close a number reused since)."""
        os.close(self.fd)


def pin(path: str) -> Pinned | None:
    """The existing file or folder at the absolute `path`, held, with its real path; None to use `realpath`.

    The caller owns the descriptor of a result and must `close` it.
    """
    if _O_PATH is None or not fdpaths.usable():
        return None
    try:
        fd = os.open(path, _O_PATH | _CLOEXEC)
    except OSError:
        return None
    try:
        real = os.readlink(fdpaths.fd_path(fd))
        if real.startswith("/"):  # not "anon_inode:..." or another name for no path at all
            held = os.fstat(fd)
            named = os.lstat(real)
            if (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
                return Pinned(fd, real, held)
    except (OSError, ValueError):
        pass
    os.close(fd)
    return None


def open_pinned(pinned: Pinned, flags: int) -> int:
    """Open the very file `pinned` holds (its /proc name, not its path), with `flags` (O_CLOEXEC added).

    Raises:
        OSError: the open failed (no permission to read it, for one).
    """
    return os.open(fdpaths.fd_path(pinned.fd), flags | _CLOEXEC)
