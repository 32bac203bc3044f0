"""Work the start-up leaves out (issue 38): pydantic's plugin lookup, and garbage collections that free nothing.

The lookup scans every installed distribution's entry points at the first model pydantic builds; the
start-up sets `PYDANTIC_DISABLE_PLUGINS` only while it builds its own models, and only when the user
has not set it, so no command, hook or language server sees a variable the user did not set. The cyclic
collector is off until the start-up is done, then on again with the start-up's objects frozen.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


_GC_PROBE = """
import gc, json, sys
from mcp_codetools import cli
from mcp_codetools.protocol import fast_start
import mcp_codetools.protocol.early_calls as early_calls

seen = {}
load_sdk = cli._load_sdk
def watched_load_sdk():
    seen["during"] = gc.isenabled()
    load_sdk()
cli._load_sdk = watched_load_sdk

def report(*args, **kwargs):
    seen.update(after=gc.isenabled(), frozen=gc.get_freeze_count() > 0)
    print(json.dumps(seen))
    return 0
cli._serve = report

class FromSnapshot:  # as `EarlyStart` for `main`: runs the start-up
    def __init__(self, prepare):
        self.prepare = prepare
    def wait(self):
        return self.prepare()

async def serve_early(early, pipeline, settings, load, hand_over):
    seen["early"] = gc.isenabled()
    load()  # in a worker thread in a real start
    return report()

if sys.argv[1] == "snapshot":
    fast_start.begin = lambda plan, prepare: FromSnapshot(prepare)
    early_calls.serve_early = serve_early
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        ("normal", {"during": False, "after": True, "frozen": True}),
        ("snapshot", {"early": False, "during": False, "after": True, "frozen": True}),
    ],
)
def test_the_collector_is_off_until_the_start_up_is_done_then_on_with_its_objects_frozen(
    tmp_path: Path, start: str, expected: dict[str, bool]
) -> None:
    environ = os.environ | {"MCP_CODETOOLS_SANDBOX": "0", "MCP_CODETOOLS_START_SNAPSHOT": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _GC_PROBE, start, "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=environ,
        stdin=subprocess.DEVNULL,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == expected


def test_a_command_other_than_serve_runs_with_the_collector_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools import cli

    during: list[bool] = []
    config_command = cli._config_command

    def watched(args: Any) -> int:
        during.append(gc.isenabled())
        return config_command(args)

    monkeypatch.setattr(cli, "_config_command", watched)
    try:
        assert cli.main(["config", "--root", str(tmp_path)]) == 0
        assert during == [True] and gc.isenabled()
    finally:
        gc.enable()


def test_the_start_up_from_the_snapshot_leaves_out_what_only_a_misnamed_rule_needs(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from mcp_codetools import cli\n"
        "prepared = cli._prepare(sys.argv[1:], sdk=False)\n"
        "assert not isinstance(prepared, int), prepared\n"
        "import mcp_codetools.session, mcp_codetools.pipeline\n"
        "print('difflib' in sys.modules)\n"
    )
    environ = os.environ | {"MCP_CODETOOLS_SANDBOX": "0"}
    done = subprocess.run(
        [sys.executable, "-c", probe, "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=environ,
    )
    assert done.stdout.splitlines()[-1] == "False"


def test_the_settings_models_annotations_need_no_evaluation_when_they_are_built() -> None:
    from mcp_codetools.settings import LanguageServerEntry, SandboxSettings, Settings

    for model in (Settings, SandboxSettings, LanguageServerEntry):
        assert not [name for name, kind in model.__annotations__.items() if isinstance(kind, str)], model
