"""The search path pinned for rg: opened beneath its root, so no swapped link can redirect rg from it.

Also what rg's output and messages may show of it: names confirmed still below the pinned folder, and
complaints that name a path it cannot confirm redacted.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_codetools.errors import FileMissingError, NotAFileError, ToolError, os_errors
from mcp_codetools.files import fdpaths
from mcp_codetools.files.opening import open_below, open_beneath, open_error
from mcp_codetools.files.paths import Workspace, is_within

STDIN_NAME = "<stdin>"
"""The name rg prints for what it read from stdin."""


def check_search_path(path: Path, cwd: Path, *, kind: str = "Path") -> os.stat_result:
    """The search path must exist and be a folder or a regular file: rg would block on a FIFO.

    Raises:
        FileStateError: missing, or neither a folder nor a regular file.
    """
    with os_errors(
        "search", path, missing=f"{kind} does not exist: {path}. Note: your current working directory is {cwd}."
    ):
        st = os.stat(path)
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise NotAFileError(f"Cannot search {path}: it is not a regular file or a folder.")
    return st


def target_args(target: Path, cwd: Path) -> list[str]:
    """How to name the search path to rg running in `cwd`, so it prints paths relative to `cwd`.

    The working directory itself is named by no path at all: rg then prints `src/a.py`, where `.`
    would give `./src/a.py`. stdin is /dev/null, so rg searches the folder, never stdin.
    """
    if target == cwd:
        return []
    if is_within(target, cwd):
        return [str(target.relative_to(cwd))]
    return [str(target)]


def display_prefix(base: Path, cwd: Path) -> str:
    """What to put before a path rg printed relative to `base`, to make it relative to `cwd`."""
    if base == cwd:
        return ""
    if is_within(base, cwd):
        return f"{base.relative_to(cwd)}/"
    return f"{base}/"


@dataclass
class PinnedTarget:
    """A search path opened beneath its root, so rg cannot be redirected from it after the check.

    A folder becomes rg's working directory through its descriptor, not a path (process.py: the child
    changes into the open folder itself, so no later swap of a path can move it), and rg is given no
    path: it prints names relative to the folder, and `rename` puts the shown prefix before them. A file
    is handed to rg as its descriptor: `/proc/self/fd/N` in rg's own process (passed with `pass_fds`)
    where that names it (fdpaths.py), else as rg's stdin, searched as `-`; `rename` turns the name rg
    prints for it back into the path the model gave.
    """

    fd: int
    st: os.stat_result
    shown: str
    """The path as results show it: relative to the session's working directory, or absolute."""
    real: Path
    """The real path it was opened by (for the sandbox: which folders lie above it)."""

    @property
    def is_dir(self) -> bool:
        """Whether the pinned target is a folder (rg then runs in it) rather than a file."""
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def by_fd_path(self) -> bool:
        """Whether rg opens the pinned file by `/proc/self/fd/N` (else it reads it as stdin)."""
        return fdpaths.usable()

    def rg_paths(self) -> list[str]:
        """The path arguments for rg: none for a folder (rg runs in it); for a file, its descriptor's name or `-`."""
        if self.is_dir:
            return []
        return [fdpaths.fd_path(self.fd)] if self.by_fd_path else ["-"]

    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors rg must inherit: the file's when rg opens it by name, else none."""
        return (self.fd,) if not self.is_dir and self.by_fd_path else ()

    def stdin_fd(self) -> int | None:
        """The descriptor to give rg as stdin: the file's when rg reads it as `-`, else None (/dev/null)."""
        return self.fd if not self.is_dir and not self.by_fd_path else None

    def rename(self) -> tuple[bytes, bytes]:
        """(what rg prints at the start of a name, what to show instead)."""
        if self.is_dir:
            return b"", os.fsencode(f"{self.shown}/" if self.shown else "")
        printed = fdpaths.fd_path(self.fd) if self.by_fd_path else STDIN_NAME
        return os.fsencode(printed), os.fsencode(self.shown)

    def close(self) -> None:
        """Close the descriptor."""
        os.close(self.fd)


def pin_search_target(target: Path, cwd: Path, workspace: Workspace, *, kind: str = "Path") -> PinnedTarget:
    """Open `target` (a folder or a regular file) beneath its root for rg; see `PinnedTarget`.

    Raises:
        ToolError: missing, neither a folder nor a regular file, or a component became a symlink.
    """
    try:
        fd = open_beneath(target, workspace, os.O_RDONLY | os.O_NONBLOCK, for_read=True)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise FileMissingError(
                f"{kind} does not exist: {target}. Note: your current working directory is {cwd}."
            ) from None
        raise open_error(exc, str(target), "search") from exc
    try:
        st = os.fstat(fd)
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            raise NotAFileError(f"Cannot search {target}: it is not a regular file or a folder.")
    except BaseException:
        os.close(fd)
        raise
    shown = "" if target == cwd else str(target.relative_to(cwd)) if is_within(target, cwd) else str(target)
    return PinnedTarget(fd, st, shown, target)


def still_below(dir_fd: int, name: str) -> bool:
    """Whether `name`, as rg reported it relative to the folder `dir_fd`, is there now with no symlink on the way.

    rg walks below the pinned folder by path, so a folder swapped for a link while it walks could lend it
    outside names; such names are dropped. Any doubt (an error of any kind) counts as no.
    """
    try:
        fd = open_below(dir_fd, name, _O_PATH | os.O_NOFOLLOW)
    except (OSError, ToolError):
        return False
    os.close(fd)
    return True


_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)


def names_below(target: PinnedTarget, names: Sequence[bytes]) -> tuple[list[bytes], int]:
    """`names` (as shown: with the target's prefix) that `still_below` confirms, and how many were dropped."""
    if not target.is_dir:
        return list(names), 0  # the one file searched is the pinned one
    prefix = target.rename()[1]
    kept = [
        name for name in names if name.startswith(prefix) and still_below(target.fd, os.fsdecode(name[len(prefix) :]))
    ]
    return kept, len(names) - len(kept)


CHANGED_PATH = "(a path whose folder changed while the search ran)"


def redact_stderr(target: PinnedTarget, stderr: str) -> str:
    """rg's complaints with any path it names that `still_below` cannot confirm replaced by `CHANGED_PATH`.

    Where rg is not sandboxed (macOS, Linux without Landlock) a folder swapped while rg walks can let it
    list an outside folder; an error about a file there (`a/b/secret.txt: No such file`) would name it.
    A line is `rg: NAME: reason`; a name may itself hold ": ", so every split is tried.
    """
    if not target.is_dir or not stderr:
        return stderr
    prefix = target.rename()[1].decode("utf-8", "replace")
    lines = []
    for line in stderr.split("\n"):
        body = line.removeprefix("rg: ")
        cuts = [i for i in range(len(body)) if body.startswith(": ", i)]
        if not cuts or "(os error" not in body:
            lines.append(line)
            continue
        names = [body[:cut] for cut in cuts]
        if any(n.startswith(prefix) and still_below(target.fd, n[len(prefix) :] or ".") for n in names):
            lines.append(line)
        else:
            lines.append(line[: len(line) - len(body)] + CHANGED_PATH + body[cuts[-1] :])
    return "\n".join(lines)


def dropped_note(dropped: int) -> str:
    """A note on the paths left out because a folder on the way changed; empty when none were."""
    if not dropped:
        return ""
    return (
        f"\n({dropped} path{'s were' if dropped != 1 else ' was'} left out: a folder on the way changed into a "
        "symlink while the search ran, so the result could come from outside the workspace. Search again.)"
    )
