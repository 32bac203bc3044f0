"""Command line: `mcp-codetools` serves MCP over stdio (or HTTP); `mcp-codetools doctor` checks the install."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys

from mcp_codetools import __version__
from mcp_codetools.config import Settings
from mcp_codetools.roots import settings_from

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _log_level(raw: str) -> str:
    return raw.strip().upper()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-codetools",
        description="Serve code tools (Read, Grep, Glob, Edit, Write, Bash) over MCP. Logs go to stderr.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-codetools {__version__}")
    parser.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help="a workspace root the tools may use (repeatable; default: the current directory, never /)",
    )
    parser.add_argument(
        "--max-concurrency",
        type=int,
        metavar="N",
        help="read-only calls that may run at once (default 10, or MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY)",
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
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP: port (default 8765; 0 picks a free one)")
    sandbox = parser.add_argument_group("Bash sandbox")
    sandbox.add_argument("--sandbox", action="store_true", help="run Bash in an OS sandbox (MCP_CODETOOLS_SANDBOX=1)")
    sandbox.add_argument("--sandbox-network", action="store_true", help="let sandboxed commands use the network")
    sandbox.add_argument("--sandbox-backend", choices=("auto", "bwrap", "landlock"), help="default: auto")
    parser.add_argument("command", nargs="?", choices=("serve", "doctor"), default="serve")
    return parser


def _with_sandbox_flags(settings: Settings, args: argparse.Namespace) -> Settings:
    sandbox = settings.sandbox
    if args.sandbox:
        sandbox = dataclasses.replace(sandbox, enabled=True)
    if args.sandbox_network:
        sandbox = dataclasses.replace(sandbox, network=True)
    if args.sandbox_backend:
        sandbox = dataclasses.replace(sandbox, backend=args.sandbox_backend)
    return dataclasses.replace(settings, sandbox=sandbox)


def _sandbox_works(settings: Settings) -> bool:
    """Probe the sandbox once, at start-up; when it was asked for and cannot work, say why and refuse."""
    from mcp_codetools.shell.sandbox import SandboxUnavailable, prepared

    try:
        sandbox = prepared(settings.sandbox)
    except SandboxUnavailable as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return False
    if sandbox is not None:
        logging.getLogger(__name__).info("Bash sandbox: %s", sandbox.describe())
        for note in sandbox.notes:
            logging.getLogger(__name__).warning("Bash sandbox: %s", note)
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the command line (the server over stdio or HTTP, or `doctor`) and return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    level = args.log_level
    if level is None:
        level = _log_level(os.environ.get("MCP_CODETOOLS_LOG_LEVEL", "WARNING"))
        if level not in LOG_LEVELS:
            parser.error(f"MCP_CODETOOLS_LOG_LEVEL: invalid choice: {level!r} (choose from {', '.join(LOG_LEVELS)})")
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "doctor":
        from mcp_codetools.doctor import run_doctor

        return run_doctor(args.root)
    try:
        settings = settings_from(args.root)
        if args.max_concurrency is not None:
            settings = dataclasses.replace(settings, max_concurrency=max(1, args.max_concurrency))
        settings = _with_sandbox_flags(settings, args)
        if not _sandbox_works(settings):
            return 1
        from mcp_codetools.policy.config import load_gate
        from mcp_codetools.server import CodeToolsServer

        gate = load_gate(settings.roots, mode_flag=args.permission_mode, sandboxed_bash=settings.sandbox.enabled)
        app = CodeToolsServer(settings, gate=gate)
    except ValueError as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return 2
    if args.transport == "http":
        from mcp_codetools.http_server import serve_http

        return serve_http(app, args.host, args.port)
    import anyio

    from mcp_codetools.transport import serve_stdio

    if sys.stdin.isatty():
        print(
            "mcp-codetools: waiting for an MCP client on stdin (an MCP client starts this server itself; "
            "see --help, or `mcp-codetools doctor` to check the install; Ctrl-D quits)",
            file=sys.stderr,
            flush=True,
        )
    try:
        anyio.run(serve_stdio, app.server)
    except KeyboardInterrupt:
        pass
    return 0
