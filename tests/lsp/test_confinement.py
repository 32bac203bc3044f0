"""A language server runs none of the project's code, and sees what a Bash command sees.

The built-in Python server imports nothing from a root (a `jedi.py` there stays unread), never runs the
project's venv interpreter (its packages are read from its folder), and every server gets Bash's
environment, without the excluded variables, in a working folder outside the roots; doctor starts them so too.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_codetools import doctor
from mcp_codetools.files.paths import is_within
from mcp_codetools.lsp.servers import python_server
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import LoadedSettings, Settings
from tests import facilities
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).with_name("fake_server.py")
needs_jedi = pytest.mark.usefixtures("jedi_installed")


@pytest.fixture
def jedi_installed() -> None:
    """Skipped where jedi-language-server is missing; a failure where CI requires jedi (tests/facilities.py)."""
    if python_server() is None:
        facilities.missing("jedi", "jedi-language-server is not installed")


SHADOWS = ["jedi.py", "jedi_language_server.py", "pygls/__init__.py", "lsprotocol/__init__.py", "parso.py"]


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Path]:
    """A file outside the root that planted code writes when it runs."""
    path = tmp_path / "planted-code-ran"
    yield path
    path.unlink(missing_ok=True)


def _planted(marker: Path) -> str:
    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"


@needs_jedi
async def test_a_module_at_a_root_named_like_the_servers_own_is_never_imported(
    call: Caller, root: Path, tmp_path: Path
) -> None:
    """All the shadows planted at once, each writing a marker of its own: one language server start (~1.4 CPU-s)
    says which, if any, it imported."""
    markers = {name: tmp_path / f"ran-{name.replace('/', '-')}" for name in SHADOWS}
    for name, marker in markers.items():
        planted = root / name
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_text(_planted(marker), encoding="utf-8")
    module = root / "mod.py"
    module.write_text("def area(w, h):\n    return w * h\n\n\narea(1, 2)\n", encoding="utf-8")
    with anyio.fail_after(60):
        symbols = await call.ok("LSP", {"operation": "documentSymbol", "file_path": str(module)})
        refs = await call.ok(
            "LSP", {"operation": "findReferences", "file_path": str(module), "line": 5, "character": 1}
        )
    assert "Function area" in symbols
    assert "mod.py:5:1" in refs
    imported = [name for name, marker in markers.items() if marker.exists()]
    assert imported == [], f"the server imported modules from the root: {imported}"


def _fake_venv(root: Path, folder: str, marker: Path) -> Path:
    """A venv whose interpreter records that it ran, with one package in its site-packages."""
    venv = root / folder
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(
        f'#!/bin/sh\necho ran > {shlex.quote(str(marker))}\nexec {shlex.quote(sys.executable)} "$@"\n',
        encoding="utf-8",
    )
    python.chmod(0o755)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    (venv / "pyvenv.cfg").write_text(f"home = /usr/bin\nversion = {version}.0\n", encoding="utf-8")
    package = venv / "lib" / f"python{version}" / "site-packages" / "venvpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def from_venv(n):\n    return n\n", encoding="utf-8")
    return venv


@needs_jedi
@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands for the venv's interpreter")
@pytest.mark.parametrize("folder", [".venv", "venv"])
async def test_the_projects_venv_interpreter_never_runs_and_its_packages_are_still_found(
    pipeline: Pipeline, root: Path, marker: Path, folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = _fake_venv(root, folder, marker)
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))  # the server started from the project's activated venv
    use = root / "use.py"
    use.write_text("from venvpkg import from_venv\n\nfrom_venv(1)\n", encoding="utf-8")
    assert (spec := python_server()) is not None
    table = {"python": {"command": list(spec.command), "extensions": [".py"], "diagnostics": True}}
    session = CodeSession(Settings(roots=(root,), lsp_servers=table, lsp_first_call_s=60))  # type: ignore[arg-type]
    call = Caller(pipeline, session)
    at = {"file_path": str(use), "line": 3, "character": 1}
    try:
        with anyio.fail_after(90):
            definition = await call.ok("LSP", {"operation": "goToDefinition", **at})
            await call.ok("LSP", {"operation": "hover", **at})
            await call.ok("LSP", {"operation": "findReferences", **at})
            await call.ok("LSP", {"operation": "documentSymbol", "file_path": str(use)})
            await call.ok("LSP", {"operation": "workspaceSymbol", "file_path": str(use), "query": "from_venv"})
            await call.ok("Read", {"file_path": str(use)})
            edited = await call("Edit", {"file_path": str(use), "old_string": "from_venv(1)", "new_string": "x(1"})
    finally:
        await session.aclose()
    assert not edited.is_error, edited.text
    assert f"{folder}/lib/python" in definition and "venvpkg/__init__.py:1:5" in definition
    assert not marker.exists(), "the language server ran the project's venv interpreter"


def _fake_settings(root: Path, report: Path, **overrides: object) -> Settings:
    servers = {
        "fake": {"command": [sys.executable, str(FAKE), str(root / "none.py"), str(report)], "extensions": [".py"]}
    }
    return Settings(roots=(root,), lsp_servers=servers, **overrides)  # type: ignore[arg-type]


async def test_a_server_gets_bashs_environment_and_a_working_folder_outside_the_roots(
    pipeline: Pipeline, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("MCP_CODETOOLS_HTTP_TOKEN", "bearer")
    monkeypatch.setenv("LSP_TEST_VISIBLE", "1")
    report = tmp_path / "report.json"
    module = root / "mod.py"
    module.write_text("def f():\n    pass\n", encoding="utf-8")
    session = CodeSession(_fake_settings(root, report, bash_env_exclude=frozenset({"DB_PASSWORD"})))
    try:
        with anyio.fail_after(20):
            await Caller(pipeline, session).ok("LSP", {"operation": "documentSymbol", "file_path": str(module)})
            home = Path(json.loads(report.read_text(encoding="utf-8"))["cwd"])
            assert home.is_dir()
    finally:
        await session.aclose()
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert "DB_PASSWORD" not in facts["env"] and "MCP_CODETOOLS_HTTP_TOKEN" not in facts["env"]
    assert "LSP_TEST_VISIBLE" in facts["env"]
    assert not is_within(home, root) and not any(is_within(Path(p), root) for p in facts["sys_path"] if p)
    assert not home.exists(), "the servers' working folder outlived the session"


def test_doctor_starts_language_servers_as_a_session_does(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    report = tmp_path / "report.json"
    settings = _fake_settings(root, report, bash_env_exclude=frozenset({"DB_PASSWORD"}))
    doctor._language_servers(LoadedSettings(settings, {}, ()))
    printed = capsys.readouterr().out
    assert "fake for .py: started" in printed and "; answers every operation" in printed
    if python_server() is not None:  # jedi announces neither implementations nor call hierarchy
        assert "cannot answer goToImplementation, prepareCallHierarchy, incomingCalls, outgoingCalls" in printed
    facts = json.loads(report.read_text(encoding="utf-8"))
    assert "DB_PASSWORD" not in facts["env"]
    assert "mcp-codetools-doctor-lsp-" not in facts["cwd"]  # doctor's sample project is not the working folder


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands for the server's program")
async def test_a_server_program_that_a_root_holds_is_never_started(
    pipeline: Pipeline, root: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = root / ".venv" / "bin"  # an activated project venv puts its bin first on the PATH
    folder.mkdir(parents=True)
    program = folder / "project-lsp"
    program.write_text(f"#!/bin/sh\necho ran > {shlex.quote(str(marker))}\n", encoding="utf-8")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    module = root / "mod.py"
    module.write_text("X = 1\n", encoding="utf-8")
    servers = {"python": {"command": ["project-lsp"], "extensions": [".py"]}}
    session = CodeSession(Settings(roots=(root,), lsp_servers=servers))  # type: ignore[arg-type]
    try:
        with anyio.fail_after(20):
            out = await Caller(pipeline, session).fails(
                "LSP", {"operation": "documentSymbol", "file_path": str(module)}
            )
    finally:
        await session.aclose()
    assert f"program is {program}, inside a project folder" in out.text
    assert not marker.exists(), "a program from the project ran as a language server"


@needs_jedi
async def test_a_package_on_pythonpath_inside_a_root_is_parsed_never_imported(
    pipeline: Pipeline, root: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # jedi reaches an extension module by importing it in its helper process, and importing `pkg.ext`
    # runs pkg/__init__.py first: with the root's src on PYTHONPATH, that was the project's code.
    package = root / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(_planted(marker), encoding="utf-8")
    (package / f"ext{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}").write_bytes(b"")
    monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    use = root / "use.py"
    use.write_text("import pkg.ext\n\npkg.ext.thing\n", encoding="utf-8")
    session = CodeSession(Settings(roots=(root,), lsp_first_call_s=60))
    call = Caller(pipeline, session)
    try:
        with anyio.fail_after(60):
            for operation in ("hover", "goToDefinition"):
                for line, character in ((1, 12), (3, 5), (3, 9)):
                    await call(
                        "LSP", {"operation": operation, "file_path": str(use), "line": line, "character": character}
                    )
            definition = await call.ok(
                "LSP", {"operation": "goToDefinition", "file_path": str(use), "line": 3, "character": 1}
            )
    finally:
        await session.aclose()
    assert "src/pkg/__init__.py:1:1" in definition  # PYTHONPATH's folders are still read
    assert not marker.exists(), "jedi imported a package from the root"
