"""Per-call work of a Bash call that no result shows: what each `echo hi` back to back pays for (issue 38)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from mcp_codetools.shell import spawning
from mcp_codetools.tools.bash import BashInput
from tests.conftest import Caller
from tests.tools.test_bash import no_stray_children

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(os.name == "nt", reason="bash commands: POSIX")]

__all__ = ["no_stray_children"]


async def test_the_calls_analysis_is_read_without_pydantics_attribute_lookup(
    call: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Six reads a call through pydantic's `__getattr__` (private attributes) cost more than the analysis of `echo hi`.
    looked_up: list[str] = []
    real = BashInput.__getattr__

    def lookup(self: BashInput, name: str) -> Any:
        looked_up.append(name)
        return real(self, name)

    monkeypatch.setattr(BashInput, "__getattr__", lookup)
    assert await call.ok("Bash", {"command": "echo hi"}) == "hi"
    assert await call.ok("Bash", {"command": "ls -d ."}) == "."
    assert "_analysis" not in looked_up


async def test_a_read_only_call_builds_the_command_environment_once(
    call: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The read-only command's environment and the next bash's differ by git's variables alone: one build a call.
    built: list[bool] = []
    real = spawning.command_env

    def command_env(**kwargs: Any) -> dict[str, str]:
        built.append(kwargs["read_only"])
        return real(**kwargs)

    monkeypatch.setattr(spawning, "command_env", command_env)
    assert await call.ok("Bash", {"command": "echo hi; printenv GIT_OPTIONAL_LOCKS"}) == "hi\n0"
    assert len(built) == 1
    out = await call("Bash", {"command": "echo hi > made; printenv GIT_OPTIONAL_LOCKS"})  # not read-only: no git's
    assert out.meta["readOnly"] is False and out.meta["exitCode"] == 1
    assert len(built) == 2
