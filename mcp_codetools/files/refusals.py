"""The refusals Read, Edit and Write share, worded once: a missing file, a folder for a file, a file not text."""

from __future__ import annotations

import itertools
import os
import unicodedata
from pathlib import Path

from mcp_codetools.errors import BinaryFileError, FileMissingError, FileStateError, InvalidInputError, ToolError
from mcp_codetools.files.opening import open_checked_dir
from mcp_codetools.files.paths import Workspace, similar_names
from mcp_codetools.files.text import BinaryContentError

MAX_LISTED = 5000


def missing_file_error(path: Path, cwd: Path, workspace: Workspace | None = None) -> FileStateError:
    """A missing file, with a "Did you mean" hint from its folder, listed the confined way (no workspace: no hint)."""
    message = f"File does not exist: {path}. Note: your current working directory is {cwd}."
    names = _listing(path.parent, workspace) if workspace is not None else []
    wanted = unicodedata.normalize("NFC", path.name)
    same = [name for name in names if name != path.name and unicodedata.normalize("NFC", name) == wanted]
    if same:
        # Looks identical when shown: say why it is not, or the model sends the same bytes again.
        message += (
            f" A file {path.parent / same[0]} exists whose name looks the same but is spelled with other Unicode "
            "code points (e.g. an accent as a separate mark). Copy that path exactly, or find it with Glob."
        )
        return FileMissingError(message)
    hints = similar_names(path, names) if names else ()
    if hints:
        message += f" Did you mean {hints[0]}?"
    return FileMissingError(message)


def refuse_folder_name(raw: str) -> None:
    """Refuse to create a file from a path ending in a separator: the file would silently take a folder's name."""
    if raw.endswith(("/", os.sep)) or (os.altsep is not None and raw.endswith(os.altsep)):
        raise InvalidInputError(
            f"`file_path` {raw} ends with a path separator, so it names a folder, not a file. Give the file's "
            "full path with its name (folders are created as needed)."
        )


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
