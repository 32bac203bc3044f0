"""The syntax check's regions (issue 37): what it compiles for each kind of place, and that it never misses."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pytest

from mcp_codetools.files import syntax
from tests.conftest import Caller

CLASS = (
    "import os\n"
    "\n"
    "class Box:\n"
    "    @staticmethod\n"
    "    @property\n"
    "    def size():\n"
    "        for n in range(3):\n"
    "            if n:\n"
    "                break\n"
    "        return 1\n"
    "\n"
    "    async def fetch(self):\n"
    "        return await self.get()\n"
    "\n"
    "    def outer(self):\n"
    "        n = 0\n"
    "        def inner():\n"
    "            nonlocal n\n"
    "            n += 1\n"
    "        return inner\n"
    "\n"
    "value = 1\n"
)


def changed(text: str, old: str, new: str) -> tuple[str, int, int]:
    """`text` with `old` replaced once, and the 0-based lines of the result the change covers."""
    at = text.index(old)
    first = text.count("\n", 0, at)
    return text.replace(old, new, 1), first, first + new.count("\n")


def compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<t>", "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syntax, "_compiled", type(syntax._compiled)())


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("                break\n", "                break\n        break\n", "'break' outside loop"),  # a loop
        ("        return 1\n", "        return await 1\n", "'await' outside async function"),  # a method
        ("value = 1\n", "value = 1\nreturn value\n", "'return' outside function"),  # the top level after a class
        ("import os\n", "import os\nyield os\n", "'yield' outside function"),  # the top of the file
        ("            nonlocal n\n", "            nonlocal m\n", "no binding for nonlocal 'm' found"),  # nested def
        ("        return inner\n", "return inner\n", "'return' outside function"),  # a method's line moved out
    ],
)
def test_compile_time_errors_are_caught_in_every_region(old: str, new: str, message: str) -> None:
    new_text, first, last = changed(CLASS, old, new)
    found = syntax.introduced_error(CLASS, new_text, first, last)
    assert found is not None and found.message == message, found


def test_a_nested_function_with_its_nonlocal_bound_above_is_no_false_alarm() -> None:
    """Alone, `inner` has no binding for `n`: the block cannot stand alone, so the whole file settles it."""
    new_text, first, last = changed(CLASS, "n += 1", "n += 2")
    assert syntax.introduced_error(CLASS, new_text, first, last) is None


def test_a_run_of_edits_in_one_function_compiles_each_version_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = syntax._problem

    def counting(source: str) -> syntax.SyntaxProblem | None:
        compiled.append(source)
        return real(source)

    monkeypatch.setattr(syntax, "_problem", counting)
    one, first, last = changed(CLASS, "return 1\n", "return 2\n")
    assert syntax.introduced_error(CLASS, one, first, last) is None
    assert len(compiled) == 2  # the method before and after
    two, first, last = changed(one, "return 2\n", "return 3\n")
    assert syntax.introduced_error(one, two, first, last) is None
    assert len(compiled) == 3, "the method as the first edit left it compiled already"
    assert all(len(source) < 200 for source in compiled), "only the method, never the file"


def test_the_window_grows_until_the_block_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny first window: the def, its decorators and the block's end are found past it, with the same answers."""
    monkeypatch.setattr(syntax, "_WINDOW", 16)
    body = "".join(f"        x{n} = {n}\n" for n in range(200))
    text = CLASS.replace("        return 1\n", body + "        return 1\n")
    fine, first, last = changed(text, "x100 = 100", "x100 = 101")
    assert syntax.introduced_error(text, fine, first, last) is None
    broken, first, last = changed(text, "x100 = 100\n", "x100 = 100\n        yield from\n")
    found = syntax.introduced_error(text, broken, first, last)
    assert found is not None and found.line == first + 2


def test_random_edits_with_a_small_window_agree_with_compiling_the_whole_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Soundness where the window must grow: random damage, the answer is what two whole compiles say."""
    monkeypatch.setattr(syntax, "_WINDOW", 64)
    rng = random.Random(37)
    lines = CLASS.split("\n") * 3  # three classes and three `value = 1` lines: blocks far from the window's edge
    text = "\n".join(lines)
    snippets = ["(", ")", ":", "\n    return 1", "\nreturn 1", "\nbreak", "\n        await x", "\n@deco", '"""']
    snippets += ["\nasync def f():\n    await x", "\n    nonlocal q", "\n        yield", " if x else y", "\n"]
    for _ in range(300):
        i = rng.randrange(len(lines))
        pos = rng.randrange(len(lines[i]) + 1)
        line = lines[i][:pos] + rng.choice(snippets) + lines[i][pos:]
        new = "\n".join([*lines[:i], line, *lines[i + 1 :]])
        truth = compiles(text) and not compiles(new)
        assert (syntax.introduced_error(text, new, i, i + line.count("\n")) is not None) == truth, (i, line)


@pytest.mark.anyio
async def test_multiedit_compiles_the_blocks_around_its_changes_not_the_file(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled: list[str] = []
    real = syntax._problem

    def counting(source: str) -> syntax.SyntaxProblem | None:
        compiled.append(source)
        return real(source)

    monkeypatch.setattr(syntax, "_problem", counting)
    path = root / "box.py"
    filler = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(50))
    path.write_text(filler + CLASS + filler, encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    edits = [
        {"old_string": "        return 1\n", "new_string": "        return 2\n"},
        {"old_string": "            n += 1\n", "new_string": "            n += 2\n"},
    ]
    out = await call("MultiEdit", {"file_path": str(path), "edits": edits})
    assert not out.is_error and "syntax error" not in out.text, out.text
    assert compiled and all(len(source) < len(CLASS) + 100 for source in compiled), [len(s) for s in compiled]
    broken = [{"old_string": "        return 2\n", "new_string": "        return (2\n"}]
    out = await call("MultiEdit", {"file_path": str(path), "edits": broken})
    assert "introduced a syntax error at line" in out.text, out.text


def test_the_changed_line_is_found_by_offset_as_a_split_would() -> None:
    """Lines of every length, the guess too short or too long: the offset where line i starts, or None."""
    rng = random.Random(7)
    for _ in range(300):
        lines = ["x" * rng.choice([0, 1, 5, 40, 200, rng.randrange(400)]) for _ in range(rng.randrange(120))]
        text = "\n".join(lines) + rng.choice(["", "\n"])
        starts = [0, *(n + 1 for n, char in enumerate(text) if char == "\n")]
        for index in {0, 1, len(starts) // 2, len(starts) - 1, len(starts), rng.randrange(len(starts) + 2)}:
            assert syntax._line_start(text, index) == (starts[index] if index < len(starts) else None)


@pytest.mark.anyio
async def test_replace_all_compiles_the_blocks_around_its_matches_not_the_file(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled: list[str] = []
    real = syntax._problem

    def counting(source: str) -> syntax.SyntaxProblem | None:
        compiled.append(source)
        return real(source)

    monkeypatch.setattr(syntax, "_problem", counting)
    path = root / "box.py"
    filler = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(50))
    path.write_text(filler + CLASS + filler, encoding="utf-8")
    await call.ok("Read", {"file_path": str(path)})
    args = {"file_path": str(path), "old_string": "self", "new_string": "me", "replace_all": True}
    out = await call("Edit", args)
    assert not out.is_error and "syntax error" not in out.text, out.text
    assert compiled and all(len(source) < len(CLASS) + 100 for source in compiled), [len(s) for s in compiled]
    args = {"file_path": str(path), "old_string": "(me)", "new_string": "(me", "replace_all": True}
    out = await call("Edit", args)
    assert "introduced a syntax error at line" in out.text, out.text
