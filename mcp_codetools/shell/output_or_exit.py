"""One wait for a command's output and its bash's exit together (Linux: an epoll set of the pipe and the pidfd).

A foreground call used to pump the pipe in a task of its own while it waited for the pidfd: a task group
and three waits per call, ~0.5 ms of an `echo hi`'s server time (issue 38). Here the event loop watches one
descriptor, the epoll set, and the call reads what is ready when it wakes. Where there is no epoll or no
pidfd (macOS, Windows, an old kernel) `open` gives None and `running` keeps its portable path.
"""

from __future__ import annotations

import select

import anyio
import anyio.lowlevel


class OutputOrExit:
    """Whether a pipe has something to read, and whether a process has exited, from one wait."""

    def __init__(self, poller: select.epoll, out_fd: int, pidfd: int) -> None:
        self._poller = poller
        self._out_fd: int | None = out_fd
        self._pidfd = pidfd

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
            poller.register(out_fd, select.EPOLLIN)
            poller.register(pidfd, select.EPOLLIN)
        except OSError:
            poller.close()
            return None
        return cls(poller, out_fd, pidfd)

    async def wait(self, timeout: float) -> tuple[bool, bool]:
        """(the pipe has data or end of file, the process has exited), within `timeout` seconds (both False then).

        Always a checkpoint: a command that floods its pipe cannot keep the loop from other calls.
        """
        events = self._poller.poll(0)
        if events:
            await anyio.lowlevel.checkpoint()
        elif timeout > 0:
            with anyio.move_on_after(timeout):
                await anyio.wait_readable(self._poller.fileno())
            events = self._poller.poll(0)
        else:
            await anyio.lowlevel.checkpoint()
        readable = exited = False
        for fd, _ in events:
            if fd == self._pidfd:
                exited = True
            else:
                readable = True
        return readable, exited

    def output_ended(self) -> None:
        """The pipe is at end of file: stop watching it (it would report readable for ever)."""
        if self._out_fd is not None:
            self._poller.unregister(self._out_fd)
            self._out_fd = None

    def close(self) -> None:
        """Close the set (the pipe and the pidfd stay open: they are their owners')."""
        self._poller.close()
