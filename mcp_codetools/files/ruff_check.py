"""Pyflakes' rules on a Python text, run by the `ruff` binary from its wheel: what an edit checks with no configuration.

Why ruff: its pyflakes rules (undefined names, unused imports, redefinitions, broken `%`/`format` calls) and
pylint's error rules run in ~15 ms on a 2,000-line file, from a wheel with no runtime of its own, and ruff never
imports or runs the code it checks. basedpyright is thorough but starts a Node runtime and needs seconds on a
cold project; jedi reports syntax errors only. Type errors stay with a configured language server.

What runs is fixed here, never by the project: `--isolated` ignores every configuration file, the text goes in
on stdin under its bare file name (so nothing is read from disk), the working folder is ruff's own, and the
environment is bare. The child has its own process group, which is killed and reaped however the check ends.
A ruff binary inside a root (the server installed in the project's venv) is never run: a command may have
replaced it, and it would run outside the sandbox on the next edit.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc

from mcp_codetools.child_pipes import drain, feed, finish

SELECTED = "F,PLE"
IGNORED = "F403,F405,F541"
"""Star imports make every name they might bring a report (F403, F405); an f-string without a placeholder
(F541) is style, not a bug."""
WARNINGS = frozenset({"F401", "F402", "F811", "F841", "F842"})
"""Rules whose finding is dead code rather than a failure at run time: reported as warnings."""
OUTPUT_KEEP_BYTES = 4 * 1024 * 1024
_KEPT_ENV = ("SYSTEMROOT", "TMPDIR", "TEMP", "TMP")
_RULE = re.compile(r"[A-Z]+[0-9]+\Z")
"""A rule's code; ruff's parse errors (`invalid-syntax`) are the syntax check's business."""

Status = Literal["ok", "missing", "refused", "failed"]


@dataclass(slots=True)
class RuffAnswer:
    """What ruff found, as LSP diagnostics (0-based places), or why there is no answer."""

    status: Status
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    detail: str = ""


@functools.cache
def ruff_program() -> str | None:
    """The wheel's ruff binary, or None when the package is not installed (tests replace this)."""
    try:
        module = importlib.import_module("ruff")
        found = module.find_ruff_bin()
    except (ImportError, AttributeError, FileNotFoundError):
        return None
    return str(found)


def ruff_command(program: str, file_name: str) -> list[str]:
    """The arguments of one check of stdin, reported as `file_name` (which picks `.pyi` rules, `__init__` ones)."""
    return [
        program,
        "check",
        "--isolated",
        "--no-cache",
        "--select",
        SELECTED,
        "--ignore",
        IGNORED,
        "--output-format",
        "json",
        f"--stdin-filename={file_name}",  # one word: a name starting with "-" is not taken for an option
        "-",
    ]


def inside_roots(program: str, roots: Sequence[Path]) -> Path | None:
    """The program (as found, or the file it links to) when a root holds it."""
    found = Path(os.path.abspath(program))
    link = Path(os.path.realpath(found.parent)) / found.name
    for candidate in (link, Path(os.path.realpath(found))):
        if any(candidate.is_relative_to(root) for root in roots):
            return candidate
    return None


async def ruff_check(text: str, file_name: str, roots: Sequence[Path] = ()) -> RuffAnswer:
    """Ruff's findings on `text`. The caller bounds the time: a cancelled check kills and reaps the child."""
    program = ruff_program()
    if program is None:
        return RuffAnswer("missing", detail="the ruff package is not installed in the server's environment")
    held = inside_roots(program, roots)
    if held is not None:
        return RuffAnswer(
            "refused",
            detail=f"ruff's program {held} is inside a project folder, and a project's own program is never run "
            "(a command may have changed it); install mcp-codetools outside the roots",
        )
    try:
        process = await anyio.open_process(
            ruff_command(program, Path(file_name).name),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(Path(program).parent),
            env={name: os.environ[name] for name in _KEPT_ENV if name in os.environ},
            start_new_session=True,
        )
    except OSError as exc:
        return RuffAnswer("missing", detail=f"ruff could not start: {exc.strerror or exc}")
    out, err = bytearray(), bytearray()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(feed, process, text.encode("utf-8", "surrogatepass"))
            tg.start_soon(drain, process.stdout, out, OUTPUT_KEEP_BYTES)
            tg.start_soon(drain, process.stderr, err, 4096)
        await process.wait()
    finally:
        await finish(process)
    return parse_answer(bytes(out), process.returncode, bytes(err))


def parse_answer(out: bytes, returncode: int | None, err: bytes = b"") -> RuffAnswer:
    """Ruff's JSON report as LSP-shaped diagnostics (exit 1 only says there are findings)."""
    reason = err.decode("utf-8", "replace").strip().splitlines()
    try:
        items = json.loads(out) if returncode in (0, 1) else None
    except ValueError:
        items = None
    if not isinstance(items, list):
        return RuffAnswer("failed", detail=f"ruff exited with {returncode}{f' ({reason[-1][:200]})' if reason else ''}")
    return RuffAnswer("ok", [_diagnostic(item) for item in items if _is_rule(item)])


def _is_rule(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("code"), str) and bool(_RULE.match(item["code"]))


def _diagnostic(item: dict[str, Any]) -> dict[str, Any]:
    code = str(item["code"])
    start = item.get("location") or {}
    end = item.get("end_location") or start
    return {
        "range": {
            "start": {"line": int(start.get("row", 1)) - 1, "character": int(start.get("column", 1)) - 1},
            "end": {"line": int(end.get("row", 1)) - 1, "character": int(end.get("column", 1)) - 1},
        },
        "severity": 2 if code in WARNINGS else 1,
        "code": code,
        "source": "ruff",
        "message": f"{item.get('message', '')} ({code})",
    }
