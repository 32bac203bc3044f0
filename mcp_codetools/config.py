"""Settings from flags and the environment."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

DEFAULT_MAX_CONCURRENCY = 10
DEFAULT_QUEUE_TIMEOUT_S = 600.0
MAX_RESULT_TOKENS = 25_000
DEFAULT_SPILL_BUDGET_BYTES = 2 << 30
DEFAULT_SESSION_IDLE_TIMEOUT_S = 30 * 60.0


def _env_int(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return max(minimum, int(raw))
    except ValueError:
        return default


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def _env_names(name: str) -> frozenset[str]:
    return frozenset(part.strip() for part in os.environ.get(name, "").split(",") if part.strip())


def _hard_links(raw: str) -> str:
    """Only an exact "write-through" loosens the rule; anything else (a typo included) keeps "refuse"."""
    return "write-through" if raw.strip().lower() == "write-through" else "refuse"


def _env_positive_float(name: str, default: float) -> float:
    value = _env_float(name, default)
    return value if math.isfinite(value) and value > 0 else default


SANDBOX_BACKENDS = ("auto", "bwrap", "landlock")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class SandboxSettings:
    """The Bash sandbox (`mcp_codetools.shell.sandbox`): here so that settings sit below the shell layer."""

    enabled: bool = False
    network: bool = False
    backend: Literal["auto", "bwrap", "landlock"] = "auto"
    mask: tuple[str, ...] = ()
    """Extra paths to mask, beside the sandbox's default credential paths."""
    env: tuple[str, ...] = ()
    """Extra environment variables to pass through, beside the sandbox's allow-list."""

    @classmethod
    def from_env(cls) -> SandboxSettings:
        """From `MCP_CODETOOLS_SANDBOX*`; a value that cannot be read is refused (ValueError), never guessed."""
        backend = os.environ.get("MCP_CODETOOLS_SANDBOX_BACKEND", "").strip().lower() or "auto"
        if backend not in SANDBOX_BACKENDS:
            raise ValueError(
                f"MCP_CODETOOLS_SANDBOX_BACKEND={backend!r} is not a sandbox backend; use one of "
                f"{', '.join(SANDBOX_BACKENDS)}."
            )
        env = _env_list("MCP_CODETOOLS_SANDBOX_ENV")
        bad = [name for name in env if not _ENV_NAME.fullmatch(name)]
        if bad:
            raise ValueError(
                f"MCP_CODETOOLS_SANDBOX_ENV lists {', '.join(map(repr, bad))}, which are not variable names; "
                "give comma-separated names such as CI,GOPATH."
            )
        return cls(
            enabled=_strict_flag("MCP_CODETOOLS_SANDBOX"),
            network=_strict_flag("MCP_CODETOOLS_SANDBOX_NETWORK"),
            backend=cast(Literal["auto", "bwrap", "landlock"], backend),
            mask=_env_list("MCP_CODETOOLS_SANDBOX_MASK"),
            env=env,
        )


def _strict_flag(name: str) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not an on/off value; use 1 or 0 (true/false, yes/no, on/off).")


def _env_list(name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in os.environ.get(name, "").split(",") if part.strip())


@dataclass(frozen=True)
class Settings:
    """How one server instance behaves. Nothing here can be changed by the model."""

    roots: tuple[Path, ...] = field(default_factory=lambda: (Path.cwd(),))
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    queue_timeout_s: float = DEFAULT_QUEUE_TIMEOUT_S
    max_result_tokens: int = MAX_RESULT_TOKENS
    glob_no_ignore: bool = False
    """List gitignored files in Glob too (Claude Code's Glob does by default)."""
    spill_budget_bytes: int = DEFAULT_SPILL_BUDGET_BYTES
    """Disk one session's saved command output and job logs may take; past it the oldest files go."""
    bash_env_exclude: frozenset[str] = frozenset()
    """Variables Bash commands do not see, besides the server's own `MCP_CODETOOLS_*TOKEN*` secrets."""
    hard_links: str = "refuse"
    """Edit/Write on a file with several hard links: "refuse" (default; another link may be outside the
    roots) or "write-through" (write it in place, so every link sees the change)."""
    session_idle_timeout_s: float = DEFAULT_SESSION_IDLE_TIMEOUT_S
    """HTTP: a session with no request in flight and no open stream for this long is closed (its jobs killed)."""
    sandbox: SandboxSettings = SandboxSettings()
    """The OS sandbox Bash runs in; `sandbox.enabled` also tells the permission policy that Bash is confined."""
    image_max_side: int = 1568
    """Read shows an image no larger than this on its longest side (pixels)..."""
    image_max_pixels: int = 1_150_000
    """...and no larger than this in area; beyond either bound it is scaled down, aspect ratio kept."""
    image_max_bytes: int = 512 * 1024
    """An encoded image above this size is encoded again, smaller."""
    result_max_images: int = 8
    """Images one Read result may carry (notebook outputs, scanned PDF pages)."""
    pdf_max_pages: int = 20
    """Pages one Read of a PDF may ask for."""
    pdf_pages_without_range: int = 10
    """A longer PDF read without `pages` answers with an overview instead of text."""
    notebook_output_chars: int = 4000
    """Characters of one notebook cell output shown before it is cut."""
    history_max_entries: int = 200
    history_max_bytes: int = 256 * 1024 * 1024
    """The file history's bounds; versions are kept on disk in the session's scratch folder."""

    @classmethod
    def from_env(cls, roots: list[str] | None = None) -> Settings:
        """Settings for `roots` (default: the current folder), the rest from MCP_CODETOOLS_* variables."""
        return cls(
            roots=tuple(Path(r) for r in roots) if roots else (Path.cwd(),),
            max_concurrency=_env_int("MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", DEFAULT_MAX_CONCURRENCY),
            queue_timeout_s=_env_float("MCP_CODETOOLS_QUEUE_TIMEOUT_S", DEFAULT_QUEUE_TIMEOUT_S),
            max_result_tokens=_env_int("MCP_CODETOOLS_MAX_RESULT_TOKENS", MAX_RESULT_TOKENS, minimum=1000),
            glob_no_ignore=_env_flag("MCP_CODETOOLS_GLOB_NO_IGNORE"),
            spill_budget_bytes=_env_int("MCP_CODETOOLS_SPILL_BUDGET_BYTES", DEFAULT_SPILL_BUDGET_BYTES),
            bash_env_exclude=_env_names("MCP_CODETOOLS_BASH_ENV_EXCLUDE"),
            hard_links=_hard_links(os.environ.get("MCP_CODETOOLS_HARD_LINKS", "")),
            session_idle_timeout_s=_env_positive_float(
                "MCP_CODETOOLS_SESSION_IDLE_TIMEOUT_S", DEFAULT_SESSION_IDLE_TIMEOUT_S
            ),
            sandbox=SandboxSettings.from_env(),
        )

    @property
    def max_result_chars(self) -> int:
        """The result budget in characters, at about four characters a token."""
        return self.max_result_tokens * 4
