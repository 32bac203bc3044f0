"""Starting one `bash -c` in its own process group, with an environment that marks every process it starts.

- `bash -c` in a new session (so it has its own process group and no controlling terminal), stdin from
  /dev/null, stdout and stderr on one pipe so their order is kept. The command runs through `eval` in
  a fixed wrapper, so its syntax errors are its own and the wrapper always reports the final working
  directory (`pwd -P`) on a private pipe; a command that calls `exit` simply leaves the cwd unchanged.
- The environment is the server's own minus its secrets (every `MCP_CODETOOLS_*TOKEN*` variable and the
  names the `bash_env_exclude` setting lists), plus markers that keep tools from waiting for a terminal
  (`TERM=dumb`, `PAGER=cat`, `GIT_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`, `GIT_EDITOR=true`) and
  `MCP_CODETOOLS=1`. Read-only commands also get `shell.git_env`'s variables, so git writes no cache in them.
- Two more entries mark every process a command starts, so they can be found again in the process
  table (procs.py: /proc, or psutil) whatever group, session or parent they move to:
  `MCP_CODETOOLS_SESSION` (one per session) and `MCP_CODETOOLS_CALL` (one per foreground call or
  background job).

With the sandbox on (`shell.sandbox`), the process started is bwrap or the Landlock launcher, with bash
inside it: the group, the markers (on the sandbox's environment allow-list) and the cwd pipe (an
inherited fd) all carry through, and /proc shows bwrap's PID-namespace processes under their host pids,
so the scans of reaping.py find them as they find any other.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcp_codetools.shell import container, procs
from mcp_codetools.shell.git_env import read_only_git
from mcp_codetools.shell.sandbox import Confinement

BASH = shutil.which("bash") or "/bin/bash"

ENV_OVERRIDES = {
    "MCP_CODETOOLS": "1",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
}

SESSION_VAR = "MCP_CODETOOLS_SESSION"
CALL_VAR = "MCP_CODETOOLS_CALL"
_OWN_PREFIX = "MCP_CODETOOLS_"
_SECRET_WORD = "TOKEN"

_WRAPPER = '__mcp_c=$1; shift; eval "$__mcp_c"\n__mcp_rc=$?\nbuiltin pwd -P >&{fd} 2>/dev/null\nexit $__mcp_rc\n'


@dataclass(frozen=True, slots=True)
class Marker:
    """An environment entry that every process of a call (or session) inherits, to find them in the process table."""

    name: str
    value: str
    since: procs.Since | None = None
    """When every carrier was forked after a known process (a call's bash), only newer pids are read."""

    @property
    def entry(self) -> str:
        """`NAME=value`, as the marker appears in a process's environment."""
        return f"{self.name}={self.value}"

    @classmethod
    def new(cls, name: str) -> Marker:
        """A marker named `name` with a fresh random value, so no unrelated process carries it."""
        return cls(name, secrets.token_hex(16))

    def started(self, first_pid: int, forks_before: int | None) -> Marker:
        """This marker, knowing that its first carrier is `first_pid` (`forks_before`: `procs.fork_count()`)."""
        return dataclasses.replace(self, since=procs.Since(first_pid, forks_before))


def command_env(
    *, read_only: bool, session_marker: Marker | None = None, exclude: Collection[str] = ()
) -> dict[str, str]:
    """The environment a command runs with: the server's own without its secrets, plus the markers."""
    env = _server_env(frozenset(exclude))
    # Markers the server inherited (it runs inside another server's call) are not this session's.
    env.pop(SESSION_VAR, None)
    env.pop(CALL_VAR, None)
    env.update(ENV_OVERRIDES)
    if session_marker is not None:
        env[session_marker.name] = session_marker.value
    return with_read_only(env) if read_only else env


def with_read_only(env: Mapping[str, str]) -> dict[str, str]:
    """`env` (a `command_env` that is not read-only) as a read-only command gets it: with `git_env`'s variables."""
    return {**env, **read_only_git(env)}


_filtered: tuple[dict[bytes, bytes], frozenset[str], dict[str, str]] | None = None
"""The last `_server_env`: the raw environment it was built from, the names excluded, the result."""


def _server_env(exclude: frozenset[str]) -> dict[str, str]:
    """A copy of the server's environment without its secrets, rebuilt only when the environment has changed.

    Decoding and filtering every entry took ~0.1 ms a command; comparing the raw (encoded) entries with
    the last ones is a few µs. Where the raw entries cannot be seen, it is built every time.
    """
    global _filtered
    raw = getattr(os.environ, "_data", None)
    last = _filtered
    if isinstance(raw, dict) and last is not None and last[1] == exclude and last[0] == raw:
        return dict(last[2])
    env = {name: value for name, value in os.environ.items() if not is_secret(name, exclude)}
    if isinstance(raw, dict):
        _filtered = (dict(raw), exclude, env)
    return dict(env)


def is_secret(name: str, exclude: Collection[str] = ()) -> bool:
    """The server's own secrets (`MCP_CODETOOLS_*TOKEN*`, e.g. the HTTP bearer token) and excluded names."""
    upper = name.upper()
    return name in exclude or (upper.startswith(_OWN_PREFIX) and _SECRET_WORD in upper)


def with_marker(env: Mapping[str, str], marker: Marker) -> dict[str, str]:
    """`env` plus the marker's entry."""
    return {**env, marker.name: marker.value}


def spawn(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    output_fd: int,
    cwd_fd: int | None = None,
    confinement: Confinement | None = None,
) -> subprocess.Popen[bytes]:
    """Start `command`; its group id is its pid. With `cwd_fd`, bash reports its final cwd there.

    With a `confinement`, bash runs inside the sandbox (bwrap or the Landlock launcher is the process
    started, and bash its descendant: the group, the markers and the cwd pipe all carry through).

    Raises:
        OSError: the cwd is gone, the command is too long for an argument, bash is missing.
        RuntimeError: a sandboxed spawn outside the event loop's thread (see `require_loop_thread`).
    """
    if confinement is not None and confinement.container is not None:
        # No descriptor crosses `docker exec`: the container's wrapper opens CALL_FD on a file for the cwd.
        wrapper = _WRAPPER.format(fd=container.CALL_FD)
        argv = [BASH, "-c", command] if cwd_fd is None else [BASH, "-c", wrapper, "bash", command]
        argv, env = confinement.wrap(argv, cwd=cwd, env=env)
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=output_fd, stderr=output_fd, env=env, start_new_session=True
        )
    argv = [BASH, "-c", command] if cwd_fd is None else [BASH, "-c", _WRAPPER.format(fd=cwd_fd), "bash", command]
    if confinement is not None:
        require_loop_thread()
        argv, env = confinement.wrap(argv, cwd=cwd, env=env)
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=output_fd,
        stderr=output_fd,
        pass_fds=() if cwd_fd is None else (cwd_fd,),
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


def require_loop_thread() -> None:
    """Refuse to start a sandboxed command from a thread that may end before it.

    bwrap's `--die-with-parent` is a parent-death signal, and Linux sends it when the *thread* that forked
    the process exits, not the process: a command spawned from a worker thread (which anyio retires when
    idle) would be killed mid-run. The event loop's thread lives as long as the server.
    """
    try:
        anyio.get_current_task()
    except Exception:
        raise RuntimeError(
            "a sandboxed command must be started from the event loop's thread: bwrap's --die-with-parent "
            "would kill it when a shorter-lived thread exits"
        ) from None
