"""The command line run through `cli.main` in this process, for tests of what `doctor` and `config` print.

A doctor process costs about 5 CPU-s: its language server probe (~2.2, jedi), the scenario's server (~2.5)
and its own start. Tests of the settings and sandbox lines need none of that, so here doctor runs in the test's
process with the language server probe left out, and the scenario only where the test is about it. The
process itself, the console script and the language server line are checked end to end in test_cli.py,
test_doctor_facilities.py and ecosystem/test_wheel.py. `config` here saves a process start (~0.4 CPU-s).
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcp_codetools import cli, doctor
from tests.protocol.stdio_raw import server_command


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The console script with `args`, its user config folder in `cwd`'s parent, stdin closed."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CODETOOLS_")}
    environ["XDG_CONFIG_HOME"] = str(cwd.parent / "xdg")
    environ.update(env or {})
    return subprocess.run(
        [*server_command(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@dataclass
class Ran:
    returncode: int
    stdout: str
    logged: list[str] = field(default_factory=list)
    """What reached the root logger meanwhile: where `serve`'s log lines go (stderr, in a process of its own)."""


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def _root_records() -> Iterator[list[str]]:
    handler = _Collect()
    logging.getLogger().addHandler(handler)
    try:
        yield handler.lines
    finally:
        logging.getLogger().removeHandler(handler)


def _no_language_servers(loaded: object) -> None:
    print("  lsp          (not started by this test)")


def _no_scenario(flags: Sequence[str]) -> bool:
    print(f"  (the scenario was not run by this test; flags {list(flags)})")
    return True


@contextlib.contextmanager
def _as_a_process(cwd: Path, env: dict[str, str] | None) -> Iterator[tuple[pytest.MonkeyPatch, io.StringIO, list[str]]]:
    """This process set up as `run` sets up a child: `cwd`, no MCP_CODETOOLS_* but `env`'s, the user config folder."""
    enabled = gc.isenabled()  # `main` turns the collector off and on again
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(io.StringIO()) as out,
        _root_records() as logged,
    ):
        patch.chdir(cwd)
        for name in [name for name in os.environ if name.startswith("MCP_CODETOOLS_")]:
            patch.delenv(name)
        patch.setenv("XDG_CONFIG_HOME", str(cwd.parent / "xdg"))
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        patch.setattr(logging, "basicConfig", lambda **_: None)  # the test process keeps its own logging
        try:
            yield patch, out, logged
        finally:
            if enabled:
                gc.enable()


def command_here(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Ran:
    """`mcp-codetools *args` in `cwd`, with the environment `run` gives a process (not for `serve`)."""
    with _as_a_process(cwd, env) as (_, out, logged):
        code = cli.main(args)
    return Ran(code, out.getvalue(), logged)


def doctor_here(args: list[str], cwd: Path, env: dict[str, str] | None = None, *, scenario: bool = False) -> Ran:
    """`mcp-codetools *args doctor` in `cwd`, with the environment `run` gives a process.

    `scenario`: run the seed scenario for real (it starts the server as a process); else it passes untried.
    """
    with _as_a_process(cwd, env) as (patch, out, logged):
        patch.setattr(doctor, "_language_servers", _no_language_servers)
        if not scenario:
            patch.setattr(doctor, "_run_scenario", _no_scenario)
        code = cli.main([*args, "doctor"])
    return Ran(code, out.getvalue(), logged)
