"""Waiting for a command's bash to exit (a pidfd on Linux: no thread, no polling), without reaping it.

Running, reaping and background jobs all wait on it; it stands alone so that reaping needs nothing of running.
"""

from __future__ import annotations

import os
import subprocess
import time

import anyio


class ExitWatcher:
    """Waits for a child to exit without reaping it, so its pid (and group id) stays reserved meanwhile."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # not Linux, or a kernel before 5.3: poll instead
            self._pidfd = None

    @property
    def pidfd(self) -> int | None:
        """The pidfd it waits on (readable once the child has exited), or None where it polls."""
        return self._pidfd

    def exited(self) -> bool:
        """Whether the child has exited, looked at without reaping it."""
        if self.proc.returncode is not None:
            return True
        if not hasattr(os, "waitid"):  # macOS before Python 3.13: reaping is the only way to look
            return self.proc.poll() is not None
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    async def wait(self, timeout: float) -> bool:
        """True once the child has exited (within `timeout` seconds)."""
        if self.exited():
            return True
        if timeout <= 0:
            return False
        if self._pidfd is not None:
            with anyio.move_on_after(timeout):
                await anyio.wait_readable(self._pidfd)
                return True
            return False
        deadline = time.monotonic() + timeout
        delay = 0.002
        while time.monotonic() < deadline:
            await anyio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            if self.exited():
                return True
            delay = min(delay * 2, 0.05)
        return self.exited()

    def close(self) -> None:
        """Close the pidfd, if one was opened."""
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
