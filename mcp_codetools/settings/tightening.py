"""What a project file may do to the settings that confine the model: move them only the tight way.

The project file lives where the model can write, so for these settings it may only move a value the
tight way from what the defaults and the user's file said: the sandbox on, its network off, more
variables hidden, and so on. A loosening value is ignored, logged and listed by `mcp-codetools config`.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_codetools.settings.printing import shown


def _by_rank(*order: Any) -> Any:
    """A tightening rule for a value with a fixed order, loosest first."""

    def tighten(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
        if order.index(proposed) >= order.index(current):
            return proposed, None
        return current, "looser than " + shown(current)

    return tighten


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


TIGHTENING: dict[str, Any] = {
    "bash_env_exclude": _with_all_of,
    "hard_links": _by_rank("write-through", "refuse"),
    "http_host": _host,
    "http_max_sessions": _fewer,
    "http_max_states": _fewer,
    "audit_log": _audit_log,
    "audit_log_max_bytes": _more,
    "audit_log_keep": _more,
    "sandbox.enabled": _by_rank(False, True),
    "sandbox.network": _by_rank(True, False),
    "sandbox.backend": _by_rank("landlock", "auto", "bwrap"),
    "sandbox.mask": _with_all_of,
    "sandbox.env": _only_some_of,
}
"""The settings that confine the model, each with how a project file may change it (`(value, why refused)`).

The others are limits and formats: a project file sets them freely. Backends rank by what they hold
(bubblewrap also keeps the server's environment and descriptors out of reach); `auto` may mean Landlock.
"""
