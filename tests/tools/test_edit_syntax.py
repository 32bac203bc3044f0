"""After Edit, MultiEdit, Write and NotebookEdit of Python, the result names the syntax error the change made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from tests.conftest import Caller
from tests.tools.notebook_here import edits_in_process

pytestmark = pytest.mark.anyio

SOURCE = "def f(x):\n    return x + 1\n\n\ndef g():\n    return f(2)\n"


@pytest.fixture
def module(root: Path) -> Path:
    path = root / "m.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path


@pytest.fixture
async def refusing(pipeline: Pipeline, root: Path) -> Caller:
    session = CodeSession(Settings(roots=(root,), syntax_check="refuse"))
    yield Caller(pipeline, session)
    await session.aclose()


async def test_edit_reports_the_error_it_introduced_with_a_caret(call: Caller, module: Path) -> None:
    await call.ok("Read", {"file_path": str(module)})
    out = await call("Edit", {"file_path": str(module), "old_string": "return x + 1", "new_string": "return (x + 1"})
    assert not out.is_error, out.text
    assert "Warning: the edit introduced a syntax error at line 2" in out.text
    assert "2\t    return (x + 1\n" in out.text and "\t           ^" in out.text
    assert out.meta["syntaxError"]["line"] == 2
    assert "return (x + 1" in module.read_text(encoding="utf-8")


async def test_a_fine_edit_and_an_already_broken_file_say_nothing(call: Caller, root: Path, module: Path) -> None:
    await call.ok("Read", {"file_path": str(module)})
    fine = await call("Edit", {"file_path": str(module), "old_string": "x + 1", "new_string": "x + 2"})
    assert "syntax error" not in fine.text and "syntaxError" not in fine.meta
    broken = root / "broken.py"
    broken.write_text("def h(:\n    pass\nvalue = 1\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(broken)})
    same = await call("Edit", {"file_path": str(broken), "old_string": "value = 1", "new_string": "value = 2"})
    assert not same.is_error and "syntax error" not in same.text


async def test_other_languages_are_not_parsed_as_python(call: Caller, root: Path) -> None:
    path = root / "a.js"
    path.write_text("let a = 1;\n", encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    out = await call("Edit", {"file_path": str(path), "old_string": "let a = 1;", "new_string": "let a = (1;"})
    assert not out.is_error and "syntax error" not in out.text


async def test_refuse_mode_leaves_the_file_unchanged_and_shows_the_would_be_text(
    refusing: Caller, module: Path
) -> None:
    await refusing.ok("Read", {"file_path": str(module)})
    out = await refusing.fails(
        "Edit", {"file_path": str(module), "old_string": "return x + 1", "new_string": "return (x + 1"}
    )
    assert out.meta["errorCode"] == "syntax_error_introduced"
    assert "The edit was not made" in out.text and "1\tdef f(x):\n2\t    return (x + 1" in out.text
    assert module.read_text(encoding="utf-8") == SOURCE
    assert refusing.session.history.versions(module) == []


async def test_write_and_a_new_file_are_checked(call: Caller, root: Path, module: Path) -> None:
    created = await call("Write", {"file_path": str(root / "new.py"), "content": "if True\n    pass\n"})
    assert not created.is_error and "syntax error at line 1" in created.text
    await call.ok("Read", {"file_path": str(module)})
    out = await call("Write", {"file_path": str(module), "content": "def f(:\n"})
    assert "syntax error at line 1" in out.text


async def test_multiedit_checks_the_result_of_all_edits(refusing: Caller, module: Path) -> None:
    await refusing.ok("Read", {"file_path": str(module)})
    edits = [
        {"old_string": "return x + 1", "new_string": "return [x + 1"},
        {"old_string": "return f(2)", "new_string": "return f(3)"},
    ]
    out = await refusing.fails("MultiEdit", {"file_path": str(module), "edits": edits})
    assert out.meta["errorCode"] == "syntax_error_introduced"
    assert module.read_text(encoding="utf-8") == SOURCE
    edits[0]["new_string"] = "return [x + 1]"
    assert "syntax error" not in await refusing.ok("MultiEdit", {"file_path": str(module), "edits": edits})


def _notebook(path: Path, source: str) -> None:
    cells = [
        {"cell_type": "code", "id": "c1", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
    ]
    meta = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    path.write_text(json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=1))


async def test_a_notebook_code_cell_is_checked_and_magics_are_not_errors(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edits_in_process(monkeypatch)  # the check runs on the server's side of the change: no worker needed for it
    path = root / "n.ipynb"
    _notebook(path, "x = 1\n")
    await call.ok("Read", {"file_path": str(path)})
    magic = await call("NotebookEdit", {"notebook_path": str(path), "cell_id": "c1", "new_source": "%timeit x\n!ls\nx"})
    assert not magic.is_error and "syntax error" not in magic.text
    await call.ok("Read", {"file_path": str(path)})
    broken = await call("NotebookEdit", {"notebook_path": str(path), "cell_id": "c1", "new_source": "def f(:\n"})
    assert not broken.is_error, broken.text
    assert "syntax error in cell c1 at line 1" in broken.text
