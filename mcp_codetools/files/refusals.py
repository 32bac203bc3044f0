"""The refusals Read, Edit and Write share, worded once: a missing file, a file that is not text."""

from __future__ import annotations

from pathlib import Path

from mcp_codetools.errors import BinaryFileError, FileMissingError, FileStateError
from mcp_codetools.files.paths import similar_names
from mcp_codetools.files.text import BinaryContentError


def missing_file_error(path: Path, cwd: Path) -> FileStateError:
    message = f"File does not exist: {path}. Note: your current working directory is {cwd}."
    hints = similar_names(path)
    if hints:
        message += f" Did you mean {hints[0]}?"
    return FileMissingError(message)


def unreadable_error(path: Path, exc: BinaryContentError) -> FileStateError:
    return BinaryFileError(
        f"Cannot read {path}: it looks like {exc.kind}, not text. "
        "Read shows text files only; inspect binary files with Bash (e.g. `file`, `xxd | head`)."
    )
