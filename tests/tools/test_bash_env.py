"""What Bash commands see of the server's environment: everything but the server's own secrets."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings, settings_from_env
from mcp_codetools.shell import spawning
from tests.conftest import Caller
from tests.tools.test_bash import no_stray_children

pytestmark = pytest.mark.anyio

__all__ = ["no_stray_children"]


@pytest.fixture(autouse=True)
def server_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CODETOOLS_HTTP_TOKEN", "bearer-s3cret")
    monkeypatch.setenv("MCP_CODETOOLS_SOME_TOKEN_FILE", "/run/token-file")
    monkeypatch.setenv("DEPLOY_KEY", "deploy-s3cret")
    monkeypatch.setenv("HARMLESS", "plain")


@pytest.fixture
def settings(root: Path) -> Settings:
    return Settings(roots=(root,), bash_env_exclude=frozenset({"DEPLOY_KEY"}))


def assert_no_secrets(text: str) -> None:
    assert "HARMLESS=plain" in text  # the rest of the environment is there
    assert "s3cret" not in text
    assert "MCP_CODETOOLS_HTTP_TOKEN" not in text
    assert "MCP_CODETOOLS_SOME_TOKEN_FILE" not in text
    assert "DEPLOY_KEY" not in text


async def test_printenv_shows_no_server_secret(call: Caller) -> None:
    assert_no_secrets(await call.ok("Bash", {"command": "printenv"}))


async def test_a_background_job_sees_no_server_secret(call: Caller, session: CodeSession) -> None:
    out = await call("Bash", {"command": "printenv", "run_in_background": True})
    job = session.jobs.get(str(out.meta["backgroundTaskId"]))
    assert job is not None
    with anyio.fail_after(5):
        await job.done.wait()
    assert_no_secrets(await call.ok("BashOutput", {"bash_id": job.id}))


async def test_markers_inherited_from_an_outer_server_are_replaced(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(spawning.SESSION_VAR, "outer-session")
    monkeypatch.setenv(spawning.CALL_VAR, "outer-call")
    text = await call.ok("Bash", {"command": f"echo ${spawning.SESSION_VAR} ${spawning.CALL_VAR}"})
    assert "outer" not in text
    assert text.split()[0] == session.process_marker.value


def test_settings_read_the_exclusions_and_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CODETOOLS_BASH_ENV_EXCLUDE", " AWS_SECRET_ACCESS_KEY, GH_TOKEN,,")
    monkeypatch.setenv("MCP_CODETOOLS_SPILL_BUDGET_BYTES", "1048576")
    settings = settings_from_env(["/tmp"])
    assert settings.bash_env_exclude == frozenset({"AWS_SECRET_ACCESS_KEY", "GH_TOKEN"})
    assert settings.spill_budget_bytes == 1 << 20


def test_defaults() -> None:
    settings = Settings()
    assert settings.bash_env_exclude == frozenset()
    assert settings.spill_budget_bytes == 2 << 30


async def test_a_change_to_the_server_environment_reaches_the_next_command(
    call: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The filtered environment is kept between calls; it must follow the server's own as it changes.
    assert "LATER_VAR" not in await call.ok("Bash", {"command": "printenv"})
    monkeypatch.setenv("LATER_VAR", "first")
    assert "LATER_VAR=first" in await call.ok("Bash", {"command": "printenv"})
    monkeypatch.setenv("LATER_VAR", "second")
    monkeypatch.setenv("MCP_CODETOOLS_LATER_TOKEN", "later-s3cret")
    text = await call.ok("Bash", {"command": "printenv"})
    assert "LATER_VAR=second" in text
    assert_no_secrets(text)
    monkeypatch.delenv("LATER_VAR")
    assert "LATER_VAR" not in await call.ok("Bash", {"command": "printenv"})


def test_the_exclusions_of_each_call_apply() -> None:
    assert "HARMLESS" in spawning.command_env(read_only=True)
    assert "HARMLESS" not in spawning.command_env(read_only=True, exclude=frozenset({"HARMLESS"}))
    assert "HARMLESS" in spawning.command_env(read_only=False)
