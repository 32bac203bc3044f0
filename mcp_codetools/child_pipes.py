"""The pipes and the end of a short-lived child that reads one input and writes bounded output (hooks, workers).

One copy so that every such child is fed, drained and killed the same way: a child that stops reading is not an
error (its exit says why), output beyond what is kept is read and dropped (a full pipe would stall the child), and
the whole process group goes at the end, whatever path led there.
"""

from __future__ import annotations

import os
import signal

import anyio
import anyio.abc

REAP_WAIT_S = 5.0
"""How long the end waits for a killed child to be reaped before closing its pipes anyway."""


async def feed(process: anyio.abc.Process, data: bytes) -> None:
    """Write `data` to the child's stdin and close it; a child that exits or stops reading first is fine."""
    stdin = process.stdin
    if stdin is None:
        return
    try:
        await stdin.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        await stdin.aclose()


async def drain(stream: anyio.abc.ByteReceiveStream | None, into: bytearray, keep: int) -> None:
    """Read the stream to its end, keeping its first `keep` bytes in `into`."""
    if stream is None:
        return
    async for chunk in stream:
        if len(into) < keep:
            into.extend(chunk[: keep - len(into)])


def kill_group(process: anyio.abc.Process) -> None:
    """Kill the child's whole group (the child alone where there are no groups); gone already is fine.

    The group goes even when the child has exited: what it left running in the background is still in it.
    """
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        elif process.returncode is None:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass


async def finish(process: anyio.abc.Process) -> None:
    """Kill, reap and close the child, even while the caller is being cancelled."""
    with anyio.CancelScope(shield=True):
        kill_group(process)
        with anyio.move_on_after(REAP_WAIT_S):
            await process.wait()
        await process.aclose()
