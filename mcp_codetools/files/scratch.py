"""Sessions' scratch folders: named after the server that owns them, and those of dead servers removed.

A session's scratch folder (saved output, job logs, file history) is removed when the session ends, but
a server that is killed (SIGKILL, a crash, a power cut) never gets there, and its folder would stay in
the temp folder forever: hundreds of MB after a run of the SIGKILL tests. So each folder is named
`mcp-codetools-<pid>-<start>-<random>`, with the owner's pid and its start time (clock ticks since boot
on Linux, 0 where unknown), and the first session of every server sweeps the temp folder once, in a
background thread, for folders whose owner is gone.

An owner is gone when its pid no longer exists, or (Linux) when the pid now belongs to a process that
started at another time: a reused pid. Where the start time cannot be read, a live pid keeps its
folder: what cannot be told apart is kept. A folder is removed only when its name has exactly this
form, it is a real directory (not a symlink) owned by this user, and `shutil.rmtree` can remove it
without following symlinks (its descriptor-based walk); at most `SWEEP_MAX_REMOVED` folders a sweep,
within `SWEEP_BUDGET_S`. Folders of older versions (`mcp-codetools-<random>`) carry no owner and stay.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

PREFIX = "mcp-codetools-"
_NAME = re.compile(r"mcp-codetools-([1-9][0-9]*)-([0-9]+)-[A-Za-z0-9_]+\Z")
SWEEP_MAX_REMOVED = 64
"""Folders one sweep removes at most; the next server's sweep takes the rest."""
SWEEP_BUDGET_S = 30.0
"""Time one sweep may take (listing and removing); it stops between folders once past it."""

_sweep_lock = threading.Lock()
_swept = False


def process_start(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux); None when gone or unknown here."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
        # "pid (comm) state ...": comm may hold spaces and parentheses; starttime is field 22.
        return int(raw[raw.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def make_scratch_dir(suffix: str = "") -> Path:
    """A new private folder (mode 0700) in the temp folder, named after this process (see the module).

    `suffix` (letters, digits, `_`) tells its use apart from a session's folder.
    """
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{pid}-{process_start(pid) or 0}-", suffix=suffix)).resolve()


def owner_is_gone(pid: int, start: int) -> bool:
    """Whether the server that made a folder named with `pid` and `start` has exited."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, as another user
    if start == 0:
        return False
    now = process_start(pid)
    return now is not None and now != start


def sweep(folder: Path | None = None, *, max_removed: int = SWEEP_MAX_REMOVED, budget_s: float = SWEEP_BUDGET_S) -> int:
    """Remove the scratch folders of gone servers in `folder` (the temp folder); returns how many."""
    if not shutil.rmtree.avoids_symlink_attacks:
        logger.info("scratch sweep skipped: rmtree here could follow a symlink swapped in")
        return 0
    base = Path(tempfile.gettempdir() if folder is None else folder)
    deadline = time.monotonic() + budget_s
    removed = 0
    try:
        entries = os.scandir(base)
    except OSError:
        return 0
    with entries:
        for entry in entries:
            if removed >= max_removed or time.monotonic() > deadline:
                break
            match = _NAME.match(entry.name)
            if match is None or not _is_own_folder(entry):
                continue
            if not owner_is_gone(int(match[1]), int(match[2])):
                continue
            try:
                shutil.rmtree(entry.path)  # refuses a symlink, and walks by descriptors without following any
            except OSError as exc:
                logger.debug("scratch sweep: could not remove %s: %s", entry.path, exc)
                continue
            removed += 1
    if removed:
        logger.info("removed %d scratch folder(s) of servers no longer running from %s", removed, base)
    return removed


def _is_own_folder(entry: os.DirEntry[str]) -> bool:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def sweep_once_in_background() -> None:
    """Start `sweep` in a daemon thread, the first time this is called in the process."""
    global _swept
    with _sweep_lock:
        if _swept:
            return
        _swept = True
    threading.Thread(target=_sweep_quietly, name="mcp-codetools-scratch-sweep", daemon=True).start()


def _sweep_quietly() -> None:
    try:
        sweep()
    except Exception:  # a sweep is housekeeping: it never takes the server down
        logger.exception("the scratch folder sweep failed")
