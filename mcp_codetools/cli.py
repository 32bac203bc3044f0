"""Command line: `mcp-codetools` serves MCP over stdio (or HTTP); `doctor` checks the install; `config` shows
the effective settings and where each came from, or checks a config file."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from mcp_codetools import __version__
from mcp_codetools.config import LoadedSettings, load_settings


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
        help="a workspace root the tools may use (repeatable; default: the current directory)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="a TOML config file, read after the user's and the project's (see the README's configuration reference)",
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
    parser.add_argument("--log-level", default=os.environ.get("MCP_CODETOOLS_LOG_LEVEL", "WARNING"))
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", help="HTTP: address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP: port (default 8765)")
    parser.add_argument(
        "--check", type=Path, metavar="FILE", help="with `config`: validate FILE and exit (non-zero on problems)"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="with `config`: print the configuration reference as Markdown"
    )
    parser.add_argument("command", nargs="?", choices=("serve", "doctor", "config"), default="serve")
    return parser


def _load(args: argparse.Namespace) -> LoadedSettings:
    flags = {"max_concurrency": args.max_concurrency, "http_host": args.host, "http_port": args.port}
    return load_settings(args.root, config_file=args.config, flags=flags)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if (args.check or args.markdown) and args.command != "config":
        parser.error("--check and --markdown go with the `config` command")
    if args.command == "doctor":
        from mcp_codetools.doctor import run_doctor

        return run_doctor(args.root)
    if args.command == "config":
        return _config_command(args)
    try:
        loaded = _load(args)
        from mcp_codetools.policy.config import load_gate
        from mcp_codetools.server import CodeToolsServer

        settings = loaded.settings
        gate = load_gate(settings.roots, config_file=args.config, mode_flag=args.permission_mode)
        app = CodeToolsServer(settings, gate=gate)
    except ValueError as exc:
        print(f"mcp-codetools: {exc}", file=sys.stderr)
        return 2
    import anyio

    if args.transport == "http":
        from mcp_codetools.http_server import serve_http

        serve_http(app, settings.http_host, settings.http_port)
        return 0
    from mcp_codetools.transport import serve_stdio

    try:
        anyio.run(serve_stdio, app.server)
    except KeyboardInterrupt:
        pass
    return 0


def _config_command(args: argparse.Namespace) -> int:
    from mcp_codetools.config import check_file, describe, markdown_reference
    from mcp_codetools.policy.config import check_policy_file, load_policy_config

    if args.markdown:
        print(markdown_reference(), end="")
        return 0
    if args.check is not None:
        problems = check_file(args.check)
        problems += [p for p in check_policy_file(args.check) if p not in problems]
        for problem in problems:
            print(problem)
        if not problems:
            print(f"{args.check}: ok")
        return 1 if problems else 0
    try:
        loaded = _load(args)
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
    return 0
