"""Work the start-up leaves out (issue 38): pydantic's plugin lookup, garbage collections that free nothing, and
the wait for the sandbox probe.

The lookup imports `importlib.metadata` and scans every installed distribution's entry points at the first
model pydantic builds; while the start-up builds its own models a stand-in for pydantic's plugin loader
finds none, unless the user set `PYDANTIC_DISABLE_PLUGINS`, and the environment is left alone, so no
command, hook or language server sees a variable the user did not set. The cyclic collector is off until
the start-up is done, then on again with the start-up's objects frozen. The sandbox probe waits for a
confined `true` in a thread while the start-up imports what it serves with.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools import cli
from mcp_codetools.cli import PLUGIN_LOADER, PLUGINS_VAR, plugin_scan_skipped
from mcp_codetools.shell import sandbox_default

_PROBE = """
import json, os, sys
from mcp_codetools import cli
prepared = cli._prepare(sys.argv[2:], sdk=sys.argv[1] == "sdk")
assert not isinstance(prepared, int), prepared
metadata = "importlib.metadata" in sys.modules
import pydantic.plugin._loader as loader
print(json.dumps({
    "metadata": metadata,
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
    found = _start_up(tmp_path, mode)
    if mode == "sdk":  # the SDK imports it for itself
        found.pop("metadata")
    assert found == {"scanned": False, "variable": None, "hooks_see_it": False} | (
        {"metadata": False} if mode == "early" else {}
    )


def test_a_plugin_variable_the_user_set_is_kept_as_set(tmp_path: Path) -> None:
    found = _start_up(tmp_path, "early", **{PLUGINS_VAR: "someplugin"})
    assert found == {"metadata": True, "scanned": True, "variable": "someplugin", "hooks_see_it": True}


def test_the_stand_in_finds_no_plugins_only_inside_and_leaves_the_environment_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pydantic.plugin._loader as real

    monkeypatch.delenv(PLUGINS_VAR, raising=False)
    with plugin_scan_skipped():
        from pydantic.plugin._loader import get_plugins

        assert sys.modules[PLUGIN_LOADER] is not real and tuple(get_plugins()) == ()
        assert PLUGINS_VAR not in os.environ
    assert sys.modules[PLUGIN_LOADER] is real
    monkeypatch.setenv(PLUGINS_VAR, "")
    with plugin_scan_skipped():
        assert sys.modules[PLUGIN_LOADER] is real and os.environ[PLUGINS_VAR] == ""
    assert os.environ[PLUGINS_VAR] == ""


def test_a_name_the_stand_in_lacks_comes_from_the_real_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pydantic whose loader gained or renamed a function still starts: the stand-in hands it the real one."""
    import pydantic.plugin._loader as real

    monkeypatch.delenv(PLUGINS_VAR, raising=False)
    monkeypatch.setattr(real, "a_later_release_helper", lambda: "real", raising=False)
    with plugin_scan_skipped():
        from pydantic.plugin._loader import a_later_release_helper  # type: ignore[attr-defined]

        assert a_later_release_helper() == "real" and sys.modules[PLUGIN_LOADER] is not real
    assert sys.modules[PLUGIN_LOADER] is real


def test_a_loader_not_imported_before_is_imported_for_real_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PLUGINS_VAR, raising=False)
    monkeypatch.delitem(sys.modules, PLUGIN_LOADER, raising=False)
    with plugin_scan_skipped():
        assert PLUGIN_LOADER in sys.modules
    assert PLUGIN_LOADER not in sys.modules


WAIT_S = 30.0
"""Bound on each wait for the other thread; the two meet in milliseconds."""


def test_the_sandbox_probe_runs_while_the_start_up_imports_what_it_serves_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probing, imported = threading.Event(), threading.Event()
    applied = sandbox_default.applied

    def probe_waiting_for_the_imports(loaded: Any) -> Any:
        probing.set()
        assert imported.wait(WAIT_S), "the imports did not run while the probe waited"
        return applied(loaded)

    def imports(sdk: bool, eras_on_use: bool = True) -> None:
        assert probing.wait(WAIT_S), "the probe did not run while the start-up imported"
        imported.set()

    monkeypatch.setattr(sandbox_default, "applied", probe_waiting_for_the_imports)
    monkeypatch.setattr(cli, "_import_for_serving", imports)
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX", "0")
    prepared = cli._prepare(["--root", str(tmp_path)], sdk=False)
    assert not isinstance(prepared, int) and probing.is_set() and imported.is_set()
    assert prepared[1].sandbox is None


def test_a_failed_probe_ends_the_start_up_after_the_imports_and_leaves_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcp_codetools.shell.sandbox import SandboxUnavailable

    def refused(loaded: Any) -> Any:
        raise SandboxUnavailable("no sandbox backend can run here: test")

    monkeypatch.setattr(sandbox_default, "applied", refused)
    assert cli._prepare(["--root", str(tmp_path)], sdk=False) == 1
    assert "no sandbox backend can run here: test" in capsys.readouterr().err
    assert not [t for t in threading.enumerate() if t.name == "mcp-codetools-probe"]


def test_imports_that_fail_still_wait_for_the_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    finished = threading.Event()
    applied = sandbox_default.applied

    def probe(loaded: Any) -> Any:
        found = applied(loaded)
        finished.set()
        return found

    def broken(sdk: bool, eras_on_use: bool = True) -> None:
        raise ImportError("a module is missing")

    monkeypatch.setattr(sandbox_default, "applied", probe)
    monkeypatch.setattr(cli, "_import_for_serving", broken)
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX", "0")
    with pytest.raises(ImportError, match="a module is missing"):
        cli._prepare(["--root", str(tmp_path)], sdk=False)
    assert finished.is_set()


_GC_PROBE = """
import gc, json, sys
from mcp_codetools import cli
from mcp_codetools.protocol import fast_start
import mcp_codetools.protocol.early_calls as early_calls

seen = {}
load_sdk = cli._load_sdk
def watched_load_sdk(*args):
    seen["during"] = gc.isenabled()
    load_sdk(*args)
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


def _after_a_prepared_start(tmp_path: Path, question: str) -> str:
    """What `question` (a line of Python that prints) prints after the start-up from the snapshot's preparation."""
    probe = (
        "import sys\n"
        "from mcp_codetools import cli\n"
        "prepared = cli._prepare(sys.argv[1:], sdk=False)\n"
        "assert not isinstance(prepared, int), prepared\n"
        f"{question}\n"
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
    return done.stdout.splitlines()[-1]


def test_the_start_up_from_the_snapshot_leaves_out_what_only_a_misnamed_rule_needs(tmp_path: Path) -> None:
    question = "import mcp_codetools.session, mcp_codetools.pipeline; print('difflib' in sys.modules)"
    assert _after_a_prepared_start(tmp_path, question) == "False"


def test_the_start_up_from_the_snapshot_imports_the_event_loop_beside_the_probe(tmp_path: Path) -> None:
    question = "print('anyio._backends._asyncio' in sys.modules)"
    assert _after_a_prepared_start(tmp_path, question) == "True", "anyio's asyncio backend waits for anyio.run"


def test_the_settings_models_annotations_need_no_evaluation_when_they_are_built() -> None:
    from mcp_codetools.settings import LanguageServerEntry, SandboxSettings, Settings

    for model in (Settings, SandboxSettings, LanguageServerEntry):
        assert not [name for name, kind in model.__annotations__.items() if isinstance(kind, str)], model
