"""The bash started ahead of the next command (`shell.warm`): used when it fits, stopped when it does not."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections import defaultdict
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from mcp_codetools.session import CodeSession
from mcp_codetools.shell import warm
from tests.conftest import Caller
from tests.tools.test_bash import no_stray_children

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(os.name == "nt", reason="bash commands: POSIX")]

__all__ = ["no_stray_children"]


@pytest.fixture(autouse=True)
def prepared_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next bash starts when the call ends rather than just after its answer, so tests need not wait."""
    monkeypatch.setattr(warm.WarmSlot, "prepare_soon", warm.WarmSlot._prepare)
    if not warm._bash_reads_counted_bytes():
        pytest.skip("this bash has no `read -N` (before 4.1): commands start their own bash")


async def waiting(session: CodeSession) -> warm.WarmShell:
    """The bash waiting for the next command, once the thread that starts it has handed it over."""
    with anyio.fail_after(10):
        await session.warm_shell.settled()
    shell = session.warm_shell._shell
    assert shell is not None, "no bash is waiting for the next command"
    return shell


async def waiting_pid(session: CodeSession) -> int:
    return (await waiting(session)).proc.pid


def _held_gate(tmp_path: Path) -> tuple[Path, int]:
    """A FIFO a command can wait on with `read -r line < gate`, and our end of it (write a line to let it go)."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    return gate, os.open(gate, os.O_RDWR | os.O_NONBLOCK)  # the command's read waits for a line, never for a writer


async def test_the_next_command_runs_in_the_bash_started_for_it(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "true"})
    pid = await waiting_pid(session)
    out = await call("Bash", {"command": "echo $$ $0 $# $SECONDS; exit 3"})
    assert out.text.split("\n")[1] == f"{pid} bash 0 0"
    assert out.meta["exitCode"] == 3 and out.is_error


async def test_the_next_bash_starts_while_the_command_runs(
    call: Caller, session: CodeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Started after the answer, it was still starting when back-to-back calls came, and saved nothing.
    monkeypatch.setattr(warm, "BACK_TO_BACK_S", 60.0)  # back to back however loaded the machine
    started: list[warm.WarmShell] = []
    one_started = anyio.Event()
    real_start = warm.start
    loop = asyncio.get_running_loop()

    def start(cwd: Path, env: dict[str, str]) -> warm.WarmShell:  # in the thread that starts them
        started.append(real_start(cwd, env))
        loop.call_soon_threadsafe(one_started.set)
        return started[-1]

    await call.ok("Bash", {"command": "true"})
    first = await waiting_pid(session)
    monkeypatch.setattr(warm, "start", start)
    gate, fd = _held_gate(tmp_path)
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call.ok, "Bash", {"command": f"read -r line < {gate}; echo $$"})
                await one_started.wait()  # while the command waits for its line
                os.write(fd, b"go\n")
    finally:
        os.close(fd)
    after = await waiting_pid(session)
    assert [shell.proc.pid for shell in started] == [after] != [first]
    assert await call.ok("Bash", {"command": "echo $$"}) == str(started[0].proc.pid)


async def test_after_a_pause_the_next_bash_starts_after_the_command_not_during_it(
    call: Caller, session: CodeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spawn (`fork_exec` holds the GIL; under load it waits for the vforked child) stays off the call's path.
    monkeypatch.setattr(warm, "BACK_TO_BACK_S", 0.0)  # every call comes after a pause
    await call.ok("Bash", {"command": "true"})
    first = await waiting_pid(session)
    starts: list[warm.WarmShell] = []
    real_start = warm.start

    def start(cwd: Path, env: dict[str, str]) -> warm.WarmShell:
        starts.append(real_start(cwd, env))
        return starts[-1]

    monkeypatch.setattr(warm, "start", start)
    gate, fd = _held_gate(tmp_path)
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call.ok, "Bash", {"command": f"read -r line < {gate}; echo $$"})
                while session.warm_shell._shell is not None:  # until the call has taken the waiting bash
                    await anyio.lowlevel.checkpoint()
                for _ in range(50):  # the turns of the loop in which a start during the command came before
                    await anyio.lowlevel.checkpoint()
                during = list(starts)
                os.write(fd, b"go\n")
    finally:
        os.close(fd)
    assert during == [], "nothing started while the command ran"
    after = await waiting_pid(session)
    assert [shell.proc.pid for shell in starts] == [after] != [first], "one started after it"


@pytest.mark.parametrize(
    "command",
    [
        "printf '%s|' 'héllo 中文' \"$(printf 'a\\n\\n')\"\n\n",
        "cat <<EOF\nno newline after the end\nEOF",
        "echo '" + "x" * 5000 + "' | wc -c",
        'printf %s "trailing backslash-newline: "\\\n"joined"',
        "echo $LINENO; echo unterminated 'quote",
        "f() { return 4; }; f",
    ],
)
async def test_the_command_arrives_byte_for_byte(call: Caller, session: CodeSession, command: str) -> None:
    expected = await call("Bash", {"command": command})  # a bash started for the call
    await call.ok("Bash", {"command": "true"})
    await waiting_pid(session)
    again = await call("Bash", {"command": command})
    assert (again.text, again.meta["exitCode"]) == (expected.text, expected.meta["exitCode"])


@pytest.mark.parametrize("command", ["echo plain", "echo 'h\u00e9llo'", "echo '\x1b[0m' | od -c | head -1"])
async def test_an_unusable_locale_warns_as_often_as_in_a_bash_started_for_the_call(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    # Bash warns at each failed `setlocale`: once at its start, and again after a `LC_ALL=C` assignment ends.
    monkeypatch.setenv("LC_ALL", "xx_YY.unusable")
    expected = await call("Bash", {"command": command})  # a bash started for the call
    assert expected.text.count("cannot change locale") == 1
    await call.ok("Bash", {"command": "true"})
    await waiting_pid(session)
    again = await call("Bash", {"command": command})
    if command.isascii() and "\x1b" not in command:  # read without the locale switch: the same output
        assert again.text == expected.text
    else:  # read under LC_ALL=C, whose end warns once more (as before)
        assert again.text.count("cannot change locale") == 2


async def test_a_read_only_command_gets_no_optional_git_locks_and_another_does_not(
    call: Caller, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GIT_OPTIONAL_LOCKS", raising=False)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")  # the server's own entry stays first; the read-only one follows
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.name")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "it's me")
    await call.ok("Bash", {"command": "true"})
    shell = await waiting(session)
    shown = "printenv GIT_OPTIONAL_LOCKS GIT_CONFIG_COUNT GIT_CONFIG_VALUE_0 GIT_CONFIG_KEY_1 GIT_CONFIG_VALUE_1"
    out = await call("Bash", {"command": shown})
    assert out.meta["readOnly"] is True
    assert out.text == "0\n2\nit's me\ndiff.autoRefreshIndex\nfalse"
    assert shell.proc.returncode == 0  # it ran the command (one not used is killed)
    await waiting_pid(session)
    out = await call("Bash", {"command": "touch made && printenv GIT_OPTIONAL_LOCKS"})
    assert out.meta["readOnly"] is False and out.meta["exitCode"] == 1 and (root / "made").exists()


async def test_after_a_cd_the_next_bash_waits_in_the_new_folder(call: Caller, session: CodeSession, root: Path) -> None:
    (root / "sub").mkdir()
    await call.ok("Bash", {"command": "cd sub"})
    pid = await waiting_pid(session)
    assert await call.ok("Bash", {"command": "echo $$; pwd"}) == f"{pid}\n{root / 'sub'}"


async def test_a_folder_replaced_under_the_same_name_is_not_used_through_the_old_one(
    call: Caller, session: CodeSession, root: Path
) -> None:
    (root / "sub").mkdir()
    await call.ok("Bash", {"command": "cd sub"})
    pid = await waiting_pid(session)
    shutil.rmtree(root / "sub")
    (root / "sub").mkdir()
    (root / "sub" / "new.txt").write_text("new\n", encoding="utf-8")
    out = await call.ok("Bash", {"command": "echo $$; ls"})
    assert out.split("\n")[1] == "new.txt" and out.split("\n")[0] != str(pid)


async def test_a_changed_server_environment_starts_a_new_bash(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    await call.ok("Bash", {"command": "true"})
    pid = await waiting_pid(session)
    monkeypatch.setenv("ADDED_LATER", "yes")
    assert await call.ok("Bash", {"command": "echo $$ $ADDED_LATER"}) != f"{pid} yes"
    assert (await call.ok("Bash", {"command": "echo $ADDED_LATER"})) == "yes"


async def test_a_waiting_bash_that_died_is_replaced_and_the_command_runs(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "true"})
    shell = await waiting(session)
    os.killpg(shell.proc.pid, 9)
    shell.proc.wait()
    assert await call.ok("Bash", {"command": "echo ran"}) == "ran"


async def test_the_waiting_bash_ends_with_the_session(call: Caller, session: CodeSession) -> None:
    await call.ok("Bash", {"command": "true"})
    shell = await waiting(session)
    await session.aclose()
    assert shell.proc.returncode is not None
    session.warm_shell.prepare_soon(session.cwd, {})  # a closed session starts no more
    assert session.warm_shell._shell is None


async def test_a_bash_not_taken_in_time_is_stopped_and_the_next_command_starts_its_own(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    expired: dict[warm.WarmShell, anyio.Event] = defaultdict(anyio.Event)
    real_expire = warm.WarmSlot._expire

    def expire(slot: warm.WarmSlot, shell: warm.WarmShell) -> None:
        real_expire(slot, shell)
        expired[shell].set()  # the one started while the call ran expires too, before the one after it

    monkeypatch.setattr(warm, "IDLE_S", 0.0)
    monkeypatch.setattr(warm.WarmSlot, "_expire", expire)
    await call.ok("Bash", {"command": "true"})
    shell = await waiting(session)
    with anyio.fail_after(10):
        await expired[shell].wait()  # the loop's timer
    assert shell.proc.returncode is not None  # stopped and reaped
    assert session.warm_shell._shell is None
    assert shell.command_w is None  # its pipes were closed with it
    assert await call.ok("Bash", {"command": "echo $$"}) != str(shell.proc.pid)


def test_a_bash_without_read_n_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        stdout = "3 2\n"

    monkeypatch.setattr(warm, "_bash_ok", None)
    assert warm._bash_reads_counted_bytes(lambda *args, **kwargs: Done()) is False
    monkeypatch.setattr(warm, "_bash_ok", None)
    Done.stdout = "5 2\n"
    assert warm._bash_reads_counted_bytes(lambda *args, **kwargs: Done()) is True


async def test_what_a_command_in_it_leaves_running_is_found_from_when_it_was_sent(
    call: Caller, session: CodeSession
) -> None:
    await call.ok("Bash", {"command": "true"})
    pid = await waiting_pid(session)
    for _ in range(3):  # forks after its start and before the call: outside the call's pid window
        await anyio.run_process(["true"])
    # `read` returns once the child has said "up", after setsid: a scan before that found it still in the
    # command's group, where the group's kill stops it without a note (failed so at load 10).
    left = "read -r _ < <(setsid sh -c 'echo up; exec sleep 30 >/dev/null 2>&1'); echo $$"
    out = await call("Bash", {"command": left})
    assert out.text.startswith(str(pid))
    assert "were stopped" in out.text  # left its group and session, found by the call's marker


async def test_what_bash_env_started_while_it_waited_is_still_found(
    call: Caller, session: CodeSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    script = tmp_path / "env.sh"
    script.write_text(f"setsid sleep 30 >/dev/null 2>&1 & echo $$ > {fifo}\n", encoding="utf-8")
    monkeypatch.setenv("BASH_ENV", str(script))
    # Held open for reading and writing: a bash's write never waits, and the reads see every bash that ran
    # the file (the call's own and the one started for the next call while it ran), never an end of file.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    ran: list[str] = []

    async def ran_the_file(pid: int) -> None:
        while str(pid) not in ran:
            await anyio.wait_readable(fd)
            ran.extend(os.read(fd, 4096).decode().split())

    try:
        with anyio.fail_after(20):
            await call.ok("Bash", {"command": "true"})  # its bash runs the file; its leftover is stopped
            pid = await waiting_pid(session)
            await ran_the_file(pid)  # the waiting bash ran it before its command was sent
            for _ in range(3):  # pids handed out after that leftover's and before the command
                await anyio.run_process(["true"])
            out = await call("Bash", {"command": "echo $$"})
    finally:
        os.close(fd)
    assert out.text.startswith(str(pid))
    assert "were stopped" in out.text


class HeldStart:
    """`warm.start` held in its thread until `go` (bounded), recording what it started and on which thread."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.started: list[warm.WarmShell] = []
        self.threads: list[int] = []
        self._real = warm.start

    def __call__(self, cwd: Path, env: dict[str, str]) -> warm.WarmShell:
        self.threads.append(threading.get_ident())
        self.go.wait(10)
        self.started.append(self._real(cwd, env))
        return self.started[-1]


async def held_during_a_command(call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch) -> HeldStart:
    """Calls back to back, and the bash started during the last one held in its thread until `go`."""
    monkeypatch.setattr(warm, "BACK_TO_BACK_S", 60.0)  # back to back however loaded the machine
    await call.ok("Bash", {"command": "true"})
    await waiting(session)
    held = HeldStart()
    monkeypatch.setattr(warm, "start", held)
    # `cd .` is run by the waiting bash itself (a builtin with plain words would run in a subshell of it, and
    # start no bash), so the next bash starts during it, and is held.
    await call.ok("Bash", {"command": "cd ."})
    return held


async def test_during_a_command_the_next_bash_is_started_off_the_event_loop(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `fork_exec` waits for the vforked child to exec (milliseconds under load): the loop serves meanwhile.
    held = await held_during_a_command(call, session, monkeypatch)
    assert session.warm_shell._shell is None  # still starting: the call was answered without waiting for it
    held.go.set()
    pid = await waiting_pid(session)
    assert [shell.proc.pid for shell in held.started] == [pid]
    assert held.threads and threading.get_ident() not in held.threads


async def test_a_call_takes_the_bash_still_starting_for_it_rather_than_a_second_one(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = await held_during_a_command(call, session, monkeypatch)
    outputs: list[str] = []

    async def next_call() -> None:
        outputs.append(await call.ok("Bash", {"command": "echo $$"}))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(next_call)
            for _ in range(20):  # the call reaches its wait for the bash
                await anyio.lowlevel.checkpoint()
            held.go.set()
    assert outputs == [str(held.started[0].proc.pid)]
    await waiting(session)
    assert len(held.started) == 2  # and the one started during it for the next call: never two for one call


async def test_a_bash_still_starting_when_the_session_ends_is_stopped(
    call: Caller, session: CodeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = await held_during_a_command(call, session, monkeypatch)
    session.warm_shell.close()
    held.go.set()
    with anyio.fail_after(10):
        await session.warm_shell.aclose()
    assert [shell.proc.returncode is not None for shell in held.started] == [True]
    assert session.warm_shell._shell is None
