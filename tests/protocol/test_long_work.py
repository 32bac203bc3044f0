"""Long work through the SDK client: logging (capability, setLevel, job-end notice), progress, moved commands.

In memory in both eras, and over real stdio. Every wait is for an event (a message, a file) and bounded;
nothing is filtered "because it did not arrive in time": a message that must not arrive is checked
after a later one that must, since one session's messages are sent in order.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_codetools import pipeline as pipeline_module
from mcp_codetools.protocol.client_log import ClientLog, Message
from mcp_codetools.protocol.server import CodeToolsServer
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.shell import running
from tests.protocol.stdio_raw import server_command

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


class Messages:
    """What the client's logging callback received, with a way to wait for one."""

    def __init__(self) -> None:
        self.seen: list[types.LoggingMessageNotificationParams] = []
        self._changed = anyio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.seen.append(params)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, text: str) -> types.LoggingMessageNotificationParams:
        with anyio.fail_after(10):
            while True:
                for params in self.seen:
                    if text in str(params.data):
                        return params
                await self._changed.wait()


@asynccontextmanager
async def connected(app: CodeToolsServer, messages: Messages, mode: str) -> AsyncIterator[Client]:
    level: Any = "debug" if mode == MODERN else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK warns that logging is deprecated at 2026-07-28
        async with Client(app.server, mode=mode, logging_callback=messages, log_level=level) as client:
            yield client


async def set_level(client: Client, level: types.LoggingLevel) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        await client.set_logging_level(level)


async def wait_for_file(path: Path) -> None:
    with anyio.fail_after(10):
        while not path.exists():  # noqa: ASYNC110 - bounded wait for a file the command writes
            await anyio.sleep(0.01)


def app_for(root: Path, **settings: Any) -> CodeToolsServer:
    return CodeToolsServer(Settings(roots=(root,), **settings))


async def test_the_logging_capability_is_declared(root: Path) -> None:
    async with connected(app_for(root), Messages(), "legacy") as client:
        assert client.server_capabilities is not None and client.server_capabilities.logging is not None


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_job_end_notice_names_the_job_and_its_exit_code(root: Path, mode: str) -> None:
    messages = Messages()
    async with connected(app_for(root), messages, mode) as client:
        started = await client.call_tool("Bash", {"command": "exit 3", "run_in_background": True})
        assert not started.is_error
        if mode == MODERN:  # no stream outlives a call at 2026-07-28: the notice rides the next call
            await client.call_tool("BashOutput", {"bash_id": "bash_1", "wait_s": 5})
        notice = await messages.wait_for("Background shell bash_1")
    assert notice.level == "notice" and notice.logger == "mcp_codetools.jobs"
    assert isinstance(notice.data, dict) and notice.data["shellId"] == "bash_1" and notice.data["exitCode"] == 3
    assert notice.data["message"] == "Background shell bash_1 exited with code 3. Read its output with BashOutput."


async def test_set_level_filters_what_is_sent(root: Path) -> None:
    messages = Messages()
    forwarded = logging.getLogger("mcp_codetools.test_long_work")
    async with connected(app_for(root), messages, "legacy") as client:
        await set_level(client, "error")
        await client.call_tool("Bash", {"command": "exit 5", "run_in_background": True})  # a notice: below error
        await client.call_tool("BashOutput", {"bash_id": "bash_1", "wait_s": 5})
        forwarded.warning("a warning, below error")
        forwarded.error("first error")
        await messages.wait_for("first error")
        assert [m.data for m in messages.seen] == ["first error"]
        await set_level(client, "warning")
        forwarded.info("info is never forwarded")
        forwarded.warning("now a warning")
        await messages.wait_for("now a warning")
    assert [(m.level, m.data) for m in messages.seen] == [("error", "first error"), ("warning", "now a warning")]


async def test_a_call_s_own_warnings_go_to_its_session_only(root: Path) -> None:
    """Routing, with stand-in sinks: a record owned by one session never reaches another."""
    log = ClientLog()
    sent: dict[str, list[Any]] = {"a": [], "b": []}
    both_done = anyio.Event()

    class FakeServerSession:
        def __init__(self, name: str) -> None:
            self.name = name

        async def send_notification(self, note: Any, related_request_id: Any = None) -> None:
            sent[self.name].append(note.params.data)
            if "last" in sent["a"] and "last" in sent["b"]:
                both_done.set()

    class FakeCtx:
        def __init__(self, name: str) -> None:
            self.session = FakeServerSession(name)
            self.protocol_version = "2025-11-25"

    with anyio.fail_after(5):
        a, b = CodeSession(Settings(roots=(root,))), CodeSession(Settings(roots=(root,)))
        for session, name in ((a, "a"), (b, "b")):
            log.bind(session, FakeCtx(name))  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:
            tg.start_soon(log.run)
            await anyio.wait_all_tasks_blocked()
            with log.owned_by(a):
                logging.getLogger("mcp_codetools.x").warning("a's path /secret/a")
            logging.getLogger("mcp_codetools.x").warning("for everyone")
            log.post(Message("warning", "t", "last", None))
            await both_done.wait()
            tg.cancel_scope.cancel()
        await a.aclose()
        await b.aclose()
    assert sent["a"] == ["a's path /secret/a", "for everyone", "last"]
    assert sent["b"] == ["for everyone", "last"]


async def test_progress_comes_at_least_every_interval_while_a_command_runs(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Handshake era in memory. The in-memory 2026-07-28 transport calls the handler directly and puts no
    # progressToken in `_meta`, so the server sees no request for progress there; over stdio it does
    # (`test_over_stdio_progress_comes_in_both_eras`).
    monkeypatch.setattr(running, "PROGRESS_INTERVAL_S", 0.05)
    monkeypatch.setattr(pipeline_module, "PROGRESS_INTERVAL_S", 0.05)
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))
        if len(seen) == 3:
            (root / "go").touch()

    async with connected(app_for(root), Messages(), "legacy") as client:
        with anyio.fail_after(20):
            result = await client.call_tool(
                "Bash",
                {"command": "echo working; while [ ! -e go ]; do sleep 0.01; done; echo finished"},
                progress_callback=on_progress,
            )
    assert not result.is_error and "finished" in str(result.content[0])
    assert len(seen) >= 3  # the command only ends once three have come
    assert [p for p, _ in seen] == sorted({p for p, _ in seen})  # strictly increasing
    assert "working" in [m for _, m in seen]


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_long_command_returns_in_time_and_is_followed_with_bash_output(root: Path, mode: str) -> None:
    messages = Messages()
    app = app_for(root, bash_return_after_s=1)
    async with connected(app, messages, mode) as client:
        with anyio.fail_after(20):
            first = await client.call_tool(
                "Bash", {"command": "echo started; while [ ! -e go ]; do sleep 0.01; done; echo done"}
            )
            text = str(first.content[0].text)  # type: ignore[union-attr]
            assert text.startswith("started\n\nCommand was still running after 1s, so it was moved to the background.")
            (root / "go").touch()
            later = ""
            while "exited with code 0" not in later:
                result = await client.call_tool("BashOutput", {"bash_id": "bash_1", "wait_s": 1})
                later += str(result.content[0].text)  # type: ignore[union-attr]
        assert "done" in later and "started" not in later
        await messages.wait_for("Background shell bash_1 exited with code 0")


async def test_over_stdio_set_level_and_a_moved_command_s_end_notice(root: Path) -> None:
    messages = Messages()
    command, *args = server_command()
    params = StdioServerParameters(
        command=command,
        args=[*args, "--root", str(root)],
        cwd=str(root),
        env={**os.environ, "MCP_CODETOOLS_BASH_RETURN_AFTER_S": "1"},
    )
    with anyio.fail_after(60), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(params, mode="legacy", logging_callback=messages) as client:
            assert client.server_capabilities is not None and client.server_capabilities.logging is not None
            await client.set_logging_level("notice")
            first = await client.call_tool("Bash", {"command": "touch began; while [ ! -e go ]; do sleep 0.01; done"})
            assert "moved to the background" in str(first.content[0])
            await wait_for_file(root / "began")
            (root / "go").touch()
            notice = await messages.wait_for("Background shell bash_1 exited with code 0")
    assert isinstance(notice.data, dict) and notice.data["exitCode"] == 0


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_over_stdio_progress_and_a_job_s_end_notice_come_in_both_eras(root: Path, mode: str) -> None:
    """At 2026-07-28 the job's end notice rides the next call (a notification goes with a request there).
    One start for both (a start costs ~1.5 CPU-s)."""
    # The real interval (2 s, under the 5 s some clients reset their timeout on): two notifications.
    seen: list[float] = []
    messages = Messages()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        if len(seen) == 2:
            (root / "go").touch()

    command, *args = server_command()
    params = StdioServerParameters(command=command, args=[*args, "--root", str(root)], cwd=str(root))
    with anyio.fail_after(60), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(params, mode=mode, logging_callback=messages, log_level="notice") as client:  # type: ignore[arg-type]
            result = await client.call_tool(
                "Bash",
                {"command": "while [ ! -e go ]; do sleep 0.01; done; echo finished"},
                progress_callback=on_progress,
            )
            await client.call_tool("Bash", {"command": "exit 3", "run_in_background": True})
            await client.call_tool("BashOutput", {"bash_id": "bash_1", "wait_s": 5})
            notice = await messages.wait_for("Background shell bash_1 exited with code 3")
    assert "finished" in str(result.content[0]) and len(seen) >= 2
    assert notice.level == "notice"
