"""Each server's tool names and argument shapes for each workload; `None` means the server lacks it (n/a)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from benchmarks.servers import Conn

GrepMode = Literal["files", "content"]


@dataclass
class Outcome:
    """One operation as the client saw it."""

    text: str
    is_error: bool
    seconds: float
    calls: int = 1
    meta: dict[str, Any] = field(default_factory=dict)


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") or "" for block in result.content)


async def call(conn: Conn, tool: str, args: dict[str, Any]) -> Outcome:
    start = time.perf_counter()
    result = await conn.client.call_tool(tool, args)
    elapsed = time.perf_counter() - start
    return Outcome(_text(result), bool(result.is_error), elapsed, meta=dict(result.meta or {}))


class Adapter:
    """Maps a workload to one server's tools. Subclasses override what their server can do."""

    read_tool: str | None = None
    edit_tool: str | None = None
    grep_tool: str | None = None
    bash_tool: str | None = None

    def can(self, conn: Conn, what: Literal["read", "edit", "grep", "bash"]) -> bool:
        tool = getattr(self, f"{what}_tool")
        return tool is not None and conn.has(tool)

    async def read(self, conn: Conn, path: Path) -> Outcome:
        """The whole (small) file."""
        raise NotImplementedError

    async def read_tail(self, conn: Conn, path: Path, total_lines: int, count: int, shift: int = 0) -> Outcome:
        """`count` lines ending `shift` lines before the end of a `total_lines`-line file."""
        raise NotImplementedError

    async def prepare_edit(self, conn: Conn, path: Path) -> None:
        """Whatever the server needs before it accepts an Edit of `path`."""

    async def edit(self, conn: Conn, path: Path, old: str, new: str) -> Outcome:
        raise NotImplementedError

    async def grep(self, conn: Conn, pattern: str, path: Path, mode: GrepMode, default_page: bool = False) -> Outcome:
        """Search file contents; `default_page` asks for what the server returns by default, else everything."""
        raise NotImplementedError

    async def bash(self, conn: Conn, command: str) -> Outcome:
        raise NotImplementedError


class OursAdapter(Adapter):
    read_tool = "Read"
    edit_tool = "Edit"
    grep_tool = "Grep"
    bash_tool = "Bash"

    async def read(self, conn: Conn, path: Path) -> Outcome:
        return await call(conn, "Read", {"file_path": str(path)})

    async def read_tail(self, conn: Conn, path: Path, total_lines: int, count: int, shift: int = 0) -> Outcome:
        first = max(1, total_lines - count + 1 - shift)
        return await call(conn, "Read", {"file_path": str(path), "offset": first, "limit": count})

    async def prepare_edit(self, conn: Conn, path: Path) -> None:
        outcome = await call(conn, "Read", {"file_path": str(path), "limit": 1})
        if outcome.is_error:
            raise RuntimeError(f"Read before Edit failed: {outcome.text[:200]}")

    async def edit(self, conn: Conn, path: Path, old: str, new: str) -> Outcome:
        return await call(conn, "Edit", {"file_path": str(path), "old_string": old, "new_string": new})

    async def grep(self, conn: Conn, pattern: str, path: Path, mode: GrepMode, default_page: bool = False) -> Outcome:
        args: dict[str, Any] = {"pattern": pattern, "path": str(path)}
        if not default_page:
            args["output_mode"] = "files_with_matches" if mode == "files" else "content"
            if mode == "content":
                args["-n"] = True
        return await call(conn, "Grep", args)

    async def bash(self, conn: Conn, command: str) -> Outcome:
        return await call(conn, "Bash", {"command": command})


class BareAdapter(Adapter):
    """The bare SDK server: one `read` tool, nothing else."""

    read_tool = "read"

    async def read(self, conn: Conn, path: Path) -> Outcome:
        return await call(conn, "read", {"path": str(path)})
