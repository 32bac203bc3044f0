"""
stdio as a new user meets it: stdout to a file, stdin from /dev/null or a terminal, requests piped in
with `cat`, a bad log level, and the folder the server is started from. Each over a real subprocess.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from pathlib import Path

import pytest

from tests.protocol.stdio_raw import server_command

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cat", "version": "0"}},
}


def requests_file(root: Path) -> bytes:
    (root / "a.txt").write_text("hello\n", encoding="utf-8")
    messages = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "Read", "arguments": {"file_path": "a.txt"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "Grep", "arguments": {"pattern": "hel"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "Bash", "arguments": {"command": "echo hi"}},
        },
    ]
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def answers(stdout: bytes) -> dict[int, dict[str, object]]:
    parsed = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return {message["id"]: message for message in parsed if "id" in message}


def check_all_answered(stdout: bytes) -> None:
    got = answers(stdout)
    assert sorted(got) == [1, 2, 3, 4, 5], stdout.decode()[:2000]
    assert all("result" in got[i] for i in (1, 2, 3, 4, 5)), got
    assert texts(got[3]) == "1\thello" and texts(got[5]).strip() == "hi"


def texts(answer: dict[str, object]) -> str:
    result = answer["result"]
    assert isinstance(result, dict)
    return "\n".join(block.get("text", "") for block in result["content"])


def run(root: Path, *extra: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*server_command(), *extra], cwd=kwargs.pop("cwd", root), timeout=60, check=False, **kwargs
    )


def test_requests_piped_in_are_all_answered_before_the_server_exits(root: Path) -> None:
    """Also a log level in lower case, accepted and honoured (a server start of its own costs ~1.5 CPU-s)."""
    done = run(root, "--root", str(root), "--log-level", "info", input=requests_file(root), capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    check_all_answered(done.stdout)
    assert b"Traceback" not in done.stderr
    assert b"waiting for an MCP client" not in done.stderr, "the hint is for terminals only"
    assert b" INFO " in done.stderr, done.stderr.decode()


def test_stdout_redirected_to_a_file_works(root: Path, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(requests_file(root))
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        done = run(root, "--root", str(root), stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"Errno" not in done.stderr, done.stderr.decode()
    check_all_answered(out.read_bytes())


def test_stdin_from_dev_null_exits_cleanly_with_stdout_a_pipe(root: Path) -> None:
    # --no-sandbox: a sandbox on by default says so in one line at start (tests/test_sandbox_default.py)
    done = run(root, "--root", str(root), "--no-sandbox", stdin=subprocess.DEVNULL, capture_output=True)
    assert done.returncode == 0
    assert done.stdout == b""
    assert done.stderr == b"", done.stderr.decode()


def test_a_terminal_on_stdin_gets_one_line_saying_what_the_server_waits_for(root: Path) -> None:
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*server_command(), "--root", str(root), "--no-sandbox"],  # no start line about a default sandbox
            cwd=root,
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        os.close(terminal)
        assert proc.stderr is not None
        # The hint comes before the server reads anything; bounded, so a server that never says it fails.
        readable, _, _ = select.select([proc.stderr], [], [], 30)
        line = proc.stderr.readline() if readable else b""
        if b"waiting for an MCP client on stdin" not in line:
            proc.kill()
            proc.wait()
        assert b"waiting for an MCP client on stdin" in line
        os.write(controller, b"\x04")  # Ctrl-D: end of input on a terminal
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(controller)
    assert proc.returncode == 0, err.decode()
    assert out == b"" and b"Traceback" not in err


@pytest.mark.parametrize("level", ["LOUD", "verbose"])
def test_an_unknown_log_level_is_refused(root: Path, level: str) -> None:
    done = run(root, "--root", str(root), "--log-level", level, stdin=subprocess.DEVNULL, capture_output=True)
    assert done.returncode == 2
    assert b"invalid choice" in done.stderr and b"DEBUG" in done.stderr


def test_an_unknown_log_level_from_the_environment_is_refused(root: Path) -> None:
    env = {**os.environ, "MCP_CODETOOLS_LOG_LEVEL": "LOUD"}
    done = run(root, "--root", str(root), stdin=subprocess.DEVNULL, capture_output=True, env=env)
    assert done.returncode == 2 and b"MCP_CODETOOLS_LOG_LEVEL" in done.stderr


def test_started_in_the_filesystem_root_without_root_it_refuses(root: Path) -> None:
    done = run(root, stdin=subprocess.DEVNULL, capture_output=True, cwd="/")
    assert done.returncode == 2
    assert b"whole disk" in done.stderr and b"--root" in done.stderr
    assert done.stdout == b""


def test_an_explicit_root_of_slash_is_honoured(root: Path) -> None:
    done = run(root, "--root", "/", input=json.dumps(INIT).encode() + b"\n", capture_output=True, cwd="/")
    assert done.returncode == 0, done.stderr.decode()
    assert 1 in answers(done.stdout)


def test_started_in_the_home_folder_without_root_it_warns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    done = run(home, input=json.dumps(INIT).encode() + b"\n", capture_output=True, env=env)
    assert done.returncode == 0, done.stderr.decode()
    assert b"whole home folder" in done.stderr and b"--root" in done.stderr
    assert 1 in answers(done.stdout)
