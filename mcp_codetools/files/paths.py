"""One resolver for every path a tool touches.

A path is resolved against the session's working directory, symlinks are followed, and the real path
must lie inside a workspace root, compared component by component (``/ws/proj2`` is not inside
``/ws/proj``). The opens that keep to this verdict are in `opening`; a tool that reads through the file
the resolver held (`resolve_pinned`, Read) gets the kernel's name for it instead (`realpaths`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcp_codetools.errors import InvalidInputError, PermissionDeniedError, tool_error_from_os
from mcp_codetools.files.realpaths import Pinned, pin

PATH_MAX = 4096


def canonical_root(raw: str | os.PathLike[str]) -> Path:
    """A root as it will be compared: absolute, with every symlink resolved."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(raw))))


def is_within(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or lies under it; both must already be real paths.

    Compared as strings where paths compare as strings (POSIX), with the separator after the root so
    ``/ws/proj2`` is not under ``/ws/proj``: `PurePath.is_relative_to` raised and caught an exception for
    every miss, and a Read asks 4-5 times. Windows paths compare without case, so pathlib decides there.
    """
    if os.name == "nt":
        return path == root or path.is_relative_to(root)
    inner, outer = str(path), str(root)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


class Workspace:
    """The workspace roots and the rule that confines paths to them."""

    def __init__(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        resolved: list[Path] = []
        for raw in roots:
            root = canonical_root(raw)
            if not root.is_dir():
                raise ValueError(f"workspace root is not a directory: {raw}")
            if root not in resolved:
                resolved.append(root)
        if not resolved:
            raise ValueError("at least one workspace root is required")
        self.roots: tuple[Path, ...] = tuple(resolved)
        self.configured: tuple[Path, ...] = self.roots
        """The roots the server was started with; the client's roots come after them and never replace them."""
        self.readable: list[Path] = []
        """Folders the server made itself (full command output, job logs): open to reads only."""
        self._identities: dict[Path, tuple[int, int]] = {}
        """(device, inode) of each root as first seen: a root replaced later is not followed."""
        for root in self.roots:
            self._remember(root)

    def _remember(self, folder: Path) -> None:
        try:
            st = os.stat(folder)
        except OSError:
            return
        self._identities.setdefault(folder, (st.st_dev, st.st_ino))

    def set_client_roots(self, folders: Iterable[Path]) -> list[Path]:
        """Serve the configured roots plus `folders` (the client's latest roots); returns the folders taken.

        A folder that is not a directory is skipped; an empty list leaves the configured roots alone.
        """
        taken: list[Path] = []
        for folder in folders:
            real = canonical_root(folder)
            if real.is_dir() and real not in self.configured and real not in taken:
                taken.append(real)
                self._remember(real)
        self.roots = self.configured + tuple(taken)
        return taken

    def add_readable(self, folder: Path) -> None:
        """Open `folder` to reads only (the server's own output folders)."""
        real = canonical_root(folder)
        self.readable.append(real)
        self._remember(real)

    def identity(self, folder: Path) -> tuple[int, int] | None:
        """(device, inode) of a root as first seen, to notice a root replaced later."""
        return self._identities.get(folder)

    def root_of(self, real_path: Path, *, for_read: bool = False) -> Path | None:
        """The innermost root (or, with `for_read`, readable folder) holding `real_path`."""
        folders = [*self.roots, *self.readable] if for_read else list(self.roots)
        holding = [folder for folder in folders if is_within(real_path, folder)]
        return max(holding, key=lambda folder: len(folder.parts)) if holding else None

    def contains(self, real_path: Path, *, for_read: bool = False) -> bool:
        """Whether `real_path` lies in a root (or, with `for_read`, a readable folder)."""
        if any(is_within(real_path, root) for root in self.roots):
            return True
        return for_read and any(is_within(real_path, folder) for folder in self.readable)

    def resolve(self, raw: str, cwd: Path, *, field: str = "file_path", for_read: bool = False) -> Path:
        """Resolve `raw` to a real path inside the roots.

        Raises:
            InvalidInputError: the path is empty or holds a NUL byte.
            PermissionDeniedError: the real path lies outside every root.
        """
        joined = self._joined(raw, cwd, field)
        return self._confined(raw, joined, _realpath(raw, joined), for_read)

    def resolve_pinned(
        self, raw: str, cwd: Path, *, field: str = "file_path", for_read: bool = False
    ) -> tuple[Path, Pinned | None]:
        """As `resolve`, with the file held where the system can hold it (see `realpaths`); the caller closes it.

        The real path is then the kernel's name for the held file. None in place of the held file: it does
        not exist, or the system cannot name a held file (the path is resolved as `resolve` does).
        """
        joined = self._joined(raw, cwd, field)
        pinned = pin(joined)
        if pinned is None:
            return self._confined(raw, joined, _realpath(raw, joined), for_read), None
        try:
            return self._confined(raw, joined, Path(pinned.real), for_read), pinned
        except BaseException:
            pinned.close()
            raise

    @staticmethod
    def _joined(raw: str, cwd: Path, field: str) -> str:
        if not raw or not raw.strip():
            raise InvalidInputError(f"`{field}` is empty. Give an absolute path, or one relative to {cwd}.")
        if "\x00" in raw:
            raise InvalidInputError(f"`{field}` contains a NUL byte, which no file name can hold.")
        try:
            size = len(raw.encode("utf-8"))
        except UnicodeEncodeError:
            raise InvalidInputError(f"`{field}` contains an unpaired surrogate, which no file name can hold.") from None
        if size > PATH_MAX:
            raise InvalidInputError(f"`{field}` is {size} bytes long; a path can be at most {PATH_MAX} bytes.")
        expanded = os.path.expanduser(raw) if raw.startswith("~") else raw
        return os.path.join(cwd, expanded)

    def _confined(self, raw: str, joined: str, real: Path, for_read: bool) -> Path:
        if not self.contains(real, for_read=for_read):
            shown = ", ".join(str(r) for r in self.roots)
            via = "" if real == Path(os.path.normpath(joined)) else f" (it resolves to {real})"
            raise PermissionDeniedError(
                f"Access denied: {raw}{via} is outside the workspace roots ({shown}). "
                "Only files inside the roots can be used."
            )
        return real


def _realpath(raw: str, joined: str) -> Path:
    try:
        return Path(os.path.realpath(joined))
    except OSError as exc:  # a link on the way vanished between realpath's lstat and readlink
        raise tool_error_from_os(exc, "resolve", raw) from exc


def similar_names(path: Path, names: Sequence[str], limit: int = 1) -> Sequence[str]:
    """Names from `names` (the listing of `path`'s folder) the caller may have meant: same stem, or close."""
    import difflib

    names = list(names)[:5000]
    stem_hits = [n for n in names if Path(n).stem == path.stem and n != path.name]
    close = difflib.get_close_matches(path.name, names, n=limit, cutoff=0.75)
    ordered = list(dict.fromkeys(stem_hits + close))
    return [str(path.parent / n) for n in ordered[:limit]]
