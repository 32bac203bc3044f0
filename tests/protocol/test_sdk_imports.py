"""The SDK imported without the client, `MCPServer` and the eras' validators until used (`protocol/sdk_imports.py`).

The deferred packages are tried on a package made here, in this process; what a start does to the real SDK
runs in a fresh interpreter, since this one imported `mcp` the plain way.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcp_codetools import cli
from mcp_codetools.protocol import sdk_imports

PACKAGE = "deferred_pkg_for_test"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package whose `__init__` counts its runs (in `sys.runs`) and imports its submodule, as the SDK's does."""
    folder = tmp_path / PACKAGE
    folder.mkdir()
    (folder / "__init__.py").write_text(
        "import sys\n"
        "sys.runs = getattr(sys, 'runs', 0) + 1\n"
        "from .sub import VALUE\n"
        "ran = True\n"
        "probed = hasattr(sys.modules[__name__], 'not_there')\n"
        "__all__ = ['VALUE', 'ran']\n"
    )
    (folder / "sub.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "runs", 0, raising=False)
    yield folder
    for name in (PACKAGE, f"{PACKAGE}.sub"):
        sys.modules.pop(name, None)


def test_a_submodule_imports_before_the_package_init_runs(package: Path) -> None:
    assert sdk_imports.defer_package_init(PACKAGE)
    from deferred_pkg_for_test import sub  # type: ignore[import-not-found]

    assert sub.VALUE == 42
    assert sys.runs == 0  # type: ignore[attr-defined]


def test_the_first_attribute_runs_the_init_once_in_the_same_module(package: Path) -> None:
    assert sdk_imports.defer_package_init(PACKAGE)
    stand_in = sys.modules[PACKAGE]
    import deferred_pkg_for_test.sub  # noqa: F401  # type: ignore[import-not-found]
    from deferred_pkg_for_test import VALUE, ran  # type: ignore[import-not-found]

    assert (VALUE, ran) == (42, True)
    assert sys.modules[PACKAGE] is stand_in
    assert stand_in.probed is False  # its own probe while it ran was answered, not run again
    namespace: dict[str, object] = {}
    exec(f"from {PACKAGE} import *", namespace)  # `__all__` comes from the init too
    assert namespace["VALUE"] == 42
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = stand_in.missing
    assert sys.runs == 1  # type: ignore[attr-defined]


def test_threads_asking_at_once_all_get_the_attribute_and_the_init_runs_once(package: Path) -> None:
    assert sdk_imports.defer_package_init(PACKAGE)
    stand_in = sys.modules[PACKAGE]
    start = threading.Barrier(4, timeout=30)
    seen: list[object] = []

    def ask() -> None:
        start.wait()
        seen.append(stand_in.VALUE)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert seen == [42] * 4
    assert sys.runs == 1  # type: ignore[attr-defined]


def test_a_package_already_imported_or_without_its_parent_is_left_alone(package: Path) -> None:
    import deferred_pkg_for_test  # noqa: F401  # type: ignore[import-not-found]

    assert not sdk_imports.defer_package_init(PACKAGE)
    assert sys.runs == 1  # type: ignore[attr-defined]
    assert not sdk_imports.defer_package_init("no_such_parent_for_test.child")
    import mcp  # noqa: F401

    assert not sdk_imports.defer_package_init("mcp")


def test_an_sdk_or_pydantic_outside_the_checked_range_gets_the_plain_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdk_imports, "installed_sdk_release", lambda: (3, 0))
    monkeypatch.setattr(sdk_imports, "pydantic_supported", lambda: False)
    tried: list[str] = []
    monkeypatch.setattr(sdk_imports, "defer_package_init", lambda name: bool(tried.append(name)))
    monkeypatch.setattr(sdk_imports, "defer_era_models", lambda: bool(tried.append("eras")))
    assert sdk_imports.prepare() == []
    assert tried == []
    assert sdk_imports.installed_sdk_release is not None


def test_a_surprise_while_preparing_leaves_the_plain_import(monkeypatch: pytest.MonkeyPatch) -> None:
    def surprise(name: str) -> bool:
        raise ImportError(f"laid out otherwise: {name}")

    monkeypatch.setattr(sdk_imports, "defer_package_init", surprise)
    assert sdk_imports.prepare() == []


def test_eras_not_on_use_leaves_the_era_models_as_the_sdk_builds_them(monkeypatch: pytest.MonkeyPatch) -> None:
    tried: list[str] = []
    monkeypatch.setattr(sdk_imports, "defer_package_init", lambda name: bool(tried.append(name)))
    monkeypatch.setattr(sdk_imports, "defer_era_models", lambda: bool(tried.append("eras")))
    sdk_imports.prepare(eras_on_use=False)
    assert tried == list(sdk_imports.DEFERRED_PACKAGES)
    sdk_imports.prepare()
    assert tried[-1] == "eras"


@pytest.mark.parametrize(
    ("records", "transport", "on_use"), [(False, "stdio", True), (True, "stdio", False), (True, "http", True)]
)
def test_the_eras_are_built_at_import_only_where_the_start_may_record_a_snapshot(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, records: bool, transport: str, on_use: bool
) -> None:
    """The recording validates answers in every version within a bound at exit: models built on use slowed it."""
    seen: list[bool] = []
    monkeypatch.setattr(cli, "_import_for_serving", lambda sdk, eras_on_use=True: seen.append(eras_on_use))

    def start_up(args: object, meanwhile: Callable[[], object] | None = None) -> None:
        assert meanwhile is not None
        meanwhile()
        raise ValueError("stopped after the imports")

    monkeypatch.setattr(cli, "start_up", start_up)
    assert cli._prepare(["--root", str(tmp_path), "--transport", transport], records=records) == 2
    assert seen == [on_use]


def test_the_installed_sdk_is_in_the_checked_range() -> None:
    """The guard is not what keeps the deferral off here: the installed releases are the ones it was made for."""
    assert sdk_imports.sdk_supported()
    assert sdk_imports.pydantic_supported()


_STARTED = """
import hashlib, json, sys
from mcp_codetools import cli
cli._load_sdk()
import mcp_types._v2025_11_25 as v2025, mcp_types._v2026_07_28 as v2026
from mcp_types._wire_base import WireModel
models = [m for era in (v2025, v2026) for m in vars(era).values()
          if isinstance(m, type) and issubclass(m, WireModel) and m.__module__ == era.__name__]
found = {
    "client": "mcp.client" in sys.modules,
    "mcpserver": "mcp.server.mcpserver" in sys.modules,
    "built": sum(m.__pydantic_complete__ for m in models),
}
"""
_SCHEMAS = """
schemas = json.dumps([m.model_json_schema() for m in models], sort_keys=True)
found["schemas"] = hashlib.sha256(schemas.encode()).hexdigest()
found["models"] = len(models)
found["checked"] = v2025.CallToolRequest.model_validate(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "Read", "arguments": {"file_path": "a"}}}
).params.name
from mcp import Client, MCPError, __all__ as exported
import mcp, mcp.server
found["exports"] = all(hasattr(mcp, name) for name in exported) and hasattr(mcp.server, "MCPServer")
print(json.dumps(found))
"""


def test_a_start_imports_neither_the_client_nor_mcpserver_and_the_era_models_answer_the_same() -> None:
    """In a fresh interpreter: after the serving imports nothing of the client is loaded and no era model is
    built; then every era model's JSON schema is the one this process (plain import) gives, a model
    validates, and every name `mcp` and `mcp.server` export is there."""
    done = subprocess.run(
        [sys.executable, "-c", _STARTED + _SCHEMAS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    import mcp_types._v2025_11_25 as v2025
    import mcp_types._v2026_07_28 as v2026
    from mcp_types._wire_base import WireModel

    models = [
        m
        for era in (v2025, v2026)
        for m in vars(era).values()
        if isinstance(m, type) and issubclass(m, WireModel) and m.__module__ == era.__name__
    ]
    plain = json.dumps([m.model_json_schema() for m in models], sort_keys=True)
    assert found["models"] == len(models) > 100
    assert (found["client"], found["mcpserver"], found["built"]) == (False, False, 0)
    assert found["schemas"] == hashlib.sha256(plain.encode()).hexdigest()
    assert found["checked"] == "Read"
    assert found["exports"] is True
