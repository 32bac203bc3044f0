"""A background job's grandchild that escaped with `setsid` does not outlive the server, table or none.

The server runs as its own process (its exit is what is tested). With a process table the job's marker
finds the grandchild; with none (the empty-/proc lane, or MCP_CODETOOLS_PROCESS_TABLE=none where /proc
works) the server adopts its commands' orphans and stops them at its exit (shell/adoption.py).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.processes import alive
from tests.protocol.stdio_raw import RawServer
from tests.tools.test_search_runner import read_fifo

pytestmark = pytest.mark.anyio

UNSANDBOXED = {"MCP_CODETOOLS_SANDBOX": "0"}
"""What is tested is how the server finds and stops processes on the host: in the sandbox on by default the
command's PID namespace ends them all with it (tests/tools/test_bash_sandbox*.py), and its pids are not the host's."""


def reaped(pid: int) -> bool:
    """Gone from the process table, not even a zombie (a pidfd can still be opened for a zombie)."""
    try:
        os.close(os.pidfd_open(pid))
    except ProcessLookupError:
        return True
    return False


ESCAPE = "setsid -f sh -c 'echo $$ > escaped.fifo; exec sleep 600'; exec sleep 600"


@pytest.mark.parametrize("table", ["as found", "none"])
async def test_a_background_jobs_setsid_grandchild_does_not_outlive_the_server(root: Path, table: str) -> None:
    fifo = root / "escaped.fifo"
    os.mkfifo(fifo)
    env = {**UNSANDBOXED, "MCP_CODETOOLS_PROCESS_TABLE": "none"} if table == "none" else UNSANDBOXED
    server = await RawServer.start(root, env=env)
    escaped: int | None = None
    try:
        with anyio.fail_after(60):
            await server.initialize()
            job = server.call("Bash", {"command": ESCAPE, "run_in_background": True})
            await server.send(job)
            started = await server.response_to(job["id"])
            assert not started["result"].get("isError"), started
            escaped = int(await read_fifo(fifo))
            assert alive(escaped)
            assert os.getsid(escaped) == escaped, "the grandchild did not leave the job's session"
            assert await server.close() == 0
        assert not alive(escaped), "the setsid grandchild outlived the server"
    finally:
        await server.close()
        if escaped is not None and alive(escaped):
            os.kill(escaped, signal.SIGKILL)


async def test_a_foreground_leftover_in_the_commands_group_is_stopped_without_a_table(root: Path) -> None:
    # Adopted by the server once bash exits, killed, then reaped: else the group would seem alive for ever.
    server = await RawServer.start(root, env={**UNSANDBOXED, "MCP_CODETOOLS_PROCESS_TABLE": "none"})
    try:
        with anyio.fail_after(60):
            await server.initialize()
            call = server.call("Bash", {"command": "sleep 600 & echo $! > leftover.pid"})
            await server.send(call)
            answer = await server.response_to(call["id"])
            assert not answer["result"].get("isError"), answer
            leftover = int((root / "leftover.pid").read_text())
            assert reaped(leftover), "the stopped leftover is still a zombie of the server"
            assert await server.close() == 0
    finally:
        await server.close()
