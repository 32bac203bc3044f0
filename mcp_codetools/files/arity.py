"""Calls with the wrong arguments for a function or class defined in the same Python file.

Ruff does not check calls, and a language server that does is not there by default, so this small check covers
the common case an edit breaks: a function's parameters change and its callers in the file do not, or a new
call passes one argument too many. It is sound before it is complete. A call is checked only when its name is
bound exactly once in the whole file, by an undecorated module-level `def`, or by an undecorated class with no
bases, keywords or `__new__` whose undecorated `__init__` gives the signature; calls with `*args` or `**kwargs`
are skipped. Methods, imported functions and anything decorated are not checked (Python's own message is what
a call that fails at run time would raise).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections import Counter
from dataclasses import dataclass

Function = ast.FunctionDef | ast.AsyncFunctionDef
HEADER_LOOKBACK = 60
"""Lines above a change searched for the `def` whose parameter list the change may sit in."""
_TOP_LEVEL = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+(\w+)", re.M)
_DEF_START = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]")
_DEF_OR_CLASS = re.compile(r"\b(?:def|class)\b")


@dataclass(frozen=True, slots=True)
class ArityProblem:
    """A call that would raise TypeError: 1-based line and column, and Python's wording."""

    line: int
    column: int
    message: str


@dataclass(frozen=True, slots=True)
class _Signature:
    name: str
    positional: tuple[str, ...]
    positional_only: int
    defaults: int
    keyword_only: tuple[str, ...]
    required_keywords: frozenset[str]
    star_args: bool
    star_kwargs: bool
    first_line: int
    last_line: int
    """The lines of the `def` header: a change there can make every call wrong, a change in the body cannot."""


def arity_problems(source: str, changed: tuple[int, int] | None = None) -> list[ArityProblem]:
    """The calls in `source` that do not fit their target's parameters (none when it does not parse).

    `changed` (1-based first and last line) keeps only problems the change can have made: the call or the
    target's `def` lies on those lines. Parsing a 2,000-line file holds the interpreter for ~20-50 ms, so a
    change that can have made none (see `may_break_a_call`) is answered without it, and one that can is
    answered from the few top-level statements it concerns (`_Statements`) whenever they parse alone.
    """
    if changed is not None and not may_break_a_call(source, changed):
        return []
    if changed is not None:
        quick = _Statements(source).problems(changed)
        if quick is not None:
            return quick
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    signatures = _signatures(tree)
    if not signatures:
        return []
    problems = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        signature = signatures.get(node.func.id)
        if signature is None:
            continue
        if changed is not None and not (
            _overlaps(node.lineno, node.end_lineno or node.lineno, changed)
            or _overlaps(signature.first_line, signature.last_line, changed)
        ):
            continue
        message = _mismatch(signature, node)
        if message is not None:
            problems.append(ArityProblem(node.lineno, node.col_offset + 1, message))
    return problems


def may_break_a_call(source: str, changed: tuple[int, int]) -> bool:
    """Whether the changed lines could hold a checked call or a `def` header: False only when they cannot.

    They can when they name a module-level function or class followed by `(`, hold `def` or `class`, or sit
    in a `def`'s parameter list that started above them (no line from that `def` on ends with `:`).
    """
    lines = source.split("\n")
    first, last = max(1, changed[0]), min(len(lines), changed[1])
    region = "\n".join(lines[first - 1 : last])
    if _DEF_OR_CLASS.search(region):
        return True
    names = set(_TOP_LEVEL.findall(source))
    if names and re.search(r"\b(?:" + "|".join(map(re.escape, names)) + r")\s*\(", region):
        return True
    for above in range(first - 2, max(-1, first - 2 - HEADER_LOOKBACK), -1):
        line = lines[above].split("#", 1)[0].rstrip()
        if line.endswith(":"):
            return False  # a header or a block opened above the change and closed before it
        if _DEF_START.match(line):
            return True
    return first - 1 > HEADER_LOOKBACK  # nothing closed within reach: perhaps a very long parameter list


def _overlaps(first: int, last: int, changed: tuple[int, int]) -> bool:
    return first <= changed[1] and changed[0] <= last


def _signatures(tree: ast.Module) -> dict[str, _Signature]:
    bound = _bindings(tree)
    found: dict[str, _Signature] = {}
    for node in tree.body:
        if bound[getattr(node, "name", "")] == 1:
            signature = _eligible(node)
            if signature is not None:
                found[signature.name[:-2]] = signature
    return found


def _eligible(node: ast.stmt) -> _Signature | None:
    """The signature of a module-level statement that defines a checked function or class (the name aside)."""
    if getattr(node, "decorator_list", True):
        return None
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _signature(node.name, node, drop_first=False)
    if isinstance(node, ast.ClassDef) and not node.bases and not node.keywords:
        init = _constructor(node)
        if init is not None and (init.args.posonlyargs or init.args.args):
            return _signature(node.name, init, drop_first=True)
    return None


def _constructor(node: ast.ClassDef) -> Function | None:
    methods = [item for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
    named = {item.name for item in methods}
    inits = [item for item in methods if item.name == "__init__"]
    if "__new__" in named or len(inits) != 1 or inits[0].decorator_list:
        return None
    assigned = _bindings(ast.Module(body=node.body, type_ignores=[]))
    return inits[0] if assigned["__init__"] == 1 and assigned["__new__"] == 0 else None


def _signature(name: str, function: Function, drop_first: bool) -> _Signature:
    """The parameters a call must fit (`drop_first`: `self`, for a constructor); its lines are the `def`'s header."""
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    positional_only = len(args.posonlyargs)
    if drop_first:
        positional = positional[1:]
        positional_only = max(0, positional_only - 1)
    keyword_only = tuple(a.arg for a in args.kwonlyargs)
    required = frozenset(a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None)
    return _Signature(
        f"{name}()",
        tuple(positional),
        positional_only,
        min(len(args.defaults), len(positional)),
        keyword_only,
        required,
        args.vararg is not None,
        args.kwarg is not None,
        function.lineno,
        max(function.lineno, function.body[0].lineno - 1),
    )


def _bindings(tree: ast.AST) -> Counter[str]:
    """Every name bound anywhere in the tree, in any scope, with how often: only a name bound once is trusted."""
    counts: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            counts[node.name] += 1
        elif isinstance(node, ast.arg):
            counts[node.arg] += 1
        elif isinstance(node, ast.Import | ast.ImportFrom):
            counts.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            counts.update(node.names)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            counts[node.name] += 1
        elif isinstance(node, ast.MatchMapping) and node.rest:
            counts[node.rest] += 1
    return counts


def _mismatch(signature: _Signature, call: ast.Call) -> str | None:
    """Python's TypeError message for this call, or None when it fits (or cannot be told)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    name, given = signature.name, len(call.args)
    most = len(signature.positional)
    if given > most and not signature.star_args:
        least = most - signature.defaults
        takes = f"{most}" if least == most else f"from {least} to {most}"
        was = "was" if given == 1 else "were"
        return f"{name} takes {takes} positional argument{_s(most)} but {given} {was} given"
    by_keyword = [k.arg for k in call.keywords if k.arg is not None]
    for word in by_keyword:
        index = signature.positional.index(word) if word in signature.positional else -1
        if 0 <= index < given:
            return f"{name} got multiple values for argument '{word}'"
        if 0 <= index < signature.positional_only and not signature.star_kwargs:
            return f"{name} got some positional-only arguments passed as keyword arguments: '{word}'"
        if index < 0 and word not in signature.keyword_only and not signature.star_kwargs:
            return f"{name} got an unexpected keyword argument '{word}'"
    required = signature.positional[: most - signature.defaults]
    missing = [p for i, p in enumerate(required) if i >= given and p not in by_keyword]
    if missing:
        return f"{name} missing {len(missing)} required positional argument{_s(len(missing))}: {_names(missing)}"
    missing = sorted(signature.required_keywords - set(by_keyword), key=signature.keyword_only.index)
    if missing:
        return f"{name} missing {len(missing)} required keyword-only argument{_s(len(missing))}: {_names(missing)}"
    return None


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _names(names: list[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


class _Statements:
    """A file seen as its top-level statements, each parsed alone and only when a change concerns it.

    A statement starts at a line with code in column 0 (decorators join their `def`; `else`, `except` and
    closing brackets continue the one above). Its parse is trusted only when no triple-quoted string is
    open above it and it parses; anything else answers None, and the caller parses the whole file.
    Whether a name is bound once is read from the text, more strictly than the tree would: every other
    mention of it must be a call, an attribute, a quoted name, in a comment, or followed by a word.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.split("\n")
        self.offsets = [0, *itertools.accumulate(len(line) + 1 for line in self.lines)]
        self.starts = _statement_starts(self.lines)
        self.parsed: dict[int, list[ast.stmt] | None] = {}

    def problems(self, changed: tuple[int, int]) -> list[ArityProblem] | None:
        """What `arity_problems(source, changed)` finds, or None when the statements cannot tell."""
        first, last = changed
        touched: list[ast.stmt] = []
        for start in {self._start_of(line) for line in range(first - 1, min(last, len(self.lines)))}:
            body = self._parse(start)
            if body is None:
                return None
            touched += body
        calls = _calls(touched, [changed])
        redefined = {}
        for node in touched:
            signature = _eligible(node) if isinstance(node, _DEFINES) else None
            if signature is not None and _overlaps(signature.first_line, signature.last_line, changed):
                redefined[signature.name[:-2]] = signature
        wanted = {call.func.id for call in calls if isinstance(call.func, ast.Name)} | set(redefined)
        signatures = {}
        for name in wanted & set(_TOP_LEVEL.findall(self.source)):
            signature = redefined.get(name) or self._signature(name)
            if signature is None or not self._bound_once(name):
                continue
            signatures[name] = signature
        for name in set(redefined) & set(signatures):
            sites = {self._line_at(m.start()) + 1 for m in _call_of(name).finditer(self.source)}
            for start in {self._start_of(line - 1) for line in sites}:
                body = self._parse(start)
                if body is None:
                    return None
                calls += _calls(body, [(line, line) for line in sites])
        found: dict[tuple[int, int], ArityProblem] = {}
        for call in calls:
            signature = signatures.get(call.func.id) if isinstance(call.func, ast.Name) else None
            message = _mismatch(signature, call) if signature is not None else None
            if message is not None:
                found[call.lineno, call.col_offset] = ArityProblem(call.lineno, call.col_offset + 1, message)
        return [found[key] for key in sorted(found)]

    def _signature(self, name: str) -> _Signature | None:
        match = re.search(rf"^(?:async[ \t]+def|def|class)[ \t]+{re.escape(name)}\b", self.source, re.M)
        body = self._parse(self._start_of(self._line_at(match.start()))) if match else None
        node = next((n for n in body or () if getattr(n, "name", None) == name), None)
        return _eligible(node) if node is not None else None

    def _bound_once(self, name: str) -> bool:
        defined = 0
        for match in re.finditer(rf"(?<![\w.]){re.escape(name)}\b", self.source):
            head = self.source[self.offsets[self._line_at(match.start())] : match.start()]
            if _DEF_HEAD.fullmatch(head.lstrip(" \t")):
                if head[:1] in (" ", "\t"):
                    return False  # a nested `def` or `class` of the same name
                defined += 1
            elif _CALL_TAIL.match(self.source, match.end()) or _PROSE_TAIL.match(self.source, match.end()):
                continue  # a call, or a word among words (`for x in`, `case x if` are bindings: excluded)
            elif head.lstrip(" \t").startswith("#"):
                continue
            elif not (head[-1:] in ("'", '"', "`") and self.source[match.end() : match.end() + 1] == head[-1:]):
                return False  # assigned, imported, a parameter, a keyword: perhaps bound again
        return defined == 1

    def _line_at(self, offset: int) -> int:
        return bisect.bisect_right(self.offsets, offset) - 1

    def _start_of(self, line: int) -> int:
        return self.starts[max(0, bisect.bisect_right(self.starts, line) - 1)] if self.starts else 0

    def _parse(self, start: int) -> list[ast.stmt] | None:
        if start not in self.parsed:
            self.parsed[start] = self._parse_at(start)
        return self.parsed[start]

    def _parse_at(self, start: int) -> list[ast.stmt] | None:
        offset = self.offsets[start]
        if self.source.count('"""', 0, offset) % 2 or self.source.count("'''", 0, offset) % 2:
            return None  # the statement may sit inside a string
        index = bisect.bisect_right(self.starts, start)
        end = self.starts[index] if index < len(self.starts) else len(self.lines)
        try:
            # Blank lines before it give the file's line numbers (cheaper than walking the tree to shift them).
            tree = ast.parse("\n" * start + "\n".join(self.lines[start:end]))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        return tree.body


_DEFINES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_DEF_HEAD = re.compile(r"(?:async[ \t]+)?(?:def|class)[ \t]+")
_CALL_TAIL = re.compile(r"[ \t]*\(")
_PROSE_TAIL = re.compile(r"[ \t]+(?!(?:in|if)\b)[A-Za-z_]")
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b|[)\]}]")


def _statement_starts(lines: list[str]) -> list[int]:
    starts: list[int] = []
    decorated = False
    for index, line in enumerate(lines):
        if not line or line[0] in " \t#" or _CONTINUES.match(line):
            continue
        if not decorated:
            starts.append(index)
        decorated = line.startswith("@")
    return starts


def _calls(body: list[ast.stmt], spans: list[tuple[int, int]]) -> list[ast.Call]:
    """The calls of a name in `body`, looking only into the nodes that overlap one of `spans` (1-based lines)."""
    found: list[ast.Call] = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        first = getattr(node, "lineno", None)
        if first is not None:
            last = getattr(node, "end_lineno", None) or first
            if not any(_overlaps(first, last, span) for span in spans):
                continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _call_of(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){re.escape(name)}[ \t]*\(")
