"""Two HTTP clients interleaving many calls: neither ever observes the other's reads, jobs, cwd or file history.

Each client works on its own file, folder and background job, and between those calls tries the other's
file (never read by it), the other's job id, and looks at its own cwd and file history. Any answer that
names the other client's things, and any cross attempt that is not refused, counts as an observation.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.protocol.http_peer import Threaded, http_server

pytestmark = pytest.mark.anyio

UNSANDBOXED = {"MCP_CODETOOLS_SANDBOX": "0"}
"""What is tested is the sessions' state, not the sandbox (tests/tools/test_bash_sandbox*.py): its Bash calls,
300 of them, cost 10 times the CPU each in the sandbox on by default (a bwrap and a supervisor a call)."""


@dataclass
class Side:
    name: str
    root: Path
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    job: str = ""
    count: int = 0

    @property
    def file(self) -> Path:
        return self.root / f"file-{self.tag}.txt"

    @property
    def folder(self) -> Path:
        return self.root / f"dir-{self.tag}"

    def markers(self) -> list[str]:
        """What only this side's own state could show: its file and folder names, its job's id and output."""
        return [self.tag, self.job] if self.job else [self.tag]


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def tool_text(result: Any) -> str:
    return str(result.content[0].text)


async def drive(client: Threaded, me: Side, other: Side, calls: int, observations: list[str]) -> None:
    """`calls` calls in a fixed cycle; every answer is checked for the other side's things."""

    def check(what: str, result: Any) -> None:
        shown = tool_text(result)
        seen = [m for m in other.markers() if m not in me.markers() and m in shown]  # not "bash_1": both have one
        observations.extend(f"{me.name} {what}: saw {other.name}'s {m!r}: {shown[:200]}" for m in seen)

    made = 0
    while made < calls:
        step = made % 8
        if step == 0:
            result = await client.call_tool("Read", {"file_path": str(me.file)})
            shown = tool_text(result)
            if f"count={me.count}" not in shown and not shown.startswith(
                f"File unchanged since your last Read of this range: {me.file}"
            ):
                observations.append(f"{me.name} read something else: {tool_text(result)[:200]}")
        elif step == 1:
            result = await client.call_tool(
                "Edit",
                {"file_path": str(me.file), "old_string": f"count={me.count}", "new_string": f"count={me.count + 1}"},
            )
            assert not result.is_error, tool_text(result)
            me.count += 1
        elif step == 2:
            result = await client.call_tool("Bash", {"command": f"cd {me.folder.name}"})
        elif step == 3:
            result = await client.call_tool("Bash", {"command": "pwd"})
            if tool_text(result).strip() != str(me.folder):
                observations.append(f"{me.name} cwd is {tool_text(result).strip()!r}")
        elif step == 4:  # the other side's file, which this side never read
            result = await client.call_tool(
                "Edit", {"file_path": str(other.file), "old_string": "count=", "new_string": "count=9"}
            )
            if not result.is_error:
                observations.append(f"{me.name} edited {other.name}'s file without reading it")
            made += 1
            continue  # the refusal names the file: not an observation
        elif step == 5:
            result = await client.call_tool("BashOutput", {"bash_id": other.job})
            # Handshake-era ids count per session (both are bash_1, each naming its own job); handles never repeat.
            served = not result.is_error and other.job != me.job
            if served or f"job-of-{other.tag}" in tool_text(result):
                observations.append(f"{me.name} reached {other.name}'s job: {tool_text(result)[:200]}")
            made += 1
            continue
        elif step == 6:
            result = await client.call_tool("FileHistory", {"action": "list"})
        else:
            result = await client.call_tool("BashOutput", {"bash_id": me.job})
            if result.is_error:
                observations.append(f"{me.name} lost its own job: {tool_text(result)[:200]}")
        check(f"call {made} ({step})", result)
        made += 1


async def run_pair(url: str, mode: str, root: Path, calls: int) -> list[str]:
    a, b = Side("A", root), Side("B", root)
    for side in (a, b):
        side.file.write_text(f"owner {side.tag}\ncount=0\n", encoding="utf-8")
        side.folder.mkdir()
    observations: list[str] = []
    async with Client(url, mode=mode) as a_client, Client(url, mode=mode) as b_client:  # type: ignore[arg-type]
        a_threaded, b_threaded = Threaded(a_client), Threaded(b_client)
        for side, client in ((a, a_threaded), (b, b_threaded)):
            await client.call_tool("Read", {"file_path": str(side.file)})
            started = await client.call_tool(
                "Bash", {"command": f"echo job-of-{side.tag}; sleep 600", "run_in_background": True}
            )
            side.job = started.meta["codetools/result"]["backgroundTaskId"]
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive, a_threaded, a, b, calls // 2, observations)
            tg.start_soon(drive, b_threaded, b, a, calls // 2, observations)
        for side, client in ((a, a_threaded), (b, b_threaded)):
            await client.call_tool("KillShell", {"shell_id": side.job})
            assert f"count={side.count}" in side.file.read_text(encoding="utf-8")
    return observations


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One server for both modes (a start costs ~2 CPU-s): each pair works on files and folders named by tags
    of its own, so the pairs no more see each other than the clients of a pair do."""
    root = tmp_path_factory.mktemp("isolation").resolve()
    with http_server(root, env=UNSANDBOXED) as running:
        yield running.url, root


# 128 calls: 8 rounds of the 8-step cycle per client, each round the same checks (1,000 cost 12 CPU-s, issue 38;
# every round after the first tries the same things again, with more history on both sides).
@pytest.mark.parametrize(("mode", "calls"), [("auto", 128), ("legacy", 64)])
async def test_two_http_clients_interleaving_never_observe_each_other(
    shared: tuple[str, Path], mode: str, calls: int
) -> None:
    """`auto` opens at 2026-07-28 (state through state_id handles); `legacy` at 2025-11-25 (a session each)."""
    url, root = shared
    with anyio.fail_after(240):
        observations = await run_pair(url, mode, root, calls)
    assert observations == [], f"{len(observations)} cross-client observations, first: {observations[:3]}"
