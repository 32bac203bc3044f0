"""Every client config in manifests/ starts the server and answers tools/list, once its placeholders are
replaced the way the README tells users to: the command's path by the installed `mcp-codetools`, the project
folder by a real folder, VS Code's `${workspaceFolder}` by the folder VS Code has open, and the working
directory is the project (Claude Code starts servers there, which is what `--root .` relies on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.ecosystem.support import MANIFESTS, REPO, TOOL_NAMES, installed_server, tools_over_stdio

CLIENT_CONFIGS = ["claude-desktop.json", "claude-code.mcp.json", "vscode.mcp.json", "cursor.mcp.json"]
OTHER_FILES = {
    "manifest.json": "MCP Bundle manifest (test_bundle.py)",
    "server.json": "MCP registry entry (test_registry.py)",
    "tools.json": "the tools/list payload (tests/test_manifest.py)",
    "http-remote.md": "HTTP notes",
    "pack-bundle.sh": "packs the bundle (test_bundle.py)",
    "bundle_main.py": "the bundle's entry point (test_bundle.py)",
}
COMMAND_PLACEHOLDER = "/absolute/path/to/mcp-codetools/.venv/bin/mcp-codetools"
PROJECT_PLACEHOLDER = "/absolute/path/to/your/project"


def test_every_file_in_manifests_is_checked() -> None:
    present = {path.name for path in MANIFESTS.iterdir()} - {"__pycache__"}  # bytecode of bundle_main.py, untracked
    unknown = present - set(CLIENT_CONFIGS) - set(OTHER_FILES)
    assert not unknown, f"add {unknown} to CLIENT_CONFIGS (then it is started) or to OTHER_FILES with its check"
    assert present >= set(CLIENT_CONFIGS) | set(OTHER_FILES)


def test_the_readme_names_every_client_config() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [name for name in CLIENT_CONFIGS if f"manifests/{name}" not in readme]
    assert not missing


def substitute(value: str, project: Path) -> str:
    return (
        value.replace(COMMAND_PLACEHOLDER, installed_server())
        .replace(PROJECT_PLACEHOLDER, str(project))
        .replace("${workspaceFolder}", str(project))
    )


def server_entry(name: str) -> dict[str, Any]:
    config = json.loads((MANIFESTS / name).read_text(encoding="utf-8"))
    servers = config.get("mcpServers") or config.get("servers")  # VS Code names the key "servers"
    assert isinstance(servers, dict) and list(servers) == ["codetools"], name
    entry: dict[str, Any] = servers["codetools"]
    assert entry.get("type", "stdio") == "stdio"
    assert entry["command"] == COMMAND_PLACEHOLDER, "the README tells users to replace exactly this"
    return entry


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project for the module's configs: once substituted, most name the same command line."""
    return tmp_path_factory.mktemp("project").resolve()


@pytest.fixture(scope="module")
def listed() -> dict[tuple[str, ...], list[str]]:
    """What each command line started listed: a config whose command line was started already (three of the
    four, substituted, are `--root <project>`) is not started again (a start costs ~1.5 CPU-s)."""
    return {}


@pytest.mark.anyio
@pytest.mark.parametrize("name", CLIENT_CONFIGS)
async def test_client_config_starts_the_server(
    name: str, project: Path, listed: dict[tuple[str, ...], list[str]]
) -> None:
    entry = server_entry(name)
    command = substitute(entry["command"], project)
    args = [substitute(arg, project) for arg in entry.get("args", [])]
    assert not any("/absolute/path" in arg or "${" in arg for arg in [command, *args]), args
    assert args[args.index("--root") + 1] in (str(project), "."), "the config must name the project as its root"
    line = (command, *args)
    if line not in listed:
        listed[line] = await tools_over_stdio(command, args, cwd=project)
    assert listed[line] == TOOL_NAMES
