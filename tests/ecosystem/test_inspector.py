"""The MCP Inspector CLI, a real client from the npm registry, lists the tools without schema portability
problems over stdio, then calls each tool over streamable HTTP. The Inspector 2.x needs Node 22.19 or newer
(`.ci/node-tools` installs it; older Node is skipped, saying so). Each Inspector run is a new process, so a new
session: the calls are chosen to stand alone (Edit creates a file; BashOutput and KillShell are asked about an
unknown id). The per-tool calls share one HTTP server (a server start costs ~1.8 CPU-s, and a stdio run starts
one per Inspector run, itself ~1.3 CPU-s of Node); its sessions share nothing but the files, which no call
depends on. The listing is the same bytes on every transport (tests/protocol/test_protocol_2026.py), so it is
asked once."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ecosystem.support import TOOL_NAMES, installed_server, node_tool
from tests.protocol.http_peer import http_server


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Node's compile cache for the module's Inspector runs: each run after the first compiles none of its
    modules again (1.5 CPU-s a run instead of 1.8)."""
    return tmp_path_factory.mktemp("node-compile-cache")


def _inspector(root: Path, config: Path, server: dict[str, Any], cache: Path) -> Any:
    """Runs `mcp-inspector --cli` against `server` on `root`, from a client config file."""
    tool, env = node_tool("mcp-inspector")
    env = {**env, "MCP_INSPECTOR_SECRET_STORE": "memory"}  # no OS keychain here; say so instead of trying one
    env["NODE_COMPILE_CACHE"] = str(cache)
    config.write_text(json.dumps({"mcpServers": {"codetools": server}}), encoding="utf-8")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [tool, "--cli", "--config", str(config), "--server", "codetools", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=root,
            stdin=subprocess.DEVNULL,
        )

    return run


def _project(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "greet.ts").write_text("export function greet() {}\n", encoding="utf-8")


@pytest.fixture
def inspector(root: Path, tmp_path: Path, compile_cache: Path) -> Any:
    """The Inspector starting the installed server over stdio, as a client's config says."""
    _project(root)
    server = {"command": installed_server(), "args": ["--root", str(root)]}
    return _inspector(root, tmp_path / "inspector.json", server, compile_cache)


@pytest.fixture(scope="module")
def http_project(tmp_path_factory: pytest.TempPathFactory, compile_cache: Path) -> Iterator[tuple[Path, Any]]:
    """One server over streamable HTTP on a project of its own, and the Inspector speaking to it."""
    folder = tmp_path_factory.mktemp("inspector")
    root = (folder / "ws").resolve()
    root.mkdir()
    _project(root)
    with http_server(root) as server:
        config = {"type": "streamable-http", "url": server.url}
        yield root, _inspector(root, folder / "inspector.json", config, compile_cache)


def test_inspector_lists_the_tools_over_stdio_and_finds_not_even_a_warning_in_the_schemas(inspector: Any) -> None:
    """Without --strict the Inspector prints a one-line count of its findings, warnings too; none means --strict
    (exit 6 on an error-severity finding) has nothing to report either."""
    plain = inspector("--method", "tools/list")
    assert plain.returncode == 0, plain.stderr
    assert [tool["name"] for tool in json.loads(plain.stdout)["tools"]] == TOOL_NAMES
    assert "Schema portability" not in plain.stderr, plain.stderr


def call(inspector: Any, name: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    result = inspector(
        "--method", "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(arguments), "--format", "json"
    )
    assert result.stdout.strip(), result.stderr
    payload = json.loads(result.stdout)["result"]
    return result.returncode, payload, "\n".join(block["text"] for block in payload["content"])


CALLS: list[tuple[str, dict[str, Any], bool, str]] = [
    ("Read", {"file_path": "src/greet.ts"}, False, "1\texport function greet"),
    ("Edit", {"file_path": "src/new.ts", "old_string": "", "new_string": "export {}\n"}, False, "new.ts"),
    ("Write", {"file_path": "notes/todo.md", "content": "- ship\n"}, False, "created successfully"),
    ("Grep", {"pattern": "greet", "-n": True, "output_mode": "content"}, False, "src/greet.ts:1:export function greet"),
    ("Glob", {"pattern": "**/*.ts"}, False, "src/greet.ts"),
    ("Bash", {"command": "echo from-bash", "description": "Print a word"}, False, "from-bash"),
    ("BashOutput", {"bash_id": "bash_9"}, True, "No shell found with ID: bash_9"),
    ("KillShell", {"shell_id": "bash_9"}, True, "bash_9"),
    (
        "MultiEdit",
        {"file_path": "src/greet.ts", "edits": [{"old_string": "greet", "new_string": "hello"}]},
        True,
        "has not been read yet",
    ),
    ("NotebookEdit", {"notebook_path": "nb.ipynb", "new_source": "x = 1"}, True, "does not exist"),
    ("FileHistory", {"action": "list"}, False, "No file has been changed"),
    ("LSP", {"operation": "documentSymbol", "file_path": "src/greet.ts"}, True, "No language server is configured"),
]


@pytest.mark.parametrize(("name", "arguments", "is_error", "expected"), CALLS, ids=[c[0] for c in CALLS])
def test_inspector_calls_each_tool(
    http_project: tuple[Path, Any], name: str, arguments: dict[str, Any], is_error: bool, expected: str
) -> None:
    root, inspector = http_project
    code, payload, text = call(inspector, name, arguments)
    assert payload["isError"] is is_error, text
    assert code == (5 if is_error else 0)  # the Inspector exits 5 when a tool answers isError
    assert expected in text
    if name in ("Edit", "Write"):
        written = arguments.get("content", arguments.get("new_string"))
        assert (root / arguments["file_path"]).read_text(encoding="utf-8") == written


def test_every_tool_is_called() -> None:
    assert sorted(name for name, *_ in CALLS) == sorted(TOOL_NAMES)
