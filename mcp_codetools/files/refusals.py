"""The refusals Read, Edit and Write share, worded once: a missing file, a file that is not text."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from mcp_codetools.errors import BinaryFileError, FileMissingError, FileStateError, ToolError
from mcp_codetools.files.opening import open_checked_dir
from mcp_codetools.files.paths import Workspace, similar_names
from mcp_codetools.files.text import BinaryContentError

MAX_LISTED = 5000


def missing_file_error(path: Path, cwd: Path, workspace: Workspace | None = None) -> FileStateError:
    """A missing file, with a "Did you mean" hint from its folder, listed the confined way (no workspace: no hint)."""
    message = f"File does not exist: {path}. Note: your current working directory is {cwd}."
    hints = similar_names(path, _listing(path.parent, workspace)) if workspace is not None else ()
    if hints:
        message += f" Did you mean {hints[0]}?"
    return FileMissingError(message)


def unreadable_error(path: Path, exc: BinaryContentError) -> FileStateError:
    """A file that is not text, with the Bash commands that inspect it."""
    return BinaryFileError(
        f"Cannot read {path}: it looks like {exc.kind}, not text. "
        "Read shows text files only; inspect binary files with Bash (e.g. `file`, `xxd | head`)."
    )


def _listing(folder: Path, workspace: Workspace) -> list[str]:
    """The names in `folder`, read through a descriptor opened beneath a root; nothing if that fails.

    A folder swapped for a link to elsewhere after the path check must not lend its names to the hint.
    """
    try:
        fd = open_checked_dir(folder, workspace, str(folder), for_read=True)
    except (ToolError, OSError):
        return []
    try:
        with os.scandir(fd) as entries:
            return [entry.name for entry in itertools.islice(entries, MAX_LISTED)]
    except OSError:
        return []
    finally:
        os.close(fd)
