"""What the ecosystem tests share: where the Node tools are, the installed server, and a stdio tools/list."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests import facilities

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
TOOL_NAMES = [
    "Read",
    "Edit",
    "Write",
    "Grep",
    "Glob",
    "Bash",
    "BashOutput",
    "KillShell",
    "MultiEdit",
    "NotebookEdit",
    "FileHistory",
    "LSP",
]
NODE_TOOLS = Path(
    os.environ.get("MCP_CODETOOLS_NODE_TOOLS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-codetools" / "node-tools"
)
"""Where .ci/node-tools installs the pinned Node tools (the same default as the script)."""
MIN_NODE = (22, 19)
"""The Inspector 2.x and the conformance suite refuse older Node releases."""
INSTALL_HINT = "run .ci/node-tools (CI does) to install the pinned Node tools"


def project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def installed_server() -> str:
    """The console script of the environment running the tests."""
    script = Path(sys.executable).parent / "mcp-codetools"
    if not script.exists():
        pytest.skip("the mcp-codetools console script is not installed beside this Python (pip install -e .)")
    return str(script)


def venv_tool(name: str) -> str:
    """A command the test extras install (uv, uvx, pipx), beside this Python or on the PATH."""
    found = shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.skip(f"{name} is not installed: pip install -e '.[test]' brings it")
    return found


def node_env() -> dict[str, str]:
    """The environment with the Node tools folder first on the PATH (its `node` too, when it holds one)."""
    bin_dir = NODE_TOOLS / "node_modules" / ".bin"
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def node_tool(name: str) -> tuple[str, dict[str, str]]:
    """The path of a Node CLI and the environment to run it in; skips, saying why, when it cannot run."""
    env = node_env()
    tool = shutil.which(name, path=env["PATH"])
    if tool is None:
        facilities.missing("node-tools", f"{name} not found in {NODE_TOOLS} or on the PATH: {INSTALL_HINT}")
    node = shutil.which("node", path=env["PATH"])
    if node is None:
        facilities.missing("node-tools", f"Node.js is not installed: {INSTALL_HINT}")
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, env=env).stdout
    match = re.match(r"v(\d+)\.(\d+)", out.strip())
    if match is None or (int(match[1]), int(match[2])) < MIN_NODE:
        wanted = f"{MIN_NODE[0]}.{MIN_NODE[1]}+"
        facilities.missing("node-tools", f"{name} needs Node {wanted}, found {out.strip() or 'none'}: {INSTALL_HINT}")
    return tool, env


async def tools_over_stdio(command: str, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    """Start a server as a client would and return the names it lists."""
    params = StdioServerParameters(command=command, args=args, cwd=str(cwd), env=env)
    with anyio.fail_after(120):
        async with Client(params, mode="legacy") as client:
            return [tool.name for tool in (await client.list_tools()).tools]
