"""A lone builtin that changes nothing is run by the waiting bash itself, which goes on waiting (`shell.in_place`)."""

from __future__ import annotations

import os
import random
import select
import signal

import anyio
import anyio.lowlevel
import pytest

from mcp_codetools.session import CodeSession
from mcp_codetools.shell import in_place, output_or_exit, warm
from tests.conftest import Caller
from tests.tools.test_bash import no_stray_children
from tests.tools.test_bash_warm import prepared_at_once, waiting, waiting_pid

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not hasattr(os, "pidfd_open") or not hasattr(select, "epoll"), reason="pidfd and epoll: Linux"),
]

__all__ = ["no_stray_children", "prepared_at_once"]

BUILTINS = [
    "echo hi",
    "echo -n no-newline",
    "echo -e a",
    "printf %s-%d x 3",
    "printf %d x",  # bash's own error message, with its line number
    "printf %05d%%",
    "false",
    "true",
    ":",
    "pwd",
    "pwd -P",
]


async def in_a_bash_of_its_own(call: Caller, command: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, object]:
    """What `command` gives run as any other command (the waiting bash used up, as before)."""
    with monkeypatch.context() as patched:
        patched.setattr(in_place, "changes_nothing", lambda command: False)
        out = await call("Bash", {"command": command})
    return out.text, out.meta["exitCode"]


async def test_the_waiting_bash_runs_a_lone_builtin_and_goes_on_waiting(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    for _ in range(3):
        assert await call.ok("Bash", {"command": "echo hi"}) == "hi"
        assert session.warm_shell._shell is not None and session.warm_shell._shell.proc.pid == pid
    out = await call("Bash", {"command": "echo $$; exit 4"})  # then it runs a command as its last, as before
    assert (out.text, out.meta["exitCode"]) == (f"Exit code 4\n{pid}", 4)
    assert await waiting_pid(session) != pid


@pytest.mark.parametrize("command", BUILTINS)
async def test_a_builtin_run_in_place_prints_and_ends_as_in_a_bash_of_its_own(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    expected = await in_a_bash_of_its_own(call, command, monkeypatch)
    pid = await waiting_pid(session)
    out = await call("Bash", {"command": command})
    assert (out.text, out.meta["exitCode"]) == expected
    assert (await waiting(session)).proc.pid == pid, "it was not run in place"


def drawn_builtins(count: int, seed: int) -> list[str]:
    """Lone builtins with plain words (`forkless`), drawn at random; widths stay small (a word is at most 4 chars)."""
    rng = random.Random(seed)
    alphabet = "abcXYZ019_./,:@%+=-"
    commands = []
    for _ in range(count):
        name = rng.choice(["echo", "printf", "pwd", "true", "false", ":"])
        words = ["".join(rng.choices(alphabet, k=rng.randint(1, 4))) for _ in range(rng.randint(0, 4))]
        if name == "printf" and words and words[0].startswith("-"):
            words[0] = "%" + words[0]  # `printf -v` is run as the bash's last command (its own test)
        commands.append(" ".join([name, *words]))
    return commands


async def test_drawn_builtins_print_and_end_as_in_a_bash_of_their_own(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = drawn_builtins(40, seed=38)
    assert any(command.startswith("printf") for command in commands)
    expected = [await in_a_bash_of_its_own(call, command, monkeypatch) for command in commands]
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    for command, wanted in zip(commands, expected, strict=True):
        out = await call("Bash", {"command": command})
        assert (out.text, out.meta["exitCode"]) == wanted, command
    assert (await waiting(session)).proc.pid == pid, "they were not run in place"


async def test_builtins_called_side_by_side_each_get_their_own_answer(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "cd ."})
    await waiting(session)
    answers: dict[int, str] = {}

    async def one(index: int) -> None:
        answers[index] = await call.ok("Bash", {"command": f"echo call-{index}"})

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for index in range(6):  # read-only: run side by side, one in the waiting bash, the rest in their own
                tg.start_soon(one, index)
    assert answers == {index: f"call-{index}" for index in range(6)}
    await waiting(session)  # one bash waits for the next command; the fixture checks that nothing else is left


async def test_a_session_that_ends_during_a_builtin_keeps_no_bash(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "cd ."})
    shell = await waiting(session)
    await call.ok("Bash", {"command": "echo started"})
    os.kill(shell.proc.pid, signal.SIGSTOP)  # holds the builtin until the session has ended
    answers: list[str] = []

    async def builtin() -> None:
        answers.append(await call.ok("Bash", {"command": "echo hi"}))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(builtin)
            while session.warm_shell._shell is not None:  # until the call has taken the bash
                await anyio.lowlevel.checkpoint()
            session.warm_shell.close()
            os.kill(shell.proc.pid, signal.SIGCONT)
    assert answers == ["hi"]
    with pytest.raises(ProcessLookupError):  # not put back in a closed slot: stopped and reaped
        os.kill(shell.proc.pid, 0)
    assert session.warm_shell._shell is None


async def test_output_larger_than_the_pipe_is_read_whole(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    out = await call("Bash", {"command": "printf %0200000d 7"})  # 200 KB: the builtin waits on a full pipe
    assert not out.is_error
    assert out.meta["outputChars"] == 200_000
    assert (await waiting(session)).proc.pid == pid


async def test_printf_v_sets_a_variable_so_it_is_run_as_the_bashs_last_command(
    call: Caller, session: CodeSession
) -> None:
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    await call.ok("Bash", {"command": "printf -v leaked %s value"})
    assert await waiting_pid(session) != pid
    assert await call.ok("Bash", {"command": 'echo "[${leaked-}]"'}) == "[]"


async def test_a_read_only_builtin_leaves_no_git_variable_in_the_bash(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "cd ."})
    await waiting(session)
    await call.ok("Bash", {"command": "echo hi"})  # read-only: its environment has git's variables
    out = await call.ok("Bash", {"command": "touch made; echo ${GIT_OPTIONAL_LOCKS-unset}"})
    assert out == "unset"


async def test_a_bash_that_does_not_answer_is_stopped_at_the_timeout(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    await call.ok("Bash", {"command": "echo started"})  # run in place: the bash is known to have started
    os.kill(pid, signal.SIGSTOP)  # as a bash stuck in its builtin would be
    out = await call("Bash", {"command": "echo hi", "timeout": 300})
    assert out.is_error and out.meta["interrupted"] is True
    assert "timed out" in out.text
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped with its group, and reaped
    assert await call.ok("Bash", {"command": "echo hi"}) == "hi"


async def test_a_cancelled_call_stops_the_bash_it_was_in(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    await call.ok("Bash", {"command": "echo started"})
    os.kill(pid, signal.SIGSTOP)
    with anyio.move_on_after(0.2):  # cancelled while it waits for the builtin's status
        await call("Bash", {"command": "echo hi"})
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert session.warm_shell._shell is None or session.warm_shell._shell.proc.pid != pid


async def test_a_waiting_bash_killed_between_calls_is_replaced_and_the_builtin_runs(
    call: Caller, session: CodeSession
) -> None:
    await call.ok("Bash", {"command": "cd ."})
    shell = await waiting(session)
    os.kill(shell.proc.pid, signal.SIGKILL)
    shell.proc.wait(timeout=10)
    assert await call.ok("Bash", {"command": "echo hi"}) == "hi"


async def test_a_bash_that_printed_at_its_start_is_not_used_in_place(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LC_ALL", "xx_YY.unusable")  # bash warns at its start: a bash of its own would each time
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    out = await call.ok("Bash", {"command": "echo hi"})
    assert "cannot change locale" in out
    assert await waiting_pid(session) != pid


async def test_where_output_and_exit_cannot_be_watched_as_one_the_bash_is_used_once(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output_or_exit.OutputOrExit, "open", classmethod(lambda cls, out_fd, pidfd: None))
    await call.ok("Bash", {"command": "cd ."})
    pid = await waiting_pid(session)
    assert await call.ok("Bash", {"command": "echo hi"}) == "hi"
    assert await waiting_pid(session) != pid


def test_only_printf_v_changes_the_bash() -> None:
    assert in_place.changes_nothing("echo -v")
    assert in_place.changes_nothing("printf %s -v")
    assert not in_place.changes_nothing("printf -v name %s x")
    assert not in_place.changes_nothing("printf -- -v")


def test_the_ready_line_is_never_taken_for_a_cwd() -> None:
    assert not warm.READY.startswith("/")
