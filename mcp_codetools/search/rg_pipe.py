"""How rg's output is gathered: a wide pipe, and a pause between reads that rg's exit ends at once.

rg writes once per file it reports, a few KiB at a time. Reading each write as it comes costs the reader a
wake-up per write (~480 over the benchmark's content search), and each wake-up runs the sink on cold caches
while rg's threads want the same cores. So after a small read the reader pauses and lets the pipe gather.

Where Linux allows, the pipe is widened (`F_SETPIPE_SZ`) so that a long pause cannot make rg wait on a
full pipe, and the pause waits on a pidfd: rg's exit (and a poke) ends it at once, so the pause adds
nothing to the end of a search. Elsewhere the pipe keeps its default size and the pause stays short
(`Pacing.plain`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

if sys.platform != "win32":
    import fcntl

WIDE_PIPE_BYTES = 1 << 20
"""Linux's default `pipe-max-size`: an unprivileged process may ask this much. Pages are used only when filled."""
DEFAULT_PIPE_BYTES = 1 << 16
WIDE_PAUSE_S = 0.02
"""rg would have to write 50 MB/s to fill the wide pipe in one pause; it then blocks briefly, and the next
read is large enough not to pause (see `Pacing.pauses_after`)."""
PLAIN_PAUSE_S = 0.001


@dataclass(frozen=True, slots=True)
class Pacing:
    """How the reader reads one rg's stdout: the read size, and how long to pause after a small read.

    `exit_fd` (a pidfd) is readable once rg has exited: a pause waits on it, so it never outlasts rg.
    """

    read_bytes: int
    pause_s: float
    exit_fd: int | None

    @classmethod
    def plain(cls) -> Pacing:
        """The default pipe, and a pause short enough that it cannot delay a search noticeably."""
        return cls(DEFAULT_PIPE_BYTES, PLAIN_PAUSE_S, None)

    def pauses_after(self, size: int) -> bool:
        """Whether a read of `size` bytes is small enough that rg is writing slowly: then the pipe may gather."""
        return size < self.read_bytes // 4

    def close(self) -> None:
        """Close the pidfd, if any."""
        if self.exit_fd is not None:
            os.close(self.exit_fd)


def pacing(stdout_fd: int, pid: int) -> Pacing:
    """The pacing for reading rg (process `pid`, not yet reaped) from the pipe `stdout_fd`.

    Widens the pipe and opens a pidfd where the system has both; otherwise `Pacing.plain()`.
    """
    setter = getattr(fcntl, "F_SETPIPE_SZ", None) if sys.platform != "win32" else None
    open_pidfd = getattr(os, "pidfd_open", None)
    if setter is None or open_pidfd is None:
        return Pacing.plain()
    try:
        size = fcntl.fcntl(stdout_fd, setter, WIDE_PIPE_BYTES)
    except OSError:  # over the user's pipe allowance (pipe-user-pages-soft), or a lowered pipe-max-size
        return Pacing.plain()
    try:
        exit_fd = open_pidfd(pid)
    except OSError:  # a kernel before 5.3, or out of descriptors: the short pause needs neither
        return Pacing.plain()
    return Pacing(size, WIDE_PAUSE_S, exit_fd)
