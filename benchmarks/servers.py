"""The servers in the race, how to start them, and one live connection to each over real stdio.

Every server is spawned by the official SDK client (`mcp.Client` over `stdio_client`, legacy initialize
handshake), so every number includes the same client and the same pipes.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from benchmarks import procs
from benchmarks.adapters import Adapter, BareAdapter, OursAdapter

HERE = Path(__file__).resolve().parent


@dataclass
class ServerSpec:
    """How to start one server, and how to speak to it."""

    key: str
    label: str
    command: str
    args: list[str]
    adapter: Adapter
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    version: str = ""

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(command=self.command, args=self.args, env=self.env or None, cwd=self.cwd)


@dataclass
class Conn:
    """A connected client, the server's pid and the tools it lists."""

    spec: ServerSpec
    client: Client
    pid: int | None
    tools: set[str]
    startup_s: float

    def has(self, tool: str) -> bool:
        return tool in self.tools

    def peak_rss_kib(self) -> int | None:
        return procs.status_kib(self.pid, "VmHWM") if self.pid else None

    def cpu_seconds(self) -> float | None:
        return procs.cpu_seconds(self.pid) if self.pid else None

    def rss_kib(self) -> int | None:
        return procs.status_kib(self.pid, "VmRSS") if self.pid else None


@asynccontextmanager
async def connect(spec: ServerSpec, errlog: TextIO) -> AsyncIterator[Conn]:
    """Spawn, initialize and list tools; `startup_s` is the time from spawn to the tools/list answer."""
    before = procs.children()
    start = time.perf_counter()
    transport = stdio_client(spec.params(), errlog=errlog)
    async with Client(transport, mode="legacy", cache=None) as client:
        listed = await client.list_tools()
        startup = time.perf_counter() - start
        spawned = sorted(procs.children() - before)
        pid = spawned[-1] if spawned else None
        yield Conn(spec, client, pid, {tool.name for tool in listed.tools}, startup)


def ours_executable() -> str:
    beside = Path(sys.executable).parent / "mcp-codetools"
    if beside.exists():
        return str(beside)
    found = shutil.which("mcp-codetools")
    if not found:
        raise SystemExit("mcp-codetools is not installed: run `.venv/bin/pip install -e .` first")
    return found


def ours(roots: list[Path], cache: Path | None = None) -> ServerSpec:
    """Our server, its start snapshot off: the workloads measure a started server (a warm snapshot answers
    `tools/list` before the SDK has loaded, so a first call or an idle RSS would include the rest of the
    start). The cold-start workload turns it on; `cache` (`XDG_CACHE_HOME`) keeps the snapshot in the scratch.
    The Bash sandbox on by default is off here, as the peers have none (`benchmarks/sandbox_cost.py` prices it).
    """
    from importlib.metadata import version

    return ServerSpec(
        key="ours",
        label="mcp-codetools",
        command=ours_executable(),
        args=[arg for root in roots for arg in ("--root", str(root))],
        adapter=OursAdapter(),
        env={
            "MCP_CODETOOLS_START_SNAPSHOT": "0",
            "MCP_CODETOOLS_SANDBOX": "0",
            **({"XDG_CACHE_HOME": str(cache)} if cache is not None else {}),
        },
        version=version("mcp-codetools"),
    )


def against(source: Path, commit: str, roots: list[Path]) -> ServerSpec:
    """Our server as it was at `commit`, its package exported to `source`: run from there by this Python and
    its installed dependencies (PYTHONPATH comes before the editable install), start snapshot off as for ours.
    It runs in `source`: `python -m` puts its working directory first on the path, so started from the work
    tree's root it would import the work tree's package instead (every `--against` run did, before this).
    """
    return ServerSpec(
        key="before",
        label=f"mcp-codetools at {commit}",
        command=sys.executable,
        args=["-m", "mcp_codetools", *(arg for root in roots for arg in ("--root", str(root)))],
        adapter=OursAdapter(),
        env={"MCP_CODETOOLS_START_SNAPSHOT": "0", "MCP_CODETOOLS_SANDBOX": "0", "PYTHONPATH": str(source)},
        cwd=str(source),
        version=commit,
    )


def bare(roots: list[Path]) -> ServerSpec:
    """The floor: a bare SDK server (MCPServer, default stdio) with one small read tool."""
    return ServerSpec(
        key="bare",
        label="bare SDK server",
        command=sys.executable,
        args=[str(HERE / "bare_server.py"), *map(str, roots)],
        adapter=BareAdapter(),
    )
