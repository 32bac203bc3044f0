"""What the stall benchmarks share: a server over HTTP with two sessions, and a small Read's latency in one
while the other's call runs (`notebook_stall`, `bash_parse_stall`).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.stats import median

T = TypeVar("T")

TARGET_MS = 100.0
"""The most a small Read may take over its idle median while another session's call runs."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _listening(port: int) -> None:
    with anyio.fail_after(60):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[Client]:
    """A session over its own HTTP client, closed with it (the SDK leaves a client it was given open)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and reap it (its own process group)."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()


def _start(root: Path, port: int, token: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_codetools", "--transport", "http", "--port", str(port), "--root", str(root)],
        env={**os.environ, "MCP_CODETOOLS_HTTP_TOKEN": token},
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@asynccontextmanager
async def two_sessions(root: Path) -> AsyncIterator[tuple[Client, Client, subprocess.Popen[bytes]]]:
    """A server on `root` over streamable HTTP (this interpreter, run from `root`), and two sessions of it."""
    port, token = _free_port(), secrets.token_hex(16)
    proc = _start(root, port, token)
    try:
        await _listening(port)
        url = f"http://127.0.0.1:{port}/mcp"
        async with _client(url, token) as worker, _client(url, token) as reader:
            yield worker, reader, proc
    finally:
        _stop(proc)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def idle_reads(reader: Client, read_args: dict[str, str], count: int) -> list[float]:
    """`count` small Reads with nothing else running, in ms each (after one to warm up)."""
    await reader.call_tool("Read", read_args)
    idle: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        await reader.call_tool("Read", read_args)
        idle.append((time.perf_counter() - start) * 1000)
    return idle


async def reads_during(
    reader: Client, read_args: dict[str, str], work: Callable[[], Awaitable[T]]
) -> tuple[T, float, list[float]]:
    """Run `work` while `reader` Reads in a loop until it ends: its result, its ms, and each Read's ms."""
    reads: list[float] = []
    done = anyio.Event()
    outcome: list[tuple[T, float]] = []

    async def run() -> None:
        start = time.perf_counter()
        try:
            outcome.append((await work(), (time.perf_counter() - start) * 1000))
        finally:
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not done.is_set():
            start = time.perf_counter()
            await reader.call_tool("Read", read_args)
            reads.append((time.perf_counter() - start) * 1000)
    result, took = outcome[0]
    return result, took, reads


def idle_figures(idle: list[float]) -> dict[str, float | int | str]:
    return {"idle read median ms": round(median(idle), 2), "idle read p99 ms": round(pct(idle, 0.99), 2)}


def during_figures(label: str, what: str, during: list[float], base: float) -> dict[str, float | int | str]:
    """B's Reads during `label`'s `what` (edit, call): count, median, p99, max, and the max over `base`."""
    if not during:
        return {f"{label}: reads during {what}": 0}
    return {
        f"{label}: reads during {what}": len(during),
        f"{label}: read during {what} median ms": round(median(during), 2),
        f"{label}: read during {what} p99 ms": round(pct(during, 0.99), 2),
        f"{label}: read during {what} max ms": round(max(during), 2),
        f"{label}: added over idle median ms": round(max(during) - base, 2),
    }


def report(figures: dict[str, float | int | str], what: str) -> None:
    """Print the figures and the verdict; exit 1 when a Read during a `what` took over the target."""
    for key, value in figures.items():
        print(f"{key}: {value}")
    worst = max((float(v) for k, v in figures.items() if k.endswith("added over idle median ms")), default=0.0)
    met = worst <= TARGET_MS
    verdict = "met" if met else "NOT met"
    print(f"target: no Read during {what} more than {TARGET_MS:g} ms over the idle median: {verdict}")
    sys.exit(0 if met else 1)
