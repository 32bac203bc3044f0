"""Issue 37: with no configuration, an edit of Python reports the undefined names, unused imports and wrong call
arities it introduced (ruff's rules and the arity check), never what was there before, and stays on time."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import anyio
import pytest

from mcp_codetools.files import python_checks, ruff_check
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from tests.conftest import Caller

pytestmark = pytest.mark.anyio

SOURCE = """import os
import sys


def area(width, height):
    return width * height


def report():
    print(area(2, 3), sys.argv)
"""


@pytest.fixture(autouse=True)
def no_kept_answers() -> None:
    """Each test starts with no ruff answers kept from another (they are kept by text)."""
    python_checks._answers.clear()


@pytest.fixture
async def module(call: Caller, root: Path) -> Path:
    path = root / "shapes.py"
    path.write_text(SOURCE, encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    return path


async def _edit(call: Caller, path: Path, old: str, new: str) -> str:
    with anyio.fail_after(20):
        out = await call("Edit", {"file_path": str(path), "old_string": old, "new_string": new})
    assert not out.is_error, out.text
    return out.text


async def test_an_undefined_name_the_edit_made_is_reported_with_its_place(call: Caller, module: Path) -> None:
    text = await _edit(call, module, "print(area(2, 3), sys.argv)", "print(area(2, 3), sys.argv, depth)")
    assert "Python checks (ruff, call arity) found 1 new problem:" in text
    assert "shapes.py:10:33 error: Undefined name `depth` (F821)" in text
    assert "print(area(2, 3), sys.argv, depth)" in text.split("Python checks")[1]
    assert not call.session.language_servers_started  # no language server was needed, or started


async def test_an_unused_import_the_edit_made_is_a_warning(call: Caller, module: Path) -> None:
    text = await _edit(call, module, "import sys\n", "import sys\nimport json\n")
    assert "shapes.py:3:8 warning: `json` imported but unused (F401)" in text


async def test_a_signature_change_that_breaks_a_caller_is_reported_at_the_call(call: Caller, module: Path) -> None:
    text = await _edit(call, module, "def area(width, height):", "def area(width, height, depth):")
    assert "shapes.py:10:11 error: area() missing 1 required positional argument: 'depth'" in text


async def test_a_new_call_with_one_argument_too_many_is_reported(call: Caller, module: Path) -> None:
    text = await _edit(call, module, "area(2, 3)", "area(2, 3, 4)")
    assert "area() takes 2 positional arguments but 3 were given" in text


async def test_problems_the_file_had_before_are_not_repeated(call: Caller, root: Path) -> None:
    path = root / "old.py"
    path.write_text("import os\n\n\ndef f(a):\n    return a + missing\n\n\nf(1, 2)\nvalue = 1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    with anyio.fail_after(20):
        out = await call("Edit", {"file_path": str(path), "old_string": "f(1, 2)", "new_string": "f(1, 2)  # known"})
        again = await call("Edit", {"file_path": str(path), "old_string": "value = 1", "new_string": "value = 2"})
        header = await call("Edit", {"file_path": str(path), "old_string": "(a):", "new_string": "(a):  # one"})
    for result in (out, again, header):
        assert not result.is_error and "Python checks" not in result.text, result.text
        assert result.meta["pythonChecks"] == {"ruff": "ok", "arity": True, "new": 0}


async def test_write_of_a_new_file_and_multiedit_are_checked_too(call: Caller, root: Path, module: Path) -> None:
    with anyio.fail_after(20):
        created = await call("Write", {"file_path": str(root / "new.py"), "content": "print(undefined_thing)\n"})
        multi = await call(
            "MultiEdit",
            {"file_path": str(module), "edits": [{"old_string": "area(2, 3)", "new_string": "area(2)"}]},
        )
    assert "new.py:1:7 error: Undefined name `undefined_thing` (F821)" in created.text
    assert "area() missing 1 required positional argument: 'height'" in multi.text


async def test_a_syntax_error_the_edit_made_is_reported_alone(call: Caller, module: Path) -> None:
    text = await _edit(call, module, "return width * height", "return (width * height + nowhere")
    assert "syntax error" in text and "Python checks" not in text and "nowhere" not in text.split("^")[-1]


async def test_without_ruff_the_edit_succeeds_says_so_and_still_checks_arity(
    call: Caller, module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ruff_check, "ruff_program", lambda: None)
    text = await _edit(call, module, "area(2, 3), sys.argv", "area(2), sys.argv, depth")
    assert "Diagnostics were unavailable: the ruff package is not installed" in text
    assert "area() missing 1 required positional argument" in text and "Undefined name `" not in text
    assert "area(2), sys.argv, depth" in module.read_text(encoding="utf-8")


async def test_a_ruff_inside_a_root_is_never_run(call: Caller, module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server installed in the project's venv: a command could have replaced that ruff, so it is not run."""
    planted = module.parent / ".venv" / "bin" / "ruff"
    planted.parent.mkdir(parents=True)
    ran = module.parent / "ran"
    planted.write_text(f"#!/bin/sh\ntouch '{ran}'\n", encoding="utf-8")
    planted.chmod(0o755)
    monkeypatch.setattr(ruff_check, "ruff_program", lambda: str(planted))
    text = await _edit(call, module, "area(2, 3)", "area(2, 3), nowhere")
    assert f"Diagnostics were unavailable: ruff's program {planted} is inside a project folder" in text
    assert not ran.exists()


@pytest.fixture
async def quick(pipeline: Pipeline, root: Path) -> AsyncIterator[Caller]:
    session = CodeSession(Settings(roots=(root,), lsp_diagnostics_wait_s=1.0))
    try:
        yield Caller(pipeline, session)
    finally:
        await session.aclose()


async def test_a_ruff_that_never_answers_is_killed_and_reaped_and_the_edit_returns_on_time(
    quick: Caller, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    mark = f"open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close()"
    hang = f"import os, threading; {mark}; threading.Event().wait()"
    monkeypatch.setattr(ruff_check, "ruff_command", lambda program, name: [sys.executable, "-c", hang])
    path = root / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    await quick.ok("Read", {"file_path": str(path)})
    text = await _edit(quick, path, "area(2, 3)", "area(2, 3, 4)")
    assert "Diagnostics were not ready: ruff had not checked the new text within 1 s" in text
    assert "area() takes 2 positional arguments but 3 were given" in text  # the arity check had answered
    started = [int(name) for name in os.listdir(pids)]
    assert started  # else the bound was too short for the child to start: this test would prove nothing
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # gone, not a zombie: killed and reaped


async def test_a_zero_wait_turns_the_checks_off(pipeline: Pipeline, root: Path) -> None:
    session = CodeSession(Settings(roots=(root,), lsp_diagnostics_wait_s=0))
    try:
        path = root / "m.py"
        path.write_text(SOURCE, encoding="utf-8")
        caller = Caller(pipeline, session)
        await caller.ok("Read", {"file_path": str(path)})
        out = await caller("Edit", {"file_path": str(path), "old_string": "sys.argv", "new_string": "nothing"})
    finally:
        await session.aclose()
    assert not out.is_error and "Python checks" not in out.text and "pythonChecks" not in out.meta


async def test_beside_a_language_server_a_line_it_reported_is_not_reported_twice(
    pipeline: Pipeline, root: Path
) -> None:
    fake = Path(__file__).parents[1] / "lsp" / "fake_server.py"
    servers = {"fake": {"command": [sys.executable, str(fake)], "extensions": [".py"]}}
    session = CodeSession(Settings(roots=(root,), lsp_servers=servers))  # type: ignore[arg-type]
    path = root / "m.py"
    path.write_text("x = 1\n", encoding="utf-8")
    caller = Caller(pipeline, session)
    try:
        with anyio.fail_after(20):
            await caller.ok("Read", {"file_path": str(path)})
            await caller.ok("LSP", {"operation": "documentSymbol", "file_path": str(path)})
            out = await caller(
                "Edit", {"file_path": str(path), "old_string": "x = 1", "new_string": "x = BAD\ny = gone"}
            )
    finally:
        await session.aclose()
    assert not out.is_error, out.text
    assert "The fake language server reports 1 new problem:\nm.py:1:5 error: BAD on line 1" in out.text
    assert "Python checks (ruff, call arity) found 1 new problem:\nm.py:2:5 error: Undefined name `gone`" in out.text
    assert "`BAD`" not in out.text


async def test_a_run_of_edits_checks_each_text_with_ruff_once(
    call: Caller, module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    real = python_checks.ruff_check

    async def counted(text: str, file_name: str, roots: Sequence[Path]) -> ruff_check.RuffAnswer:
        checked.append(text)
        return await real(text, file_name, roots)

    monkeypatch.setattr(python_checks, "ruff_check", counted)
    await _edit(call, module, "area(2, 3)", "area(3, 3)")
    assert len(checked) == 2  # the text before and after
    second = await _edit(call, module, "area(3, 3)", "area(3, 3), nowhere")
    assert len(checked) == 3 and checked[-1] == module.read_text(encoding="utf-8")
    assert "Undefined name `nowhere`" in second


async def test_a_failing_check_never_fails_the_edit_it_follows(
    call: Caller, module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    async def broken_ruff(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(python_checks, "arity_problems", broken)
    monkeypatch.setattr(python_checks, "ruff_check", broken_ruff)
    text = await _edit(call, module, "area(2, 3)", "area(2, 3, 4)")
    assert "Diagnostics were unavailable: the ruff check failed (RuntimeError)" in text
    assert "area(2, 3, 4)" in module.read_text(encoding="utf-8")


async def test_a_file_named_like_an_option_is_checked_as_a_file(call: Caller, root: Path) -> None:
    path = root / "-x.py"
    path.write_text("x = 1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    text = await _edit(call, path, "x = 1", "x = y")
    assert "-x.py:1:5 error: Undefined name `y` (F821)" in text


async def test_a_problem_that_names_a_line_is_not_new_when_an_edit_above_moves_it(call: Caller, root: Path) -> None:
    path = root / "twice.py"
    path.write_text('"""Doc."""\n\nimport os\nimport os\n\nprint(os.sep)\n', encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    text = await _edit(call, path, '"""Doc."""\n', '"""Doc."""\n\nVALUE = 1\n')
    assert "Python checks" not in text  # "Redefinition of unused `os` from line 3" is now "from line 5"
