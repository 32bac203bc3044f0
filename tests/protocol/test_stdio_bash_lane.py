"""Over real stdio (the server process): Bash on the fast lane keeps order, dies when cancelled, times out, and
starts background jobs; the server's own log says the lane answered them (issue 38)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.processes import live_in_group
from tests.protocol.stdio_raw import RawServer, text
from tests.protocol.test_fast_lane_bash import wait_until

pytestmark = pytest.mark.anyio


async def test_bash_over_real_stdio_is_served_by_the_lane(root: Path) -> None:
    server = await RawServer.start(root, "--log-level", "INFO")
    try:
        with anyio.fail_after(60):
            await server.initialize()
            await server.send(server.call("Read", {"file_path": "missing.txt"}))  # the SDK's: binds the session's log
            await server.receive()
            made = server.call("Bash", {"command": "echo made > made.txt; echo hi"})
            read = server.call("Read", {"file_path": "made.txt"})
            await server.send(made)
            await server.send(read)
            assert text(await server.response_to(made["id"])) == "hi"
            assert text(await server.response_to(read["id"])) == "1\tmade", "the Read behind the Bash saw its file"

            long = server.call("Bash", {"command": "sleep 30 & echo $$ > bash.pid; wait"})
            await server.send(long)
            pid_file = root / "bash.pid"
            await wait_until(lambda: pid_file.exists() and pid_file.read_text(encoding="utf-8").endswith("\n"))
            group = int(pid_file.read_text(encoding="utf-8"))
            await server.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": long["id"]}}
            )
            await wait_until(lambda: not live_in_group(group))

            timed = server.call("Bash", {"command": "sleep 30", "timeout": 200})
            await server.send(timed)
            answer = await server.receive()
            assert answer["id"] == timed["id"], "the cancelled call got no answer"
            assert text(answer).startswith("Command timed out after")

            job = server.call("Bash", {"command": "echo from-the-job", "run_in_background": True})
            await server.send(job)
            found = re.search(r"ID: (\S+?)\.", text(await server.response_to(job["id"])))
            assert found is not None
            follow = server.call("BashOutput", {"bash_id": found.group(1), "wait_s": 10})
            await server.send(follow)
            assert "from-the-job" in text(await server.response_to(follow["id"]))
    finally:
        code = await server.close()
    assert code == 0
    assert server.proc.stderr is not None
    log = (await server.proc.stderr.read()).decode(errors="replace")
    assert "answered by the fast lane: 4 call(s); 0 handed to the SDK, 1 cancelled" in log, log[-2000:]
