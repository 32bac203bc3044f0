"""Command line: `mcp-codetools` serves MCP; `doctor` checks the install; `config` shows or checks settings.

`serve` (the default) speaks MCP over stdio, or streamable HTTP with `--transport http`; `config` prints
the effective settings and where each came from, or checks a config file.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import os
import signal
import sys
import threading
import types
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mcp_codetools import __version__
from mcp_codetools.protocol import fast_start, generated_code

if TYPE_CHECKING:  # the settings (pydantic) and the SDK load in `main` (a start from the snapshot: meanwhile)
    from mcp_codetools.policy.gate import PermissionGate
    from mcp_codetools.protocol.server import CodeToolsServer
    from mcp_codetools.protocol.start_snapshot import Recorder
    from mcp_codetools.settings import LoadedSettings, Settings
    from mcp_codetools.shell.sandbox import Sandbox
    from mcp_codetools.shell.sandbox_default import StartLine

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
PLUGINS_VAR = "PYDANTIC_DISABLE_PLUGINS"
PLUGIN_LOADER = "pydantic.plugin._loader"
T = TypeVar("T")


@contextmanager
def plugin_scan_skipped() -> Iterator[None]:
    """pydantic's plugin lookup left out while the start-up builds its models, unless the user set its variable.

    At its first validator pydantic imports its plugin loader, which imports `importlib.metadata` (~20 ms of
    CPU, 7% of a start from the snapshot by its first result), then scans every installed distribution's entry
    points (~20 ms). Meanwhile a stand-in for the loader that finds no plugins (what the loader answers under
    `PYDANTIC_DISABLE_PLUGINS=__all__`) takes its place in `sys.modules`. The environment is left alone, so no
    command, hook or probe sees a variable the user did not set; a model built later (the SDK's, in the loading
    thread) imports the real loader, and gets the user's plugins.
    """
    if PLUGINS_VAR in os.environ:
        yield
        return
    before = sys.modules.get(PLUGIN_LOADER)
    stand_in = types.ModuleType(PLUGIN_LOADER, "No pydantic plugins while the start-up builds its models.")
    stand_in.get_plugins = _no_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = lambda name: _loader_attribute(before, name)  # type: ignore[method-assign]
    sys.modules[PLUGIN_LOADER] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(PLUGIN_LOADER) is stand_in:
            if before is None:
                del sys.modules[PLUGIN_LOADER]
            else:
                sys.modules[PLUGIN_LOADER] = before


def _no_plugins() -> tuple[()]:
    return ()


def _loader_attribute(before: types.ModuleType | None, name: str) -> Any:
    """Any other name asked of the stand-in, from the real loader (not the import system's dunder probes).

    A pydantic release whose loader changed must start as before, not fail on the stand-in.
    """
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(before or _real_loader(), name)


def _real_loader() -> types.ModuleType:
    stand_in = sys.modules.pop(PLUGIN_LOADER, None)
    try:
        return importlib.import_module(PLUGIN_LOADER)
    finally:
        if stand_in is not None:
            sys.modules[PLUGIN_LOADER] = stand_in


def _log_level(raw: str) -> str:
    return raw.strip().upper()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-codetools",
        description="Serve code tools (Read, Edit, Write, MultiEdit, NotebookEdit, FileHistory, Grep, Glob, LSP, "
        "Bash, BashOutput and KillShell) over MCP. Logs go to stderr.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-codetools {__version__}")
    parser.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help="a workspace root the tools may use (repeatable; default: the current directory, never /)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a TOML config file, read after the user's and the project's (see the README's configuration reference)",
    )
    parser.add_argument(
        "--permission-mode",
        choices=("default", "acceptEdits", "plan", "bypassPermissions"),
        help="permission mode (default: `default`, or permissions.default_mode in a config file)",
    )
    parser.add_argument(
        "--log-level",
        type=_log_level,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help=f"one of {', '.join(LOG_LEVELS)} (default WARNING, or MCP_CODETOOLS_LOG_LEVEL)",
    )
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default): the client starts the server and speaks on its stdin/stdout; "
        "http: streamable HTTP at http://HOST:PORT/mcp, for remote or shared use (MCP_CODETOOLS_HTTP_TOKEN)",
    )
    _add_setting_flags(parser)
    config = parser.add_argument_group("config command")
    config.add_argument("--check", type=Path, metavar="FILE", help="validate FILE and exit (non-zero on problems)")
    config.add_argument("--markdown", action="store_true", help="print the configuration reference as Markdown")
    parser.add_argument(
        "command",
        nargs="?",
        choices=("serve", "doctor", "config"),
        default="serve",
        help="serve (default): run the MCP server; doctor: check the install and the settings as serve would "
        "load them, then run Read -> Edit through a real client; config: print the effective settings and "
        "where each came from (with --check FILE: validate a file; --markdown: the settings reference)",
    )
    return parser


_FLAG_GROUPS = {"sandbox": "Bash sandbox"}
"""Settings tables whose flags `--help` shows under a heading of their own."""


def _flagged() -> dict[str, tuple[str, str]]:
    """Every setting that has a flag: its flag and the argparse destination."""
    from mcp_codetools.settings import PLACES

    return {name: (p.flag, p.flag.lstrip("-").replace("-", "_")) for name, p in PLACES.items() if p.flag}


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting whose `Place` names one, its kind, choices and help taken from the field."""
    from mcp_codetools.settings import PLACES, setting_default
    from mcp_codetools.settings.model import field_info
    from mcp_codetools.settings.printing import shown

    groups: dict[str, Any] = {}
    for name, (flag, dest) in _flagged().items():
        place = PLACES[name]
        target = parser
        if place.section in _FLAG_GROUPS:
            target = groups.setdefault(place.section, parser.add_argument_group(_FLAG_GROUPS[place.section]))
        info = field_info(name)
        default = setting_default(name)
        help_text = f"{(info.description or '').rstrip('.')} (default {shown(default)}; or {place.env})"
        help_text = help_text.replace("%", "%%")
        if info.annotation is bool:  # `--no-sandbox` too: the sandbox may be on by default
            target.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, default=None, help=help_text)
            continue
        choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is Literal else None
        numeric = info.annotation in (int, float)
        kind: dict[str, Any] = {"type": info.annotation} if numeric else {}
        metavar = None if choices else "N" if numeric else "VALUE"
        target.add_argument(flag, dest=dest, choices=choices, metavar=metavar, help=help_text, **kind)


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags, by setting name (None: not given)."""
    return {name: getattr(args, dest) for name, (_, dest) in _flagged().items()}


def _load(args: argparse.Namespace) -> LoadedSettings:
    from mcp_codetools.roots import loaded_settings_from

    return loaded_settings_from(args.root, config_file=args.config, flags=flag_values(args))


@dataclass(frozen=True)
class Startup:
    """What `serve` checks before it serves, and `doctor` checks the same way."""

    loaded: LoadedSettings
    gate: PermissionGate
    sandbox: Sandbox | None
    default_line: StartLine | None = None
    """Whether the sandbox went on by itself and why, when no setting named it (`serve` logs it once)."""


def start_up(args: argparse.Namespace, meanwhile: Callable[[], object] | None = None) -> Startup:
    """The roots, every setting from every source, the sandbox probe and the permission policy, as `serve` loads them.

    Where no setting of the user's names the sandbox, it goes on where a backend that is on by default works
    (`shell/sandbox_default.py`); `default_line` says what came of it. The probe runs a confined `true` and
    waits for it (~100 ms at load 3, most of it idle), so it runs in a thread while this one loads the policy
    and runs `meanwhile` (the imports for serving).

    Raises:
        SandboxUnavailable: the sandbox was asked for and cannot work here (exit status 1).
        ValueError: a root, a setting or a permission source is refused; the message to show (exit status 2).
    """
    from mcp_codetools.shell.sandbox import prepared
    from mcp_codetools.shell.sandbox_default import answers_for_bash, applied

    def probed() -> tuple[LoadedSettings, StartLine | None, Sandbox | None]:
        loaded, default_line = applied(settings_loaded)
        return loaded, default_line, prepared(loaded.settings.sandbox)

    def foreground() -> None:
        import mcp_codetools.policy.loading  # noqa: F401

        if meanwhile is not None:
            meanwhile()

    settings_loaded = _load(args)
    loaded, default_line, sandbox = _alongside(probed, foreground)
    settings = loaded.settings
    if sandbox is not None and default_line is None:  # on by default: `serve` says so in its line
        logging.getLogger(__name__).info("Bash sandbox: %s", sandbox.describe())
    if sandbox is not None:
        for note in sandbox.notes:
            logging.getLogger(__name__).warning("Bash sandbox: %s", note)
    from mcp_codetools.policy.loading import load_gate

    gate = load_gate(
        settings.roots, config_file=args.config, mode_flag=args.permission_mode, sandboxed_bash=answers_for_bash(loaded)
    )
    return Startup(loaded, gate, sandbox, default_line)


def _alongside(background: Callable[[], T], foreground: Callable[[], object]) -> T:
    """`background`'s result (or its exception), run in a thread of its own while this one runs `foreground`.

    The thread is joined on every way out, so nothing of it outlives the call.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(background())
        except BaseException as exc:  # raised again in the calling thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="mcp-codetools-probe", daemon=True)
    thread.start()
    try:
        foreground()
    finally:
        thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


def server_flags(args: argparse.Namespace) -> list[str]:
    """The flags that change how the server starts, for `doctor` to start its test server the same way."""
    from mcp_codetools.settings import PLACES

    flags = ["--config", os.path.abspath(args.config)] if args.config is not None else []  # it starts elsewhere
    for name, value in flag_values(args).items():
        flag = PLACES[name].flag
        if value is None or flag is None or PLACES[name].section != "sandbox":  # the rest do not change a call
            continue
        flags += [flag] if value is True else [f"--no-{flag[2:]}"] if value is False else [flag, str(value)]
    return flags


def main(argv: list[str] | None = None) -> int:
    """Run the command line (the server over stdio or HTTP, or `doctor`) and return the exit status.

    A stdio start whose inputs match a start snapshot (`protocol/fast_start.py`) answers the handshake
    from a thread of its own while the start-up below runs; the outcome is the same either way. A start
    with a snapshot plan takes the code `dataclasses` generates compiled from beside the snapshot
    (`protocol/generated_code.py`).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    gc.disable()  # until `start_up_done`
    plan = fast_start.plan_for(argv)
    early = fast_start.begin(plan, lambda: _prepare(argv, sdk=False))
    # After the snapshot's thread is answering: reading the kept code is not on the handshake's way.
    generated = generated_code.begin(plan.path, plan.key) if plan is not None else None
    try:
        return _main(argv, plan, early, generated)
    finally:
        if generated is not None:
            generated.remove()  # `finish` saved what it compiled once the start-up was done


def _main(
    argv: list[str],
    plan: fast_start.Plan | None,
    early: fast_start.EarlyStart | None,
    generated: generated_code.GeneratedCode | None,
) -> int:
    prepared = early.wait() if early is not None else _prepare(argv, records=plan is not None)
    if isinstance(prepared, int):
        gc.enable()
        return prepared
    args, startup = prepared
    settings = startup.loaded.settings
    from mcp_codetools.shell.hardening import protect_server

    protect_server(settings)  # after the sandbox probe, before any thread of the server starts
    if early is not None and args.transport == "stdio":
        return _serve_early(startup, early, generated)
    from mcp_codetools.protocol.server import CodeToolsServer

    try:
        app = CodeToolsServer(settings, gate=startup.gate)
    except ValueError as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return 2
    recorder = None
    if early is None and plan is not None and args.transport == "stdio" and settings.start_snapshot:
        from mcp_codetools.protocol.start_snapshot import Recorder

        recorder = Recorder(plan, lambda: CodeToolsServer(settings, gate=startup.gate).server)
    from mcp_codetools.shell import adoption

    start_up_done()
    if generated is not None:
        generated.finish()
    adoption.adopt()  # only where no process table can be read: orphans of commands come back to the server
    try:
        return _serve(app, args, settings, early, recorder)
    finally:
        adoption.sweep()


def start_up_done() -> None:
    """The cyclic garbage collector back on, with every object the start-up made set aside for good.

    `main` turns it off first: the start-up makes ~65,000 objects that live as long as the process (modules,
    classes, pydantic's validators) and ~700 that are garbage, and its collections, which only walked the
    former, took 5–7% of the time to the first result. Frozen, the long-lived ones are not walked again, so
    turning the collector back on costs no pause (the first collection would otherwise walk them all).
    """
    gc.freeze()
    gc.enable()


def _prepare(argv: list[str], sdk: bool = True, records: bool = False) -> int | tuple[argparse.Namespace, Startup]:
    """Everything before the server is built: the arguments, the logging, the settings and the sandbox probe.

    An int is the exit status of a command that is done (`doctor`, `config`, a refused start). `sdk`: import
    the server's modules; else (a start from the snapshot) only what answers calls before the SDK is there.
    `records`: this start may record a start snapshot (on stdio).
    """
    with plugin_scan_skipped():
        parser = _parser()  # imports the settings model, the first of pydantic's
    args = parser.parse_args(argv)
    level = args.log_level
    if level is None:
        level = _log_level(os.environ.get("MCP_CODETOOLS_LOG_LEVEL", "WARNING"))
        if level not in LOG_LEVELS:
            parser.error(f"MCP_CODETOOLS_LOG_LEVEL: invalid choice: {level!r} (choose from {', '.join(LOG_LEVELS)})")
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command != "serve":
        gc.enable()  # `main` turned it off for the start of the server
    if (args.check or args.markdown) and args.command != "config":
        parser.error("--check and --markdown go with the `config` command")
    if args.command == "doctor":
        from mcp_codetools.doctor import run_doctor

        return run_doctor(args.root, lambda: start_up(args).loaded, server_flags(args))
    if args.command == "config":
        return _config_command(args)
    if sys.platform == "win32":  # see `doctor.native_windows_notice`: refused rather than run unconfined
        from mcp_codetools.doctor import native_windows_notice

        print(native_windows_notice(), file=sys.stderr, flush=True)
        return 1
    from mcp_codetools.shell.sandbox import SandboxUnavailable

    try:
        eras_on_use = not (records and args.transport == "stdio")
        startup = start_up(args, meanwhile=lambda: _import_for_serving(sdk, eras_on_use))
    except SandboxUnavailable as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return 2
    if startup.default_line is not None:  # said once, here: `doctor` has a line of its own
        logging.getLogger(__name__).log(startup.default_line.level, "%s", startup.default_line.text)
    return args, startup


def _import_for_serving(sdk: bool, eras_on_use: bool = True) -> None:
    """The server's modules (`sdk`), else (a start from the snapshot) only what the first early call runs."""
    import anyio._backends._asyncio  # noqa: F401  # `anyio.run` imports it to serve: ~20 ms beside the probe's wait

    import mcp_codetools.shell.hardening  # noqa: F401  # `main` runs it next: its import (ctypes) overlaps the probe too

    with plugin_scan_skipped():
        if sdk:
            _load_sdk(eras_on_use)
        else:
            from mcp_codetools.protocol.early_calls import FIRST_TOOL
            from mcp_codetools.tools import tools_named

            tools_named([FIRST_TOOL])


def _load_sdk(eras_on_use: bool = True) -> None:
    """The server's modules, the SDK's client and `MCPServer` left out (`protocol/sdk_imports.py`).

    `eras_on_use`: the protocol eras' wire models built when first used. Not where this start may record a
    start snapshot: the recording validates answers in every protocol version after `tools/list`, and has a
    second at exit to finish (measured at load 10: 190–200 ms of CPU in it with the models built on use against
    120–130, 1.1–1.2 s of wall against 0.6–0.7; past the second no snapshot is written).
    """
    from mcp_codetools.protocol import sdk_imports

    sdk_imports.prepare(eras_on_use=eras_on_use)  # before the first `mcp` import
    import mcp_codetools.protocol.server
    import mcp_codetools.protocol.stdio  # noqa: F401


def _serve_early(
    startup: Startup, early: fast_start.EarlyStart, generated: generated_code.GeneratedCode | None = None
) -> int:
    """A start from the snapshot: Read, Glob and Grep answered while the SDK imports (`protocol/early_calls.py`)."""
    import anyio

    from mcp_codetools.files.paths import Workspace
    from mcp_codetools.pipeline import Pipeline
    from mcp_codetools.protocol.early_calls import EarlyPipelines, serve_early
    from mcp_codetools.protocol.wire import WireStream
    from mcp_codetools.session import CodeSession
    from mcp_codetools.shell import adoption
    from mcp_codetools.tools import default_tools

    settings = startup.loaded.settings
    try:
        Workspace(settings.roots)  # as the server refuses a bad root, before anything is served
    except ValueError as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return 2
    # The early calls run only Read, Glob and Grep, and only Read's module is imported before the first result
    # (the others at their first call); every tool's, with the SDK, in the loading thread. Each pipeline's gate
    # knows the rule families of the tools it runs, which is all a decision about a call of one of them reads.
    early_pipeline = EarlyPipelines(startup.gate)
    pipelines: list[Pipeline] = []

    def load() -> None:
        _load_sdk()
        pipelines.append(Pipeline(default_tools(), startup.gate))
        start_up_done()
        if generated is not None:
            generated.finish()  # the SDK's classes are in too: a first start with this key uses them

    async def hand_over(session: CodeSession, stream: WireStream) -> None:
        from mcp_codetools.protocol.server import CodeToolsServer
        from mcp_codetools.protocol.start_snapshot import HandoverCheck
        from mcp_codetools.protocol.stdio import serve_stream

        app = CodeToolsServer(settings, pipeline=pipelines[0], local=session)
        await serve_stream(app.server, stream, HandoverCheck(early))

    adoption.adopt()  # as `main` does
    try:
        return anyio.run(serve_early, early, early_pipeline, settings, load, hand_over)
    except KeyboardInterrupt:  # a second Ctrl-C while the session was closing
        return 128 + signal.SIGINT
    finally:
        adoption.sweep()


def _serve(
    app: CodeToolsServer,
    args: argparse.Namespace,
    settings: Settings,
    early: fast_start.EarlyStart | None = None,
    recorder: Recorder | None = None,
) -> int:
    if args.transport == "http":
        from mcp_codetools.protocol.http import serve_http

        return serve_http(app, settings.http_host, settings.http_port)
    import anyio

    from mcp_codetools.protocol.stdio import serve_stdio

    if early is None and sys.stdin.isatty():
        print(
            "mcp-codetools: waiting for an MCP client on stdin (an MCP client starts this server itself; "
            "see --help, or `mcp-codetools doctor` to check the install; Ctrl-D quits)",
            file=sys.stderr,
            flush=True,
        )
    try:
        return anyio.run(serve_stdio, app.server, early, recorder)
    except KeyboardInterrupt:  # a second Ctrl-C while the session was closing
        return 128 + signal.SIGINT


def _config_command(args: argparse.Namespace) -> int:
    from mcp_codetools.policy.loading import check_policy_file, load_policy_config
    from mcp_codetools.settings import check_file, describe, markdown_reference

    if args.markdown:
        print(markdown_reference(), end="")
        return 0
    if args.check is not None:
        # Claude Code's settings are JSON and hold only rules (and hooks); the rest is TOML.
        problems = [] if args.check.suffix == ".json" else check_file(args.check)
        problems += [p for p in check_policy_file(args.check) if p not in problems]
        for problem in problems:
            print(problem)
        if not problems:
            print(f"{args.check}: ok")
        return 1 if problems else 0
    from mcp_codetools.shell.sandbox_default import applied

    try:
        loaded, _ = applied(_load(args))  # the sandbox as `serve` would run it, on by default or not
        policy = load_policy_config(loaded.settings.roots, config_file=args.config, mode_flag=args.permission_mode)
    except ValueError as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return 2
    print("# The effective configuration; after each value, where it came from.")
    print("# Files read: " + (", ".join(str(path) for path in loaded.files) or "none"))
    for line in describe(loaded):
        print(line)
    print(f'permissions.default_mode = "{policy.mode}"  # {policy.mode_source}')
    counts = ", ".join(f"{len(getattr(policy, kind))} {kind}" for kind in ("allow", "deny", "ask"))
    print(f"# permission rules: {counts}")
    for note in policy.ignored:
        print(f"# ignored: {note}")
    for warning in policy.warnings:
        print(f"# warning: {warning}")
    return 0
