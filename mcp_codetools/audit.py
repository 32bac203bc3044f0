"""The audit log: one JSON line per tool call, appended to the file the `audit_log` setting names.

A line holds the time, the session, the tool, a summary of its input (never a file's contents: long
strings are cut, the text fields Edit and Write carry are given by their length), the permission
decision, the duration and the outcome. The file is rotated by size (`audit.log` -> `audit.log.1` ...,
`audit_log_keep` old files kept) and created readable by its owner only, since commands and paths may
be private.

A write is one small `os.write` on a file opened for append, so lines from concurrent calls never
interleave and the event loop is held for microseconds; rotation (two or three renames) is rare. A log
that cannot be written is reported once on stderr and never fails a call.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_codetools.settings import Settings

logger = logging.getLogger(__name__)

FIELD_CHARS = 200
"""Longest string kept from one input field; the rest is replaced by a count."""
CONTENT_FIELDS = frozenset({"content", "old_string", "new_string", "edits"})
"""Fields whose text is a file's content or part of it: only their size is logged."""


class AuditLog:
    """One append-only JSON-lines file, rotated by size."""

    def __init__(self, path: Path, max_bytes: int, keep: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self._fd: int | None = None
        self._size = 0
        self._lock = threading.Lock()
        self._failed = False

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a JSON line, rotating first when the file is full; never raises."""
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8", "replace")
        with self._lock:
            try:
                if self._fd is None:
                    self._open()
                if self._size and self._size + len(line) > self.max_bytes:
                    self._rotate()
                assert self._fd is not None
                os.write(self._fd, line)
                self._size += len(line)
            except OSError as exc:
                if not self._failed:
                    logger.warning("cannot write the audit log %s: %s", self.path, exc.strerror or exc)
                self._failed = True

    def close(self) -> None:
        """Close the log file (a later write opens it again)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._size = os.fstat(self._fd).st_size

    def _rotate(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self.keep == 0:
            self.path.unlink(missing_ok=True)
        else:
            for n in range(self.keep - 1, 0, -1):
                older = self._numbered(n)
                if older.exists():
                    os.replace(older, self._numbered(n + 1))
            os.replace(self.path, self._numbered(1))
        self._open()

    def _numbered(self, n: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{n}")


_logs: dict[tuple[Path, int, int], AuditLog] = {}
_logs_lock = threading.Lock()


def audit_log_for(settings: Settings) -> AuditLog | None:
    """The server's audit log (one per file, shared by every session), or None when the setting is unset."""
    if settings.audit_log is None:
        return None
    key = (settings.audit_log, settings.audit_log_max_bytes, settings.audit_log_keep)
    with _logs_lock:
        log = _logs.get(key)
        if log is None:
            log = _logs[key] = AuditLog(*key)
        return log


def summarize_input(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The call's arguments with every field capped and file contents replaced by their size."""
    summary: dict[str, Any] = {}
    for key, value in (arguments or {}).items():
        key = _cap(str(key))
        if key in CONTENT_FIELDS:
            summary[key] = {"chars": len(value) if isinstance(value, str) else len(json.dumps(value, default=str))}
        elif isinstance(value, str):
            summary[key] = _cap(value)
        elif value is None or isinstance(value, (bool, int, float)):
            summary[key] = value
        else:
            summary[key] = _cap(json.dumps(value, ensure_ascii=False, default=str))
    return summary


def record(
    *,
    session: str,
    tool: str,
    arguments: Mapping[str, Any] | None,
    error_code: str | None,
    is_error: bool,
    duration_ms: float,
) -> dict[str, Any]:
    """One line of the log, with the decision read from the outcome.

    A refusal by the permission step is "deny"; a call refused before it (unknown tool, bad arguments) has
    none; any other call was allowed.
    """
    if error_code == "permission_denied":
        decision = "deny"
    elif error_code in ("unknown_tool", "invalid_input"):
        decision = None
    else:
        decision = "allow"
    now = time.time()
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z",
        "session": session,
        "tool": _cap(tool),
        "input": summarize_input(arguments),
        "decision": decision,
        "durationMs": round(duration_ms, 3),
        "outcome": "error" if is_error else "ok",
        "errorCode": error_code,
    }


def _cap(text: str) -> str:
    if len(text) <= FIELD_CHARS:
        return text
    return f"{text[:FIELD_CHARS]}… [{len(text)} chars]"
