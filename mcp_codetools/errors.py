"""
The errors a tool call can end in, each with a stable code.

```
ToolError(message, code)                      the model caused it; the text says what to do next
├── InvalidInputError      invalid_input      arguments fail the schema
├── UnknownToolError       unknown_tool
├── PermissionDeniedError  permission_denied  outside the roots, or a rule said no
├── FileStateError         file_not_read · file_changed_since_read · file_not_found · not_a_file · binary_file
│                          · file_too_large · file_read_only
├── EditMatchError         old_string_not_found · old_string_not_unique · no_change
├── QueueTimeoutError      queue_timeout      waited too long behind earlier calls
└── ExecutionError         execution_failed   the tool ran and failed (a non-zero exit, an OS error)
```

Anything else raised inside a tool is a bug: the pipeline logs it and answers `internal_error`.
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "invalid_input",
    "unknown_tool",
    "permission_denied",
    "file_not_read",
    "file_changed_since_read",
    "file_not_found",
    "not_a_file",
    "binary_file",
    "file_too_large",
    "file_read_only",
    "old_string_not_found",
    "old_string_not_unique",
    "no_change",
    "queue_timeout",
    "execution_failed",
    "internal_error",
]


class ToolError(Exception):
    """A failure the model can act on: its message goes to the model verbatim."""

    code: ErrorCode = "execution_failed"

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidInputError(ToolError):
    code: ErrorCode = "invalid_input"


class UnknownToolError(ToolError):
    code: ErrorCode = "unknown_tool"


class PermissionDeniedError(ToolError):
    code: ErrorCode = "permission_denied"


class FileStateError(ToolError):
    code: ErrorCode = "file_not_found"


class EditMatchError(ToolError):
    code: ErrorCode = "old_string_not_found"


class QueueTimeoutError(ToolError):
    code: ErrorCode = "queue_timeout"


class ExecutionError(ToolError):
    code: ErrorCode = "execution_failed"


def describe_os_error(exc: OSError, path: str) -> str:
    """Turn an OS error into a sentence that names the path and the cause, without a traceback."""
    reason = exc.strerror or exc.__class__.__name__
    return f"{reason}: {path}"
