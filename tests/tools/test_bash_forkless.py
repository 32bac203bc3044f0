"""A command that starts no process skips the scan for marker carriers (`shell.forkless`); anything else keeps it."""

from __future__ import annotations

import os

import pytest

from mcp_codetools.shell import forkless, procs
from tests.conftest import Caller
from tests.tools.test_bash import no_stray_children

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(os.name == "nt", reason="bash commands: POSIX")]

__all__ = ["no_stray_children"]


@pytest.mark.parametrize("command", ["echo hi", "true", ":", "pwd", "printf %s-%d x 3", "echo a=b -n ./x,y@z"])
def test_a_builtin_with_plain_words_starts_no_process(command: str) -> None:
    assert forkless.starts_no_process(command, {"PATH": "/usr/bin", "HOME": "/root"})


@pytest.mark.parametrize(
    "command",
    [
        "echo $(id)",
        "echo `id`",
        "echo hi | cat",
        "echo hi &",
        "echo hi; sleep 1",
        "echo hi\nsleep 1",
        "echo hi > out",
        "echo <(id)",
        "echo {a,b}",
        'echo "hi"',
        "echo $HOME",
        "echo *",
        "sleep 1",
        "ls",
        "echoo hi",
        " echo hi",
        "(echo hi)",
    ],
)
def test_anything_that_may_fork_is_not_taken_for_forkless(command: str) -> None:
    assert not forkless.starts_no_process(command, {})


@pytest.mark.parametrize("name", ["BASH_FUNC_echo%%", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "ENV"])
def test_an_environment_that_can_run_code_keeps_the_scan(name: str) -> None:
    assert not forkless.starts_no_process("echo hi", {name: "x"})


async def test_a_forkless_command_does_not_read_the_process_table(
    call: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans: list[str] = []
    real = procs.scan

    def scan(name: str, value: str, since: procs.Since | None = None) -> tuple[list[int], list[int]] | None:
        scans.append(value)
        return real(name, value, since)

    monkeypatch.setattr(procs, "scan", scan)
    for _ in range(2):  # the first in a bash started for it, the next in the warm bash
        assert await call.ok("Bash", {"command": "echo hi"}) == "hi"
    assert scans == []
    await call.ok("Bash", {"command": "echo $(echo hi)"})
    assert scans, "a command that forks is scanned for as before"


async def test_an_exported_function_that_leaves_a_process_is_still_found(
    call: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `echo` is then this function, which leaves its group and session: the scan must run for `echo hi`.
    monkeypatch.setenv("BASH_FUNC_echo%%", '() { setsid sleep 30 >/dev/null 2>&1 & builtin echo "$@"; }')
    out = await call("Bash", {"command": "echo hi"})
    assert out.text.startswith("hi")
    assert "were stopped" in out.text
