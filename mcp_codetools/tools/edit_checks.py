"""What an edit did to the file's health: the syntax error it introduced, and the new problems checkers find.

All of them look only at what the edit changed. The syntax check (`files/syntax.py`) runs before the write, so that
`files.syntax_check = "refuse"` can leave the file as it was; its report rides on the result after the write.
Diagnostics are asked of a language server only when one is already running for the file (the LSP tool
started it): the server is sent the old text if it has not seen it, then the new, and only a publication
for the new version is read, so the answer is never about text the server saw before the edit. Sending the
text, waiting and writing the note all fit in `lsp.diagnostics_wait_s` (sending only queues it), and past it the
result says the diagnostics were not ready; the list shows what is new, at most `MAX_DIAGNOSTIC_LINES` lines.
A Python file needs no server: ruff's rules and the arity check (`files/python_checks.py`) run on the text before
and after, in the same wait, beside any server.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio

from mcp_codetools.errors import SyntaxIntroducedError
from mcp_codetools.files.editing import create_file, created_message
from mcp_codetools.files.paths import is_within
from mcp_codetools.files.python_checks import CheckedTexts, check_texts
from mcp_codetools.files.syntax import PYTHON_SUFFIXES, SyntaxProblem, introduced_error, surely_too_large
from mcp_codetools.files.text import clip_line
from mcp_codetools.lsp.wire import ServerGone
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools.base import ToolOutput

MAX_DIAGNOSTIC_LINES = 10
RESULT_RESERVE_S = 0.1
"""Of `lsp.diagnostics_wait_s` (at most a tenth), the part the waits leave for writing the result: on a loaded
machine a waiter wakes late, and the note was written up to 4 ms past a 1.5 s setting at load 10."""
_SNIPPET_CONTEXT = 2
_SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}
_LINE_NUMBER = re.compile(r"\bline \d+")
_MAGIC = re.compile(r"^\s*[%!]")
"""IPython lines (`%timeit`, `!pip install`): not Python, and not the edit's fault."""


def applies(session: CodeSession, path: Path, new_body: str | bytes | bytearray = "") -> bool:
    """Whether either check can say anything about this file (else the tools skip decoding for them).

    `new_body`: the file's new content; over the Python checks' size limit they would say nothing, and decoding
    a 10 MB file for them cost a MultiEdit there half its time.
    """
    if path.suffix.lower() in PYTHON_SUFFIXES and not surely_too_large(new_body):
        return session.settings.syntax_check != "off" or session.settings.lsp_diagnostics_wait_s > 0
    return session.language_servers_started and session.settings.lsp_diagnostics_wait_s > 0


def syntax_check(
    settings: Settings, path: Path, old: str | None, new: str, first: int = 0, last: int | None = None
) -> SyntaxProblem | None:
    """The syntax error the edit introduces into a Python file (None: none, not Python, or checking is off).

    `first`/`last` are the 0-based lines of `new` the change covers, when it is one stretch.

    Raises:
        SyntaxIntroducedError: there is one and the settings say to refuse such edits.
    """
    if settings.syntax_check == "off" or path.suffix.lower() not in PYTHON_SUFFIXES:
        return None
    problem = introduced_error(old, new, first, last)
    if problem is not None and settings.syntax_check == "refuse":
        raise SyntaxIntroducedError(
            problem.describe("The edit was not made: it would introduce a syntax error")
            + "\nThe text would have been:\n"
            + _snippet(new, problem.line)
            + "\nThe file is unchanged. Fix the new text and call the tool again."
        )
    return problem


def cell_syntax_check(settings: Settings, path: Path, old: str | None, new: str) -> SyntaxProblem | None:
    """`syntax_check` for a notebook's Python code cell, with IPython's `%` and `!` lines left out."""
    return syntax_check(settings, path.with_suffix(".py"), _unmagic(old), _unmagic(new) or "")


async def create(session: CodeSession, path: Path, content: str) -> ToolOutput:
    """Create a new file with `content` and say so, with its checks: the one create of Edit and Write."""
    problem = syntax_check(session.settings, path, None, content)
    size = await create_file(path, content, session.workspace, session.history, session.ledger)
    created = ToolOutput(created_message(path, content), meta={"path": str(path), "type": "create", "bytes": size})
    add_syntax_note(created, problem)
    await add_diagnostics_note(created, session, path, None, content, broken=problem is not None)
    return created


def add_syntax_note(output: ToolOutput, problem: SyntaxProblem | None, where: str = "") -> None:
    """Append the introduced syntax error to a successful result (and its place to `_meta`)."""
    if problem is None:
        return
    lead = f"Warning: the edit introduced a syntax error{where}"
    output.text += "\n\n" + problem.describe(lead) + "\nThe file was written; fix it with another edit."
    output.meta["syntaxError"] = {"line": problem.line, "column": problem.column, "message": problem.message}


async def add_diagnostics_note(
    output: ToolOutput, session: CodeSession, path: Path, old: str | None, new: str, *, broken: bool = False
) -> None:
    """Append the problems the edit introduced: the Python checks' (no configuration needed) and a running server's.

    Both run at once within `lsp.diagnostics_wait_s`. `broken`: the edit introduced a syntax error, already
    reported, and the Python checks would only add noise about the half-parsed text.
    """
    wait_s = session.settings.lsp_diagnostics_wait_s
    if wait_s <= 0:
        return
    deadline = time.monotonic() + wait_s - min(RESULT_RESERVE_S, wait_s / 10)
    checked: list[CheckedTexts] = []

    async def python_checks() -> None:
        checked.append(await check_texts(old, new, path.name, deadline, session.workspace.roots))

    async with anyio.create_task_group() as tg:
        if path.suffix.lower() in PYTHON_SUFFIXES and not broken:
            tg.start_soon(python_checks)
        reported = await _add_server_diagnostics(output, session, path, old, new, deadline)
    if checked:
        _add_python_note(output, checked[0], path, new, wait_s, reported)


def _add_python_note(
    output: ToolOutput, checked: CheckedTexts, path: Path, new: str, wait_s: float, reported: set[int]
) -> None:
    """Append what ruff and the arity check found new, except on lines the language server already spoke of."""
    fresh = [item for item in introduced(checked.before, checked.after) if _line(item) not in reported]
    answer = checked.ruff
    status = "timeout" if answer is None else answer.status
    output.meta["pythonChecks"] = {"ruff": status, "arity": checked.arity_done, "new": len(fresh)}
    if fresh:
        lead = f"Python checks (ruff, call arity) found {len(fresh)} new problem{'s' if len(fresh) != 1 else ''}:"
        output.text += "\n\n" + render_diagnostics(fresh, path, new, lead)
    if answer is None:
        output.text += (
            f"\n\nDiagnostics were not ready: ruff had not checked the new text within {wait_s:g} s "
            "(lsp.diagnostics_wait_s); undefined names and unused imports were not checked."
        )
    elif answer.status != "ok":
        output.text += (
            f"\n\nDiagnostics were unavailable: {answer.detail}. Undefined names and unused imports were not checked."
        )


async def _add_server_diagnostics(
    output: ToolOutput, session: CodeSession, path: Path, old: str | None, new: str, deadline: float
) -> set[int]:
    """Append a running language server's new diagnostics; returns the 0-based lines they are on."""
    if not session.language_servers_started:
        return set()
    root = next((r for r in session.workspace.roots if is_within(path, r)), None)
    client = session.language_servers.running(path, root) if root is not None else None
    if client is None or not client.spec.diagnostics:
        return set()
    try:
        before: list[dict[str, Any]] | None = []
        if old is not None and not client.has_seen(path, old):
            version = await client.sync(path, old)
            before = await client.diagnostics_for(path, version, (deadline - time.monotonic()) / 2)
        elif old is not None:
            before = client.diagnostics(path) or []
        version = await client.sync(path, new)
        after = await client.diagnostics_for(path, version, max(0.0, deadline - time.monotonic()))
    except ServerGone:
        return set()
    wait_s = session.settings.lsp_diagnostics_wait_s
    if after is None:
        output.meta["diagnostics"] = {"server": client.spec.name, "answered": False}
        output.text += (
            f"\n\nDiagnostics were not ready: the {client.spec.name} language server had not checked the new text "
            f"within {wait_s:g} s (lsp.diagnostics_wait_s)."
        )
        return set()
    fresh = introduced(before or [], after)
    output.meta["diagnostics"] = {"server": client.spec.name, "answered": True, "new": len(fresh), "all": len(after)}
    if fresh:
        lead = (
            f"The {client.spec.name} language server reports {len(fresh)} new problem{'s' if len(fresh) != 1 else ''}:"
        )
        output.text += "\n\n" + render_diagnostics(fresh, path, new, lead)
    return {_line(item) for item in fresh}


def introduced(before: Iterable[dict[str, Any]], after: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The diagnostics of `after` that `before` did not have, ignoring where they are (lines shift)."""
    remaining = Counter(_key(item) for item in before)
    fresh = []
    for item in after:
        key = _key(item)
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            fresh.append(item)
    return fresh


def render_diagnostics(items: list[dict[str, Any]], path: Path, text: str, lead: str) -> str:
    """`lead`, then the new diagnostics as `line:col severity: message` with the line's text, at most 10 lines."""
    lines = text.split("\n")
    ordered = sorted(items, key=lambda d: (_severity(d), _line(d)))
    shown = ordered[: MAX_DIAGNOSTIC_LINES // 2]
    out = [lead]
    for item in shown:
        line = _line(item)
        column = int(((item.get("range") or {}).get("start") or {}).get("character", 0)) + 1
        message = " ".join(str(item.get("message", "")).split())
        out.append(f"{path.name}:{line + 1}:{column} {_SEVERITY.get(_severity(item), 'error')}: {clip_line(message)}")
        if 0 <= line < len(lines):
            out.append(f"  {clip_line(lines[line].strip())}")
    if len(items) > len(shown):
        out.append(f"… and {len(items) - len(shown)} more (the LSP tool and Read show the file).")
    return "\n".join(out[: MAX_DIAGNOSTIC_LINES + 1])


def _key(item: dict[str, Any]) -> tuple[Any, ...]:
    # Where a message names a line ("redefinition of unused `os` from line 36"), an edit above moves it.
    message = _LINE_NUMBER.sub("line N", " ".join(str(item.get("message", "")).split()))
    return (_severity(item), message, str(item.get("code", "")))


def _severity(item: dict[str, Any]) -> int:
    value = item.get("severity")
    return value if isinstance(value, int) else 1


def _line(item: dict[str, Any]) -> int:
    return int(((item.get("range") or {}).get("start") or {}).get("line", 0))


def _snippet(text: str, line: int) -> str:
    lines = text.split("\n")
    first = max(1, line - _SNIPPET_CONTEXT)
    last = min(len(lines), line + _SNIPPET_CONTEXT)
    return "\n".join(f"{n}\t{clip_line(lines[n - 1])}" for n in range(first, last + 1))


def _unmagic(source: str | None) -> str | None:
    if source is None:
        return None
    return "\n".join("" if _MAGIC.match(line) or line.rstrip().endswith("?") else line for line in source.split("\n"))
