"""Per-call work of a Bash call that no result shows: what each `echo hi` back to back pays for (issue 38)."""

from __future__ import annotations

import os
from typing import Any

import pytest

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
