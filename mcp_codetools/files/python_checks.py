"""The semantic checks every edit of a Python file gets with no configuration: ruff's rules and the arity check.

Both texts, before and after the edit, are checked at once (two ruff processes and a parse in a worker thread),
so the caller can keep only what the edit introduced. Everything ends by the caller's deadline; what had not
answered by then is said to be missing, never waited for. Ruff's findings on the last few texts are kept by
digest: the text after one edit is the text before the next, so a run of edits pays one ruff run each.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mcp_codetools.files.arity import ArityProblem, arity_problems
from mcp_codetools.files.ruff_check import RuffAnswer, ruff_check
from mcp_codetools.files.syntax import MAX_CHECK_CHARS

logger = logging.getLogger(__name__)

KEPT_ANSWERS = 32
"""Ruff answers kept by (file name, digest of the text): a pure function's results, so sharing them is safe."""
_answers: OrderedDict[tuple[str, str], RuffAnswer] = OrderedDict()


@dataclass(slots=True)
class CheckedTexts:
    """Diagnostics (LSP-shaped, 0-based) of the text before and after; `ruff` None: it did not answer in time."""

    before: list[dict[str, Any]] = field(default_factory=list)
    after: list[dict[str, Any]] = field(default_factory=list)
    ruff: RuffAnswer | None = None
    arity_done: bool = False


async def check_texts(
    old: str | None, new: str, file_name: str, deadline: float, roots: Sequence[Path] = ()
) -> CheckedTexts:
    """Run the checks on both texts until `deadline` (`time.monotonic()`); `old` None: a new file.

    `roots`: the workspace's, where a ruff binary is never run from.
    """
    checked = CheckedTexts()
    if len(new) > MAX_CHECK_CHARS:
        checked.ruff = RuffAnswer("failed", detail=f"the file is over {MAX_CHECK_CHARS // 1024 // 1024} MB")
        return checked
    found: dict[str, RuffAnswer] = {}

    async def ruff(which: str, text: str) -> None:
        key = (file_name, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
        answer = _answers.get(key)
        if answer is None:
            try:
                answer = await ruff_check(text, file_name, roots)
            except Exception as exc:  # a bug here must not fail an edit that was made
                logger.exception("ruff check of %s failed", file_name)
                answer = RuffAnswer("failed", detail=f"the ruff check failed ({type(exc).__name__})")
            if answer.status == "ok":
                _answers[key] = answer
                while len(_answers) > KEPT_ANSWERS:
                    _answers.popitem(last=False)
        else:
            _answers.move_to_end(key)
        found[which] = answer

    async def arity() -> None:
        try:
            before, after = await anyio.to_thread.run_sync(_arity_both, old, new, abandon_on_cancel=True)
        except Exception:  # a bug here must not fail an edit that was made
            logger.exception("arity check of %s failed", file_name)
            return
        checked.before += before
        checked.after += after
        checked.arity_done = True

    with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ruff, "after", new)
            if old is not None:
                tg.start_soon(ruff, "before", old)
            tg.start_soon(arity)
    after = found.get("after")
    before = found.get("before") if old is not None else RuffAnswer("ok")
    if after is None or before is None:
        checked.ruff = None
    elif before.status != "ok":
        checked.ruff = before  # without the old findings every finding would look new
    else:
        checked.ruff = after
        checked.before += before.diagnostics
        checked.after += after.diagnostics
    return checked


def changed_lines(old: str | None, new: str) -> tuple[int, int] | None:
    """The 1-based lines of `new` that differ from `old` (None: all of them; an empty range for a deletion)."""
    if old is None:
        return None
    a, b = old.split("\n"), new.split("\n")
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    # A deletion leaves no changed line in `new`: the lines on either side of the cut stand for it.
    return head + 1, max(head + 1, len(b) - tail)


def _arity_both(old: str | None, new: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The arity problems after the edit where the change can have made them, and (only if any) those before.

    One found after that was there before sat in the same changed stretch of the old text (the same call, or
    the same header), so the old text is checked over its own changed lines.
    """
    after = arity_problems(new, changed_lines(old, new))
    if not after or old is None:
        return [], [_diagnostic(p) for p in after]
    return [_diagnostic(p) for p in arity_problems(old, changed_lines(new, old))], [_diagnostic(p) for p in after]


def _diagnostic(problem: ArityProblem) -> dict[str, Any]:
    place = {"line": problem.line - 1, "character": problem.column - 1}
    return {
        "range": {"start": place, "end": place},
        "severity": 1,
        "code": "arity",
        "source": "arity",
        "message": problem.message,
    }
