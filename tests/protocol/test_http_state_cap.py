"""`[http] max_states` under a burst: issue 35's reproduction over real HTTP, with the SDK's client.

300 Reads without state_id made 254 states, then every other 2026-07-28 client's first call, even
`Bash echo hi`, was refused for up to 30 minutes. Now a burst ends its own states to make room.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.protocol.http_peer import STATE_META, Threaded, http_server

pytestmark = pytest.mark.anyio


def _details(result: Any) -> dict[str, Any]:
    meta: dict[str, Any] = result.meta["codetools/result"]
    return meta


async def test_a_burst_of_reads_without_state_id_refuses_no_other_client(root: Path) -> None:
    f = root / "a.txt"
    f.write_text("one\n", encoding="utf-8")
    with http_server(root, env={"MCP_CODETOOLS_HTTP_MAX_STATES": "3"}) as running, anyio.fail_after(120):
        async with Client(running.url) as burst, Client(running.url) as other:
            working = Threaded(other)
            assert not (await working.call_tool("Read", {"file_path": str(f)})).is_error
            assert not (await working.call_tool("Read", {"file_path": str(f)})).is_error  # passed back: in use
            made = [await burst.call_tool("Read", {"file_path": str(f)}) for _ in range(8)]
            assert not any(result.is_error for result in made), [r.content[0].text for r in made if r.is_error]
            first = Threaded(other)
            hi = await first.call_tool("Bash", {"command": "echo hi"})
            assert not hi.is_error and "hi" in hi.content[0].text, "another client's first call runs"
            edit = await working.call_tool("Edit", {"file_path": str(f), "old_string": "one", "new_string": "two"})
            assert not edit.is_error, "the state in use kept its reads"
            gone = await burst.call_tool("Read", {"file_path": str(f), "state_id": made[0].meta[STATE_META]})
            assert gone.is_error and _details(gone)["handleError"] == "evicted", gone.content[0].text
            assert "Read files again" in gone.content[0].text
    assert f.read_text(encoding="utf-8") == "two\n"
