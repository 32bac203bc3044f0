"""One wait for a command's output and its bash's exit together (Linux: an epoll set of the pipe and the pidfd).

A foreground call used to pump the pipe in a task of its own while it waited for the pidfd: a task group
and three waits per call, ~0.5 ms of an `echo hi`'s server time (issue 38). Here the event loop watches one
descriptor, the epoll set, and the call reads what is ready when it wakes. Where there is no epoll or no
pidfd (macOS, Windows, an old kernel) `open` gives None and `running` keeps its portable path.

For its first `EXIT_FIRST_S` the set holds the pidfd alone: a short command (`echo hi`) wakes the wait once, at
its exit, and its output is read then. Watching the pipe from the start woke the loop at the output and again at
the exit a moment later (1.3-2.0 wakes a call back to back, each two callbacks of the loop, and a wake of the
server while bash still had its exit to do); so did the pipe's end, which the kernel reports just before the
pidfd. Nothing is lost meanwhile: a command that fills the pipe (64 KiB) waits in its write until the pipe is
watched, at most `EXIT_FIRST_S`, once.
"""

from __future__ import annotations

import select
import time

import anyio
import anyio.lowlevel

EXIT_FIRST_S = 0.002
"""How long the exit alone is watched before the pipe too (see the module docstring). An `echo hi` exits within
~0.3 ms of its command on a quiet machine; 20 ms made a command that printed 110 KB at once wait 1.5x as long
(`seq 20000`, load 16), 2 ms 1.1x."""


class OutputOrExit:
    """Whether a pipe has something to read, and whether a process has exited, from one wait."""

    def __init__(self, poller: select.epoll, out_fd: int, pidfd: int) -> None:
        self._poller = poller
        self._out_fd: int | None = out_fd
        self._pidfd = pidfd
        self._output_from: float | None = time.monotonic() + EXIT_FIRST_S
        """When the pipe joins the set (None: it has; until then the exit alone wakes the wait)."""

    @classmethod
    def open(cls, out_fd: int, pidfd: int | None) -> OutputOrExit | None:
        """The set for `out_fd` and `pidfd`; None where this platform has no such thing (use the portable path)."""
        if pidfd is None or not hasattr(select, "epoll"):
            return None
        try:
            poller = select.epoll()
        except OSError:  # out of descriptors: the portable path says so at its own first step
            return None
        try:
            poller.register(pidfd, select.EPOLLIN)  # the pipe joins at `_watch_output`
        except OSError:
            poller.close()
            return None
        return cls(poller, out_fd, pidfd)

    async def wait(self, timeout: float) -> tuple[bool, bool]:
        """(the pipe has data or end of file, the process has exited), within `timeout` seconds (both False then).

        Always a checkpoint: a command that floods its pipe cannot keep the loop from other calls. While the exit
        alone is watched, the pipe is reported readable whenever the wait ends (it may hold output: the caller reads
        what is there), and the wait ends when the pipe joins the set.
        """
        output_from = self._output_from
        unwatched = output_from is not None
        if output_from is not None:
            left = output_from - time.monotonic()
            if left <= 0:
                self._watch_output()
                unwatched = False
            else:
                timeout = min(timeout, left)
        events = self._poller.poll(0)
        if events:
            await anyio.lowlevel.checkpoint()
        elif timeout > 0:
            with anyio.move_on_after(timeout):
                await anyio.wait_readable(self._poller.fileno())
            events = self._poller.poll(0)
        else:
            await anyio.lowlevel.checkpoint()
        readable = unwatched
        exited = False
        for fd, _ in events:
            if fd == self._pidfd:
                exited = True
            else:
                readable = True
        return readable, exited

    def restart(self) -> None:
        """Start the exit-alone window now: a set opened ahead of its command (a waiting bash) counts from the send."""
        if self._out_fd is not None and self._output_from is not None:
            self._output_from = time.monotonic() + EXIT_FIRST_S

    def _watch_output(self) -> None:
        if self._out_fd is None:
            self._output_from = None
            return
        try:
            self._poller.register(self._out_fd, select.EPOLLIN)
        except OSError:  # (no memory for it) the pipe is looked at every EXIT_FIRST_S instead: nothing is lost
            self._output_from = time.monotonic() + EXIT_FIRST_S
            return
        self._output_from = None

    def watch_also(self, fd: int) -> None:
        """Wake the wait when `fd` is readable too (reported as the pipe is): a waiting bash's status line."""
        self._poller.register(fd, select.EPOLLIN)

    def unwatch(self, fd: int) -> None:
        """Stop watching `fd` (`watch_also`): left in the set, a line nobody reads would wake every wait."""
        try:
            self._poller.unregister(fd)
        except (OSError, ValueError):  # closed meanwhile (the bash was stopped): the set forgot it with the fd
            pass

    def output_ended(self) -> None:
        """The pipe is at end of file: stop watching it (it would report readable for ever)."""
        if self._out_fd is not None and self._output_from is None:
            self._poller.unregister(self._out_fd)
        self._out_fd = None

    def close(self) -> None:
        """Close the set (the pipe and the pidfd stay open: they are their owners')."""
        self._poller.close()
