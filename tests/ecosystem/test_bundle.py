"""The MCP Bundle: manifests/manifest.json passes the official `mcpb validate`, and the bundle that
manifests/pack-bundle.sh packs starts the server on the folders a user picks."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mcp_codetools import __version__, cli
from mcp_codetools.policy.engine import MODES
from mcp_codetools.settings import load_settings
from mcp_codetools.shell import sandbox_default
from tests.ecosystem.support import MANIFESTS, TOOL_NAMES, node_tool, project_version, venv_tool

MANIFEST = MANIFESTS / "manifest.json"


def manifest() -> dict[str, Any]:
    return dict(json.loads(MANIFEST.read_text(encoding="utf-8")))


def mcpb_validate(path: Path) -> subprocess.CompletedProcess[str]:
    mcpb, env = node_tool("mcpb")
    return subprocess.run([mcpb, "validate", str(path)], capture_output=True, text=True, timeout=120, env=env)


def test_manifest_matches_the_project() -> None:
    data = manifest()
    assert float(data["manifest_version"]) >= 0.3
    assert data["version"] == project_version() == __version__
    assert [tool["name"] for tool in data["tools"]] == TOOL_NAMES
    folders = data["user_config"]["workspace_folders"]
    assert (folders["type"], folders["multiple"], folders["required"]) == ("directory", True, True)
    server = data["server"]
    assert server["type"] == "uv", "uv lets the host install the platform's wheels (rg, regex, pydantic-core)"
    assert server["mcp_config"]["args"][-1] == "${user_config.workspace_folders}"
    for key in data["user_config"]:
        assert any(f"${{user_config.{key}}}" in arg for arg in server["mcp_config"]["args"]), f"{key} is not wired"
    assert (MANIFESTS / "bundle_main.py").is_file() and server["entry_point"] == "server/main.py"
    assert "win32" not in data["compatibility"]["platforms"], "the file tools need POSIX descriptor-relative opens"


def test_mcpb_validate_rejects_a_uv_server_without_mcp_config(tmp_path: Path) -> None:
    """The check is live: the same manifest without its mcp_config is refused."""
    broken = manifest()
    del broken["server"]["mcp_config"]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    result = mcpb_validate(path)
    assert result.returncode != 0
    assert "mcp_config" in result.stdout + result.stderr


def expand(args: list[str], dirname: Path, folders: list[Path], values: dict[str, str] | None = None) -> list[str]:
    """What the host does with mcp_config's args: ${__dirname} is the unpacked bundle, a multiple
    directory setting becomes one argument per folder, and the other settings their value or default."""
    settings = {key: str(entry.get("default", "")).lower() for key, entry in manifest()["user_config"].items()}
    settings.update(values or {})
    out: list[str] = []
    for arg in args:
        if arg == "${user_config.workspace_folders}":
            out.extend(str(folder) for folder in folders)
            continue
        arg = arg.replace("${__dirname}", str(dirname))
        for key, value in settings.items():
            arg = arg.replace(f"${{user_config.{key}}}", value)
        out.append(arg)
    assert not any("${" in arg for arg in out), out
    return out


def bundle_main() -> Any:
    spec = importlib.util.spec_from_file_location("bundle_main", MANIFESTS / "bundle_main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def server_args(values: dict[str, str], folders: list[Path]) -> tuple[argparse.Namespace, dict[str, str]]:
    """The server's parsed arguments and the variables set for what a Claude Desktop user picked."""
    host_args = expand(manifest()["server"]["mcp_config"]["args"], Path("/bundle"), folders, values)
    environ: dict[str, str] = {}
    argv = bundle_main().server_argv(host_args[host_args.index("server/main.py") + 1 :], environ)
    return cli._parser().parse_args(argv), environ


def test_the_bundle_offers_the_sandbox_and_the_permission_mode() -> None:
    config = manifest()["user_config"]
    # Off in the bundle: one switch serves every platform, and where no backend is on by default (macOS) its
    # "true" is an explicit sandbox with the network closed, a surprise the default must not make
    assert (config["sandbox"]["type"], config["sandbox"]["default"]) == ("boolean", False)
    mode = config["permission_mode"]
    assert (mode["type"], mode["default"]) == ("string", "default")
    assert all(choice in mode["description"] for choice in MODES), "the description names every mode"


def test_the_bundles_settings_reach_the_servers_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_default, "DEFAULT_ON_BACKENDS", ())  # where none is on by default
    args, environ = server_args({"sandbox": "true", "permission_mode": "plan"}, [tmp_path])
    assert (args.sandbox, args.permission_mode, args.root) == (True, "plan", [str(tmp_path)])
    assert environ == {}
    args, environ = server_args({}, [tmp_path, tmp_path / "b"])
    assert (args.sandbox, args.permission_mode, args.root) == (None, None, [str(tmp_path), str(tmp_path / "b")])
    assert environ == {"MCP_CODETOOLS_SANDBOX": "0"}, "off turns a sandbox on by default off"
    loaded = load_settings([str(tmp_path)], environ=environ, read_files=False)
    assert loaded.settings.sandbox.enabled is False


def test_the_bundles_on_is_the_default_sandbox_where_a_backend_is_on_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not `--sandbox`, which would close the network and answer Bash's questions: the user's choice to make."""
    monkeypatch.setattr(sandbox_default, "DEFAULT_ON_BACKENDS", ("bwrap",))
    monkeypatch.setattr(sandbox_default, "platform_backends", lambda platform=None: ("bwrap", "landlock"))
    args, environ = server_args({"sandbox": "true"}, [tmp_path])
    assert (args.sandbox, environ) == (None, {})
    args, environ = server_args({"sandbox": "false"}, [tmp_path])
    assert (args.sandbox, environ) == (None, {"MCP_CODETOOLS_SANDBOX": "0"})
    monkeypatch.setattr(sandbox_default, "platform_backends", lambda platform=None: ("seatbelt",))
    args, environ = server_args({"sandbox": "true"}, [tmp_path])
    assert (args.sandbox, environ) == (True, {}), "no backend on by default here: on is the sandbox asked for"


@pytest.fixture
def unpacked_bundle(tmp_path: Path) -> Path:
    """The bundle pack-bundle.sh writes, unpacked as the host unpacks it."""
    mcpb, env = node_tool("mcpb")
    bundle = tmp_path / "codetools.mcpb"
    packed = subprocess.run(
        ["bash", str(MANIFESTS / "pack-bundle.sh"), str(bundle)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "MCPB": mcpb},
    )
    assert packed.returncode == 0, packed.stdout + packed.stderr
    # `mcpb validate` accepts the manifest: pack-bundle.sh runs it first (a Node run of its own costs ~0.7 CPU-s).
    assert "Manifest schema validation passes" in packed.stdout, packed.stdout + packed.stderr
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        assert {"manifest.json", "pyproject.toml", "server/main.py", "mcp_codetools/cli.py"} <= names
        assert not any("__pycache__" in name for name in names)
        archive.extractall(unpacked)
    return unpacked


@pytest.mark.anyio
async def test_packed_bundle_serves_every_chosen_folder(unpacked_bundle: Path, tmp_path: Path) -> None:
    uv = venv_tool("uv")
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (second / "note.txt").write_text("in the second folder\n", encoding="utf-8")
    config = json.loads((unpacked_bundle / "manifest.json").read_text(encoding="utf-8"))["server"]["mcp_config"]
    assert config["command"] == "uv"
    args = expand(config["args"], unpacked_bundle, [first, second])
    # The host brings its own uv and Python; here the test extras' uv runs on this Python (no Python download),
    # with this environment (its certificates and proxy settings reach PyPI).
    env = {**os.environ, **config.get("env", {}), "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never"}
    env["TMPDIR"] = str(tmp_path / "tmp")  # uv's lock files (`uv-<hash>.lock`) stay in it, not in /tmp
    (tmp_path / "tmp").mkdir()
    params = StdioServerParameters(command=uv, args=args, cwd=str(tmp_path), env=env)
    with anyio.fail_after(240):
        async with Client(params, mode="legacy") as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == TOOL_NAMES
            read = await client.call_tool("Read", {"file_path": str(second / "note.txt")})
            assert not read.is_error and "in the second folder" in read.content[0].text  # type: ignore[union-attr]
            outside = await client.call_tool("Read", {"file_path": str(unpacked_bundle / "manifest.json")})
            assert outside.is_error, "a folder the user did not pick is out of reach"
