"""Bash through the pipeline: results, exit codes, the cwd rules, the output cap, progress, stale reads.

The process helpers at the top are shared with the other Bash and job test modules.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.shell import running
from mcp_codetools.tools import bash as bash_module
from mcp_codetools.tools.bash import BashInput, BashTool
from tests import processes
from tests.conftest import Caller

pytestmark = pytest.mark.anyio


# --- process helpers (shared) -------------------------------------------------------------------


def children_of_this_process() -> list[tuple[int, str]]:
    """Children of the test process, zombies included: there must be none between tests."""
    return processes.children_of(os.getpid())


async def poll_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Bounded polling for a state another process creates (no event can cross the process boundary)."""
    with anyio.fail_after(timeout):
        while not condition():  # noqa: ASYNC110
            await anyio.sleep(0.005)


async def wait_for_file(path: Path) -> str:
    """Wait for a line a command writes to `path` (the command signals progress through it)."""
    await poll_until(lambda: path.exists() and path.read_text().endswith("\n"))
    return path.read_text()


@pytest.fixture(autouse=True)
def no_stray_children() -> Iterator[None]:
    """Fails a test that leaves a child (running or zombie) of the test process behind."""
    yield
    assert children_of_this_process() == []


# --- results ------------------------------------------------------------------------------------


async def test_echo_round_trip(call: Caller) -> None:
    out = await call("Bash", {"command": "echo hi"})
    assert not out.is_error
    assert out.text == "hi"
    assert out.meta["exitCode"] == 0 and out.meta["readOnly"] is True


async def test_a_short_command_is_analysed_without_a_thread_hop_once_the_parser_is_warm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hops: list[str] = []
    real = anyio.to_thread.run_sync

    async def counting(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if func is bash_module.analyse:
            hops.append(args[0])
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    monkeypatch.setattr(bash_module, "_parser_warm", threading.Event())
    tool = BashTool()
    first, short = f"echo {os.urandom(8).hex()}", f"echo {os.urandom(8).hex()}"
    long = f"echo {os.urandom(8).hex()} " + "x" * bash_module.INLINE_MAX_CHARS
    for command in (first, short, long, short):
        args = BashInput(command=command)
        await tool.classify(args)
        assert args._analysis is not None and args._analysis.command == command
    assert hops == [first, long]  # the first builds the parser's tables; a long one would hold the loop


async def test_stdout_and_stderr_are_interleaved_in_order(call: Caller) -> None:
    text = await call.ok("Bash", {"command": "echo out; echo err >&2; echo out2; echo err2 >&2"})
    assert text == "out\nerr\nout2\nerr2"


async def test_non_zero_exit_is_an_error_with_the_code_first(call: Caller) -> None:
    out = await call.fails("Bash", {"command": "echo out; echo err >&2; exit 3"})
    assert out.text == "Exit code 3\nout\nerr"
    assert out.meta["exitCode"] == 3 and out.meta["errorCode"] == "execution_failed"


async def test_false_and_unknown_command(call: Caller) -> None:
    assert (await call.fails("Bash", {"command": "false"})).text == "Exit code 1"
    out = await call.fails("Bash", {"command": "nosuchcommand_xyz"})
    assert out.text.startswith("Exit code 127\n")
    assert "nosuchcommand_xyz: command not found" in out.text


async def test_killed_shell_reports_the_signal(call: Caller) -> None:
    out = await call.fails("Bash", {"command": "kill -9 $$"})
    assert out.text == "Exit code 137 (ended by SIGKILL)"


async def test_syntax_error_is_the_commands_own(call: Caller) -> None:
    out = await call.fails("Bash", {"command": "echo 'unbalanced"})
    assert out.text.startswith("Exit code 2\n")
    assert "unexpected EOF" in out.text


async def test_empty_output_says_so(call: Caller) -> None:
    assert await call.ok("Bash", {"command": "true"}) == "(no output)"


async def test_text_clean_up_like_claude_code(call: Caller) -> None:
    assert await call.ok("Bash", {"command": "printf '\\n\\n  x  \\n\\n'"}) == "  x"
    assert await call.ok("Bash", {"command": "printf 'a\\377b\\n'"}) == "a\ufffdb"
    assert await call.ok("Bash", {"command": "printf '10%%\\r50%%\\r100%%\\ndone\\r\\n'"}) == "100%\ndone"


async def test_positional_parameters_are_empty(call: Caller) -> None:
    assert await call.ok("Bash", {"command": 'echo "$0 [$1] $#"'}) == "bash [] 0"


# --- exit-code interpretation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "interpretation"),
    [
        ("grep nothing-here /dev/null", "No matches found"),
        ("cat /dev/null | grep -E x", "No matches found"),
        ("test -f /nonexistent", "Condition is false"),
        ("[ 1 = 2 ]", "Condition is false"),
        ("find /nonexistent-dir-xyz", "Some directories were inaccessible"),
    ],
)
async def test_no_match_codes_are_not_errors(call: Caller, command: str, interpretation: str) -> None:
    out = await call("Bash", {"command": command})
    assert not out.is_error, out.text
    assert out.meta["returnCodeInterpretation"] == interpretation
    assert out.meta["exitCode"] == 1


async def test_diff_that_differs_shows_the_diff(call: Caller, root: Path) -> None:
    (root / "a").write_text("1\n")
    (root / "b").write_text("2\n")
    out = await call("Bash", {"command": "diff a b"})
    assert not out.is_error
    assert out.text.startswith("1c1\n< 1\n---\n> 2")
    assert "(exit code 1: Files differ)" in out.text


async def test_no_match_with_output(call: Caller) -> None:
    out = await call("Bash", {"command": "grep -c x /dev/null"})
    assert not out.is_error
    assert out.text == "0\n\n(exit code 1: No matches found)"


async def test_codes_two_and_up_are_errors_for_those_commands(call: Caller) -> None:
    out = await call.fails("Bash", {"command": "grep x /nonexistent-file"})
    assert out.text.startswith("Exit code 2\n")
    assert "returnCodeInterpretation" not in out.meta


async def test_interpretation_follows_the_last_command(call: Caller) -> None:
    # The status is wc's (0), not grep's.
    assert await call.ok("Bash", {"command": "grep x /dev/null | wc -l"}) == "0"
    # grep is not last here: its 1 becomes the list's status and is a failure.
    out = await call.fails("Bash", {"command": "grep x /dev/null && echo found"})
    assert out.text == "Exit code 1"


# --- working directory and environment ----------------------------------------------------------


async def test_cwd_persists_across_calls_and_for_file_tools(call: Caller, session: CodeSession, root: Path) -> None:
    out = await call("Bash", {"command": "mkdir -p sub && cd sub && echo content > f.txt"})
    assert out.meta["cwd"] == str(root / "sub")
    assert session.cwd == root / "sub"
    assert await call.ok("Bash", {"command": "pwd"}) == str(root / "sub")
    assert await call.ok("Read", {"file_path": "f.txt"}) == "1\tcontent"


async def test_cd_outside_the_roots_is_undone(call: Caller, session: CodeSession, root: Path) -> None:
    text = await call.ok("Bash", {"command": "cd / && pwd"})
    assert text == f"/\n\nShell cwd was reset to {root}"
    assert session.cwd == root
    assert await call.ok("Bash", {"command": "pwd"}) == str(root)


async def test_cd_through_a_symlink_that_leaves_the_roots_is_undone(
    call: Caller, session: CodeSession, root: Path, outside: Path
) -> None:
    (root / "link").symlink_to(outside)
    text = await call.ok("Bash", {"command": "cd link"})
    assert f"Shell cwd was reset to {root}" in text
    assert session.cwd == root


async def test_cd_back_up_to_the_root_is_kept(call: Caller, session: CodeSession, root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    await call.ok("Bash", {"command": "cd a/b"})
    await call.ok("Bash", {"command": "cd ../.."})
    assert session.cwd == root


async def test_a_command_that_exits_keeps_the_old_cwd(call: Caller, session: CodeSession, root: Path) -> None:
    (root / "sub").mkdir()
    await call.ok("Bash", {"command": "cd sub && exit 0"})
    assert session.cwd == root


async def test_a_removed_cwd_falls_back_to_the_root(call: Caller, session: CodeSession, root: Path) -> None:
    await call.ok("Bash", {"command": "mkdir gone && cd gone"})
    await call.ok("Bash", {"command": 'rmdir "$PWD"'})
    text = await call.ok("Bash", {"command": "pwd"})
    assert text.startswith(f"{root}\n\nShell cwd was reset to {root}")
    assert session.cwd == root


async def test_environment_changes_do_not_persist(call: Caller) -> None:
    await call.ok("Bash", {"command": "export FOO_XYZ=bar"})
    assert await call.ok("Bash", {"command": 'echo "[$FOO_XYZ]"'}) == "[]"


async def test_environment_markers(call: Caller) -> None:
    text = await call.ok("Bash", {"command": 'echo "$MCP_CODETOOLS $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $TERM"'})
    assert text == "1 cat cat 0 dumb"
    # Read-only commands may run beside each other, so git must not take its optional index lock.
    assert await call.ok("Bash", {"command": "printenv GIT_OPTIONAL_LOCKS"}) == "0"
    text = await call.ok("Bash", {"command": "cd . && (printenv GIT_OPTIONAL_LOCKS || echo unset)"})
    assert text == "unset"


async def test_a_read_only_git_diff_leaves_the_index_alone(call: Caller, root: Path) -> None:
    """git diff refreshes the index's stat cache whatever GIT_OPTIONAL_LOCKS says (a copied repository: every
    file's inode changed); `diff.autoRefreshIndex=false` keeps it from writing in a read-only command."""
    repo = root / "repo"
    setup = "git init -q repo && echo a > repo/a && echo b > repo/b && git -C repo add a b"
    await call.ok("Bash", {"command": f"{setup} && git -C repo -c user.name=t -c user.email=t@e commit -qm x"})
    await call.ok("Bash", {"command": "cp -a repo copy && rm -rf repo && mv copy repo"})
    index = (repo / ".git" / "index").read_bytes()
    assert await call.ok("Bash", {"command": "git -C repo diff"}) == "(no output)"
    assert (repo / ".git" / "index").read_bytes() == index


async def test_stdin_is_dev_null_and_there_is_no_terminal(call: Caller) -> None:
    assert await call.ok("Bash", {"command": 'read x; echo "got[$x] $?"'}) == "got[] 1"
    assert await call.ok("Bash", {"command": "cat"}) == "(no output)"
    out = await call.fails("Bash", {"command": "tty"})
    assert "not a tty" in out.text
    out = await call.fails("Bash", {"command": "exec 3</dev/tty"})
    assert "/dev/tty" in out.text


# --- timeout parameter and input checks ---------------------------------------------------------


async def test_timeout_above_the_maximum_is_clamped_and_said(call: Caller) -> None:
    out = await call("Bash", {"command": "echo hi", "timeout": 700_000})
    assert not out.is_error
    assert out.text == "hi\n\nThe timeout of 700000 ms is above the maximum; it was lowered to 600000 ms."
    assert out.meta["timeoutMs"] == 600_000


async def test_default_timeout(call: Caller) -> None:
    out = await call("Bash", {"command": "true", "description": "nothing"})
    assert out.meta["timeoutMs"] == 120_000


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"command": ""}, "`command` is empty"),
        ({"command": "   \n"}, "`command` is empty"),
        ({"command": "echo a\x00b"}, "NUL byte"),
        ({"command": "ls", "timeout": 0}, "`timeout`"),
        ({"command": "ls", "timeout": "soon"}, "`timeout`"),
        ({"command": "ls", "cwd": "/"}, "unexpected parameter `cwd`"),
        ({}, "required parameter `command` is missing"),
    ],
)
async def test_bad_input_is_refused(call: Caller, arguments: dict[str, Any], fragment: str) -> None:
    out = await call.fails("Bash", arguments)
    assert fragment in out.text
    assert out.meta["errorCode"] == "invalid_input"


async def test_command_too_long_for_an_argument(call: Caller) -> None:
    out = await call.fails("Bash", {"command": "echo " + "x" * 200_000})
    assert out.text.startswith("Could not start the command")


# --- output cap ---------------------------------------------------------------------------------


async def test_large_output_keeps_head_and_tail_and_saves_the_rest(call: Caller, session: CodeSession) -> None:
    out = await call("Bash", {"command": "seq 1 200000"})
    assert not out.is_error
    assert len(out.text) <= 30_000
    assert out.text.startswith("1\n2\n3\n")
    assert out.text.endswith("199999\n200000")
    path = Path(str(out.meta["persistedOutputPath"]))
    assert path.parent == session.scratch_dir
    full = "".join(f"{i}\n" for i in range(1, 200_001))
    assert path.read_text() == full
    assert out.meta["persistedOutputSize"] == len(full)
    assert out.meta["outputChars"] == len(full)
    head, _, rest = out.text.partition("\n\n[... ")
    marker, _, tail = rest.partition("]\n\n")
    head_numbers = [int(line) for line in head.split("\n")]
    tail_numbers = [int(line) for line in tail.split("\n")]  # whole lines at both cuts
    assert head_numbers == list(range(1, len(head_numbers) + 1))
    assert tail_numbers == list(range(200_001 - len(tail_numbers), 200_001))
    omitted = len(full) - (len(head) + 1) - (len(tail) + 1)
    assert marker == (
        f"{omitted:,} characters omitted ({len(full):,} in total). Full output saved to {path}; "
        "Read it with offset and limit, or Grep it, to see the rest ..."
    )
    assert await call.ok("Read", {"file_path": str(path), "offset": 200_000}) == "200000\t200000"


async def test_output_just_under_the_cap_is_whole(call: Caller) -> None:
    out = await call("Bash", {"command": "head -c 29999 /dev/zero | tr '\\0' x"})
    assert out.text == "x" * 29_999
    assert "persistedOutputPath" not in out.meta


async def test_large_output_with_an_error_keeps_the_exit_code_first(call: Caller) -> None:
    out = await call.fails("Bash", {"command": "seq 1 100000; exit 4"})
    assert out.text.startswith("Exit code 4\n1\n2\n")
    assert len(out.text) <= 30_100


# --- progress -----------------------------------------------------------------------------------


async def test_progress_carries_the_latest_output_line(
    pipeline: Pipeline, session: CodeSession, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(running, "PROGRESS_INTERVAL_S", 0.05)
    messages: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        messages.append((value, message))
        if message == "first line":
            (root / "go").touch()

    command = "echo first line; while [ ! -e go ]; do sleep 0.01; done; echo finished"
    with anyio.fail_after(10):
        out = await pipeline.run(session, "Bash", {"command": command}, progress=progress)
    assert out.text == "first line\nfinished"
    assert "first line" in [m for _, m in messages], messages
    values = [v for v, _ in messages]
    assert all(a < b for a, b in zip(values, values[1:], strict=False)), values


# --- read-only classification and stale reads ---------------------------------------------------


def test_concurrency_safety_follows_the_classifier() -> None:
    tool = BashTool()
    assert tool.is_concurrency_safe(BashInput(command="git status && ls -la | head"))
    assert not tool.is_concurrency_safe(BashInput(command="ls > out.txt"))
    assert not tool.is_concurrency_safe(BashInput(command="ls", run_in_background=True))
    assert tool.is_read_only(BashInput(command="cat f")) and not tool.is_read_only(BashInput(command="rm f"))


async def test_read_only_commands_run_side_by_side(call: Caller, session: CodeSession, root: Path) -> None:
    """Each command blocks until the test writes to its FIFO, which it does only once both are running."""
    for name in ("f1", "f2"):
        os.mkfifo(root / name)
    results: list[str] = []

    async def run(name: str) -> None:
        results.append(await call.ok("Bash", {"command": f"cat {name}"}))

    def open_writer(name: str) -> int | None:
        try:
            return os.open(root / name, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader yet
            return None

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "f1")
        tg.start_soon(run, "f2")
        fds: dict[str, int] = {}

        def both_reading() -> bool:
            for name in ("f1", "f2"):
                if name not in fds and (fd := open_writer(name)) is not None:
                    fds[name] = fd
            return len(fds) == 2

        await poll_until(both_reading)
        for name, fd in fds.items():
            os.write(fd, f"from {name}\n".encode())
            os.close(fd)
    assert sorted(results) == ["from f1", "from f2"]


async def test_files_read_earlier_and_changed_by_a_command_are_named(call: Caller, root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    (root / "c.txt").write_text("c\n")
    for name in ("a.txt", "b.txt", "c.txt"):
        await call.ok("Read", {"file_path": str(root / name)})
    out = await call("Bash", {"command": "echo more >> a.txt; rm b.txt; cat c.txt > /dev/null"})
    assert out.text == (
        "(no output)\n\n[This command modified 2 files you've previously read: a.txt, b.txt. Call Read before editing.]"
    )
    assert out.meta["staleReadFiles"] == [str(root / "a.txt"), str(root / "b.txt")]
    out = await call("Bash", {"command": "touch new.txt"})
    assert "previously read" not in out.text


async def test_read_only_commands_skip_the_stale_check(call: Caller, root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    await call.ok("Read", {"file_path": str(root / "a.txt")})
    os.utime(root / "a.txt", ns=(1, 1))  # changed behind the command's back: not the command's doing
    out = await call("Bash", {"command": "cat a.txt"})
    assert out.text == "a"
    assert "staleReadFiles" not in out.meta


@pytest.mark.parametrize("command", ["vim notes.txt", "cd . && nvim a.py", "timeout 5 vi f", "/usr/bin/view x"])
async def test_an_editor_with_nothing_to_do_is_refused_before_it_hangs(call: Caller, command: str) -> None:
    """vi and its kin, with no terminal, read keys from stderr (the output pipe) and never get one."""
    out = await call.fails("Bash", {"command": command})
    assert out.meta["errorCode"] == "invalid_input" and "Edit or Write" in out.text and "-es" in out.text


@pytest.mark.parametrize(
    "command",
    ["echo vim", "vim --version >/dev/null || true", "view=1; echo $view", "vim x.txt <<'EOF'\nix\u001b:wq\nEOF"],
)
async def test_editor_words_elsewhere_run(call: Caller, command: str) -> None:
    out = await call("Bash", {"command": command})
    assert out.meta.get("errorCode") != "invalid_input", out.text


async def test_parsing_a_command_does_not_hold_other_sessions(
    monkeypatch: pytest.MonkeyPatch, pipeline: Pipeline, session: CodeSession, root: Path
) -> None:
    # bashlex takes ~25 µs a character (a 160 KB command: 3 s) and 0.2-0.3 s for its first parse. The
    # analysis is held here until another session's Read has finished: on the event loop it could not.
    import threading

    from mcp_codetools.tools import bash

    entered, release, gave_up = threading.Event(), threading.Event(), threading.Event()
    real = bash.analyse
    command = "echo " + "word " * 20

    def held(text: str) -> Any:
        if text == command and not release.is_set():
            entered.set()
            if not release.wait(10):
                gave_up.set()
        return real(text)

    monkeypatch.setattr(bash, "analyse", held)
    (root / "small.txt").write_text("hello\n", encoding="utf-8")
    other = CodeSession(session.settings)
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(pipeline.run, session, "Bash", {"command": command})
                assert await anyio.to_thread.run_sync(entered.wait, 10)
                read = await pipeline.run(other, "Read", {"file_path": str(root / "small.txt")})
                assert not gave_up.is_set(), "the Read waited for the analysis"
                assert "hello" in read.text
                release.set()
    finally:
        release.set()
        await other.aclose()


@pytest.mark.linux_only
async def test_a_command_longer_than_one_argument_may_be_says_what_to_do(call: Caller) -> None:
    # Linux passes at most 128 KiB in one argument, and the command is bash's `-c` argument.
    out = await call.fails("Bash", {"command": "true" + " word" * 30_000})
    assert "at 150,004 bytes it is longer than the system passes to a program" in out.text, out.text
    assert "run it with `bash FILE`" in out.text
