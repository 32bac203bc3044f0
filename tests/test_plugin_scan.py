"""pydantic's plugin lookup is skipped by the start-up (issue 38), and the user's environment stays theirs.

The lookup scans every installed distribution's entry points at the first model pydantic builds; the
start-up sets `PYDANTIC_DISABLE_PLUGINS` only while it builds its own models, and only when the user
has not set it, so no command, hook or language server sees a variable the user did not set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_codetools.cli import PLUGINS_VAR, plugin_scan_skipped

_PROBE = """
import json, os, sys
from mcp_codetools import cli
prepared = cli._prepare(sys.argv[2:], sdk=sys.argv[1] == "sdk")
assert not isinstance(prepared, int), prepared
import pydantic.plugin._loader as loader
print(json.dumps({
    "scanned": loader._plugins is not None,
    "variable": os.environ.get(cli.PLUGINS_VAR),
    "hooks_see_it": cli.PLUGINS_VAR in prepared[1].gate.hooks._env,
}))
"""


def _start_up(root: Path, mode: str, **env: str) -> dict[str, object]:
    """What a start-up (`early`: from the snapshot, `sdk`: a normal one) left behind, in a fresh interpreter."""
    environ = {k: v for k, v in os.environ.items() if k != PLUGINS_VAR} | {"MCP_CODETOOLS_SANDBOX": "0"} | env
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, mode, "--root", str(root)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=environ,
    )
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize("mode", ["early", "sdk"])
def test_the_start_up_builds_its_models_without_the_plugin_scan_and_leaves_no_variable(
    tmp_path: Path, mode: str
) -> None:
    assert _start_up(tmp_path, mode) == {"scanned": False, "variable": None, "hooks_see_it": False}


def test_a_plugin_variable_the_user_set_is_kept_as_set(tmp_path: Path) -> None:
    found = _start_up(tmp_path, "early", **{PLUGINS_VAR: "someplugin"})
    assert found == {"scanned": True, "variable": "someplugin", "hooks_see_it": True}


def test_the_variable_is_set_only_inside_and_only_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PLUGINS_VAR, raising=False)
    with plugin_scan_skipped():
        assert os.environ[PLUGINS_VAR] == "__all__"
    assert PLUGINS_VAR not in os.environ
    monkeypatch.setenv(PLUGINS_VAR, "")
    with plugin_scan_skipped():
        assert os.environ[PLUGINS_VAR] == ""
    assert os.environ[PLUGINS_VAR] == ""
