"""The arity check (files/arity.py): Python's own complaint for each wrong call, and silence where it cannot know."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from mcp_codetools.files import arity
from mcp_codetools.files.arity import arity_problems, may_break_a_call
from mcp_codetools.files.python_checks import changed_lines
from mcp_codetools.files.ruff_check import parse_answer

PACKAGE = Path(arity.__file__).resolve().parents[1]

DEFS = """
def f(a, b=1, *, c, d=2):
    return a


class C:
    def __init__(self, x, /, y):
        self.x = x


def g(p, /, q):
    pass


def h():
    pass
"""


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("f(1, 2, 3, c=1)", "f() takes from 1 to 2 positional arguments but 3 were given"),
        ("f(c=1)", "f() missing 1 required positional argument: 'a'"),
        ("f(1)", "f() missing 1 required keyword-only argument: 'c'"),
        ("f(1, a=2, c=1)", "f() got multiple values for argument 'a'"),
        ("f(1, z=2, c=1)", "f() got an unexpected keyword argument 'z'"),
        ("C(1)", "C() missing 1 required positional argument: 'y'"),
        ("C(x=1, y=2)", "C() got some positional-only arguments passed as keyword arguments: 'x'"),
        ("h(1)", "h() takes 0 positional arguments but 1 was given"),
        ("g()", "g() missing 2 required positional arguments: 'p' and 'q'"),
    ],
)
def test_each_wrong_call_gets_pythons_message(call: str, message: str) -> None:
    source = DEFS + call + "\n"
    line = source.count("\n")
    assert [(p.line, p.message) for p in arity_problems(source)] == [(line, message)]
    try:  # the message is what the call would raise
        exec(compile(source, "<test>", "exec"), {})
    except TypeError as exc:
        assert str(exc).replace("C.__init__()", "C()").startswith(message.split(":")[0].split(" but ")[0])
    else:
        pytest.fail("the call ran")


@pytest.mark.parametrize(
    "source",
    [
        DEFS + "f(1, c=2)\nf(1, 2, c=3, d=4)\nC(1, 2)\nC(1, y=2)\ng(1, q=2)\nh()\n",
        DEFS + "f(*args)\nf(**kwargs)\nprint(1, 2, 3)\n",
        "def f(a):\n    pass\n\n\nf = print\nf(1, 2)\n",  # bound twice: which one runs is not known
        "import functools\n\n\n@functools.cache\ndef f(a):\n    pass\n\n\nf(1, 2)\n",  # decorated
        "class B:\n    pass\n\n\nclass C(B):\n    def __init__(self):\n        pass\n\n\nC(1)\n",  # a base class
        "class C:\n    def m(self):\n        pass\n\n\nC().m(1)\n",  # methods are not followed
        "def f(a):\n    pass\n\n\ndef g(f):\n    f(1, 2)\n",  # a parameter shadows it
        "def f(a):\n    pass\n\nf(1, 2\n",  # does not parse
    ],
)
def test_calls_it_cannot_judge_or_that_fit_are_left_alone(source: str) -> None:
    assert arity_problems(source) == []


def test_only_problems_the_changed_lines_can_have_made_are_kept() -> None:
    source = "def f(a):\n    pass\n\n\nf(1, 2)\nf(3, 4)\n"
    assert [p.line for p in arity_problems(source, (6, 6))] == [6]
    assert [p.line for p in arity_problems(source, (1, 1))] == [5, 6]  # the def's header changed
    assert arity_problems(source, (2, 2)) == []  # its body cannot break a call


def test_changed_lines_span_what_differs() -> None:
    assert changed_lines("a\nb\nc\n", "a\nB\nX\nc\n") == (2, 3)
    assert changed_lines("a\nb\nc\n", "a\nc\n") == (2, 2)
    assert changed_lines(None, "a\n") is None


def test_a_ruff_answer_that_is_not_its_json_report_is_a_failure_not_a_clean_file() -> None:
    assert parse_answer(b"[]", 0).status == "ok"
    failed = parse_answer(b"", 2, b"error: unexpected argument\n")
    assert failed.status == "failed" and "exited with 2 (error: unexpected argument)" in failed.detail
    assert parse_answer(b"[{", 1).status == "failed"
    syntax = b'[{"code": "invalid-syntax", "message": "x", "location": {"row": 1, "column": 1}}]'
    assert parse_answer(syntax, 1).diagnostics == []


def test_a_change_that_can_break_no_call_is_answered_without_a_parse() -> None:
    source = "def f(\n    a,\n    b,\n):\n    x = 1\n    return x\n\n\nf(1, 2)\n"
    assert not may_break_a_call(source, (5, 5))  # a body line that calls nothing of the file's
    assert may_break_a_call(source, (3, 3))  # inside the parameter list opened above
    assert may_break_a_call(source, (9, 9))  # a call of f
    assert may_break_a_call("x = 1\nclass C:\n    pass\n", (2, 2))
    removed = source.replace("    b,\n", "")  # a parameter dropped: the line after the cut stands for it
    assert [p.message for p in arity_problems(removed, changed_lines(source, removed))] == [
        "f() takes 1 positional argument but 2 were given"
    ]


def _whole_file(source: str, changed: tuple[int, int]) -> set[tuple[int, str]]:
    """What the check finds when it parses the whole file (its answer when the statements cannot tell)."""
    tree = ast.parse(source)
    signatures = arity._signatures(tree)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in signatures:
            signature = signatures[node.func.id]
            end = node.end_lineno or node.lineno
            if arity._overlaps(node.lineno, end, changed) or arity._overlaps(
                signature.first_line, signature.last_line, changed
            ):
                message = arity._mismatch(signature, node)
                if message is not None:
                    found.add((node.lineno, message))
    return found


def test_the_statements_shortcut_never_reports_what_a_whole_parse_would_not_on_real_files() -> None:
    """A parameter added to module-level defs and an argument to calls, in this package's modules."""
    rng = random.Random(7)
    shortcut = same = 0
    for path in sorted(PACKAGE.rglob("*.py"))[::5]:  # every 3rd: ~250 shortcut answers for 5.5 CPU-s; this ~150 for 2.3
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        defs = [i for i, ln in enumerate(lines) if ln.startswith("def ") and ln.endswith(":") and "()" not in ln]
        calls = [i for i, ln in enumerate(lines) if ln.startswith("    ") and ln.endswith(")") and "()" not in ln]
        for i in rng.sample(defs, min(3, len(defs))) + rng.sample(calls, min(3, len(calls))):
            line = lines[i]
            if line.startswith("def "):
                changed = line.replace("(", "(extra, ", 1)
            else:
                changed = line[: line.rfind(")")] + ", 99)"
            new = "\n".join([*lines[:i], changed, *lines[i + 1 :]])
            try:
                whole = _whole_file(new, (i + 1, i + 1))
            except SyntaxError:
                continue
            quick = arity._Statements(new).problems((i + 1, i + 1))
            if quick is None:
                continue
            shortcut += 1
            found = {(p.line, p.message) for p in quick}
            assert found <= whole, (path, i, found - whole)
            same += found == whole
    assert shortcut > 100 and same >= 0.9 * shortcut, (shortcut, same)


def test_the_statements_shortcut_finds_every_call_a_changed_signature_breaks() -> None:
    source = (
        '"""Doc.\n\nThe `area` helper.\n"""\n\n\n@decorated\ndef other():\n    return area(1, 2)\n\n\n'
        "def area(w, h):\n    return w * h\n\n\nclass Box:\n    def size(self):\n        return area(3, 4)\n\n\n"
        "print(\n    area(5, 6)\n)\n"
    )
    broken = source.replace("def area(w, h):", "def area(w, h, d):")
    line = broken.split("\n").index("def area(w, h, d):") + 1
    found = arity._Statements(broken).problems((line, line))
    assert found is not None
    assert [p.line for p in found] == [9, 18, 22]
    assert {p.message for p in found} == {"area() missing 1 required positional argument: 'd'"}
    shadowed = broken + "\n\ndef user(area):\n    return area(1)\n"
    assert arity._Statements(shadowed).problems((line, line)) == []  # a parameter named area: bound twice
