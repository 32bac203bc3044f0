"""What a project file may do to each setting: set it, only move it the tight way, or nothing at all.

The project file lives where the model can write, so every setting declares here what a project may do
to it (`PROJECT_MAY`): a limit or a format it sets freely; a setting that confines the model it may only
move the tight way from what the defaults and the user's file said (the sandbox on, its network off, more
variables hidden, lower container limits); what names a program or an image to run it may not set. A value
it may not set is ignored, logged and listed by `mcp-codetools config`. A setting missing from the table
counts as user-only, and a test fails on it.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from mcp_codetools.settings.printing import shown

Tighten = Callable[[Any, Any, Sequence[Path]], tuple[Any, str | None]]
"""`(current, proposed, roots) -> (value, why the proposed one was refused or None)`."""
FREE: Literal["free"] = "free"
"""A limit or a format: a project file sets it as the user's would."""
USER_ONLY: Literal["user-only"] = "user-only"
"""It names a program or an image to run: only the user's config (or a later source) sets it."""


def _by_rank(*order: Any) -> Tighten:
    """A tightening rule for a value with a fixed order, loosest first; a value outside it is not the project's."""

    def tighten(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
        if proposed == current:
            return current, None
        if current not in order:
            return current, f"only the user's config may move it away from {shown(current)}"
        if proposed not in order:
            return current, f"only the user's config may choose {shown(proposed)}"
        if order.index(proposed) >= order.index(current):
            return proposed, None
        return current, "looser than " + shown(current)

    return tighten


def _limit(unlimited: Callable[[Any], bool], size: Callable[[Any], float]) -> Tighten:
    """A resource limit where some value means none: the project may set one, or a lower one, never none."""

    def tighten(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
        if proposed == current:
            return current, None
        if unlimited(proposed):
            return current, f"it removes the limit of {shown(current)}"
        if unlimited(current) or size(proposed) <= size(current):
            return proposed, None
        return current, f"higher than {shown(current)}"

    return tighten


_MEMORY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)i?b?\s*", re.IGNORECASE)


def memory_bytes(text: str) -> float:
    """A container memory limit in bytes, as the engines read `--memory` (`512m`, `4g`, `4GiB`); 0 for none.

    Raises:
        ValueError: the engine's units cannot read it.
    """
    if not text.strip():
        return 0
    match = _MEMORY.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a memory size")
    return float(match.group(1)) * (1 << 10 * "bkmgtp".index(match.group(2).lower() or "b"))


def _no_memory_limit(value: Any) -> bool:
    return memory_bytes(value) == 0


def _no_count_limit(value: Any) -> bool:
    return bool(value <= 0)


def _more(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    return (proposed, None) if proposed >= current else (current, f"lower than {current}")


def _fewer(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    return (proposed, None) if proposed <= current else (current, f"higher than {current}")


def _with_all_of(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    """A list that may only grow: it adds up, as rule lists do (the project's entries join the earlier ones)."""
    if isinstance(current, frozenset):
        return current | proposed, None
    return (*current, *(v for v in proposed if v not in current)), None


def _only_some_of(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    """A list that may only shrink: entries not already given are not added."""
    added = [v for v in proposed if v not in current]
    kept = tuple(v for v in proposed if v in current)
    why = f"it adds {shown(added)}, which only the user's config or the command line may pass" if added else None
    return kept, why


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    if proposed == current or _loopback(proposed):
        return proposed, None
    return current, "only a loopback address may be set by a project file"


def _audit_log(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    if current is not None and proposed != current:
        return current, f"the audit log is already {shown(current)}"
    inside = any(Path(os.path.abspath(proposed)).is_relative_to(os.path.abspath(r)) for r in roots)
    if proposed is not None and not inside:
        return current, "a project file may only put the audit log inside the roots"
    return proposed, None


PROJECT_MAY: dict[str, Tighten | Literal["free", "user-only"]] = {
    "max_concurrency": FREE,
    "queue_timeout_s": FREE,
    "max_result_tokens": FREE,
    "read_default_lines": FREE,
    "grep_head_limit": FREE,
    "grep_max_result_chars": FREE,
    "glob_max_files": FREE,
    "glob_no_ignore": FREE,
    "bash_default_timeout_ms": FREE,
    "bash_max_timeout_ms": FREE,
    "bash_return_after_s": FREE,
    "bash_output_chars": FREE,
    "bash_env_exclude": _with_all_of,
    "spill_budget_bytes": FREE,
    "hard_links": _by_rank("write-through", "refuse"),
    "edit_recovery": FREE,
    "syntax_check": FREE,
    "lsp_timeout_s": FREE,
    "lsp_first_call_s": FREE,
    "lsp_diagnostics_wait_s": FREE,
    "lsp_servers": USER_ONLY,
    "history_max_bytes": FREE,
    "history_max_entries": FREE,
    "image_max_side": FREE,
    "image_max_pixels": FREE,
    "image_max_bytes": FREE,
    "result_max_images": FREE,
    "pdf_max_pages": FREE,
    "pdf_pages_without_range": FREE,
    "notebook_output_chars": FREE,
    "http_host": _host,
    "http_port": FREE,
    "session_idle_timeout_s": FREE,
    "http_max_sessions": _fewer,
    "http_max_states": _fewer,
    "http_replica": FREE,
    "start_snapshot": FREE,
    "audit_log": _audit_log,
    "audit_log_max_bytes": _more,
    "audit_log_keep": _more,
    "sandbox.enabled": _by_rank(False, True),
    "sandbox.network": _by_rank(True, False),
    "sandbox.backend": _by_rank("landlock", "auto", "bwrap"),
    "sandbox.image": USER_ONLY,
    "sandbox.engine": USER_ONLY,
    "sandbox.memory": _limit(_no_memory_limit, memory_bytes),
    "sandbox.pids": _limit(_no_count_limit, float),
    "sandbox.cpus": _limit(_no_count_limit, float),
    "sandbox.mask": _with_all_of,
    "sandbox.env": _only_some_of,
}
"""Every setting, with what a project file may do to it: `FREE`, `USER_ONLY`, or a tightening rule.

Backends rank by what they hold (bubblewrap also keeps the server's environment and descriptors out of
reach; `auto` may mean Landlock); `container` and `seatbelt` are the user's to choose or leave, since
the one runs the user's image and the other is what `auto` means on macOS. Container limits are tighter
when lower; none (`memory = ""`, `pids = 0`, `cpus = 0`) is the loosest.
"""

TIGHTENING: dict[str, Tighten] = {name: rule for name, rule in PROJECT_MAY.items() if callable(rule)}
"""The settings that confine the model, each with how a project file may move it."""


def project_may_set(name: str) -> bool:
    """Whether a project file may give `name` a value at all (an undeclared setting: no, as if user-only)."""
    return PROJECT_MAY.get(name, USER_ONLY) != USER_ONLY
