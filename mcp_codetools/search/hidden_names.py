"""Which names rg printed deny rules hide, judged cheaply enough to run on every record.

Only what lies below a pinned folder is judged (see `hidden_names`): one file searched was checked already.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mcp_codetools.search.targets import PinnedTarget


class Hides(Protocol):
    """A deny-rule test for absolute real paths (policy/hiding.py's Hider)."""

    literals: tuple[str, ...] | None

    def __call__(self, path: str) -> bool:
        """Whether a deny rule hides `path`."""


@dataclass(frozen=True)
class HiddenNames:
    """Which names, as rg printed them, deny rules hide; see `hidden_names`."""

    is_hidden: Callable[[bytes], bool]
    literals: tuple[bytes, ...] | None
    """Byte strings one of which every hidden name holds, so a name without any is visible unasked;
    None when any name may be hidden."""


def hidden_names(target: PinnedTarget, hidden: Hides | None, *, prefixed: bool = True) -> HiddenNames | None:
    """Which names rg prints (`prefixed`: as `run_rg_on` shows them, with the target's prefix) a deny rule hides.

    None when nothing can be hidden (no rule, or one file searched: its path was already checked), so
    the common case costs nothing. A name rg printed is relative to the folder it ran in; the rules judge
    the real absolute path, which is the folder's real path joined to it (rg follows no symlinks). A name
    without the prefix cannot be placed, so it counts as hidden.
    """
    if hidden is None or not target.is_dir:
        return None
    prefix = target.rename()[1] if prefixed else b""
    start = len(prefix)
    base = str(target.real).rstrip("/") + "/"

    def is_hidden(name: bytes) -> bool:
        if not name.startswith(prefix):
            return True
        return hidden(base + os.fsdecode(name[start:]))

    # A literal has no slash, so it lies wholly in the folder's path or wholly in the name; in the folder's
    # path, every name holds it.
    literals = hidden.literals
    if literals is not None and any(literal in base for literal in literals):
        literals = None
    return HiddenNames(is_hidden, None if literals is None else tuple(os.fsencode(lit) for lit in literals))
