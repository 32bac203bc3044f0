"""The MCP Inspector CLI, a real client from the npm registry, lists the tools without schema portability
problems and calls each tool over stdio. The Inspector 2.x needs Node 22.19 or newer (`.ci/node-tools`
installs it; older Node is skipped, saying so). Each Inspector run is a new process, so a new session: the
calls are chosen to stand alone (Edit creates a file; BashOutput and KillShell are asked about an unknown id)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.ecosystem.support import TOOL_NAMES, installed_server, node_tool


@pytest.fixture
def inspector(root: Path, tmp_path: Path) -> Any:
    """Runs `mcp-inspector --cli` against the installed server on `root`, from a client config file."""
    tool, env = node_tool("mcp-inspector")
    env = {**env, "MCP_INSPECTOR_SECRET_STORE": "memory"}  # no OS keychain here; say so instead of trying one
    config = tmp_path / "inspector.json"
    server = {"command": installed_server(), "args": ["--root", str(root)]}
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


def test_inspector_lists_the_tools_with_portable_schemas(inspector: Any) -> None:
    result = inspector("--method", "tools/list", "--strict")
    assert result.returncode == 0, result.stderr  # --strict exits 6 on an error-severity schema problem
    assert [tool["name"] for tool in json.loads(result.stdout)["tools"]] == TOOL_NAMES
    plain = inspector("--method", "tools/list")
    assert plain.returncode == 0, plain.stderr
    assert "Schema portability" not in plain.stderr, plain.stderr  # its one-line count of findings, warnings too


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
    inspector: Any, root: Path, name: str, arguments: dict[str, Any], is_error: bool, expected: str
) -> None:
    (root / "src").mkdir()
    (root / "src" / "greet.ts").write_text("export function greet() {}\n", encoding="utf-8")
    code, payload, text = call(inspector, name, arguments)
    assert payload["isError"] is is_error, text
    assert code == (5 if is_error else 0)  # the Inspector exits 5 when a tool answers isError
    assert expected in text
    if name in ("Edit", "Write"):
        written = arguments.get("content", arguments.get("new_string"))
        assert (root / arguments["file_path"]).read_text(encoding="utf-8") == written


def test_every_tool_is_called() -> None:
    assert sorted(name for name, *_ in CALLS) == sorted(TOOL_NAMES)
