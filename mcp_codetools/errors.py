"""
The errors a tool call can end in. The class decides the code; the message says what to do next.

```
code                      class                    meaning; what the model should do next
invalid_input             InvalidInputError        arguments fail the schema, or cannot be used (an empty path, text
                                                   the file's encoding cannot hold); fix them as the text says
unknown_tool              (pipeline)               no tool of that name; call a listed tool
permission_denied         PermissionDeniedError    outside the roots, or a rule said no; stay within them
file_not_read             FileNotReadError         Edit/Write of a file not Read (in full); Read it first
file_changed_since_read   FileChangedError         the file changed since the Read; Read it again
file_not_found            FileMissingError         no such file or folder; check the path (a hint may be given)
file_exists               FileExistsAlreadyError   Edit with an empty old_string on a file with content; give one
not_a_file                NotAFileError            a folder, FIFO or device, or it cannot be opened; use Glob/Bash
binary_file               BinaryFileError          not text (or not valid in its encoding); inspect it with Bash
file_too_large            FileTooLargeError        too large to edit in memory; edit it with Bash tools
file_read_only            FileReadOnlyError        mode bits say read-only; change them first, if that is meant
old_string_not_found      OldStringNotFoundError   old_string is not in the file; copy it exactly from a fresh Read
old_string_not_unique     OldStringNotUniqueError  several matches and replace_all false; add context, or set it
no_change                 NoChangeError            old_string equals new_string; nothing to do
queue_timeout             QueueTimeoutError        waited too long behind earlier calls; try again later
execution_failed          ExecutionError           the tool ran and failed (an OS error); as the text says
internal_error            (pipeline)               a bug, logged with its traceback; check the file, then retry
```

Anything raised inside a tool that is not a `ToolError` is a bug: the pipeline logs it and answers
`internal_error`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

ErrorCode = Literal[
    "invalid_input",
    "unknown_tool",
    "permission_denied",
    "file_not_read",
    "file_changed_since_read",
    "file_not_found",
    "file_exists",
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
    """A failure the model can act on: its message goes to the model verbatim, its class gives the code."""

    code: ClassVar[ErrorCode] = "execution_failed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInputError(ToolError):
    code = "invalid_input"


class PermissionDeniedError(ToolError):
    code = "permission_denied"


class ExecutionError(ToolError):
    code = "execution_failed"


class QueueTimeoutError(ToolError):
    code = "queue_timeout"


class FileStateError(ToolError):
    """The file is not in a state the call can work with."""


class FileNotReadError(FileStateError):
    code = "file_not_read"


class FileChangedError(FileStateError):
    code = "file_changed_since_read"


class FileMissingError(FileStateError):
    code = "file_not_found"


class FileExistsAlreadyError(FileStateError):
    code = "file_exists"


class NotAFileError(FileStateError):
    code = "not_a_file"


class BinaryFileError(FileStateError):
    code = "binary_file"


class FileTooLargeError(FileStateError):
    code = "file_too_large"


class FileReadOnlyError(FileStateError):
    code = "file_read_only"


class EditMatchError(ToolError):
    """old_string and the file do not fit together."""


class OldStringNotFoundError(EditMatchError):
    code = "old_string_not_found"


class OldStringNotUniqueError(EditMatchError):
    code = "old_string_not_unique"


class NoChangeError(EditMatchError):
    code = "no_change"
