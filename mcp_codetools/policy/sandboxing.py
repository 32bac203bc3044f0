"""What the permission rules keep from a sandboxed command: the paths to hide, and the paths to keep read-only.

The Bash sandbox (`shell/sandbox.py`) enforces these in the kernel; this module finds them, for each
command, from the policy of the session's roots:

- protected paths (`PROTECTED_PATHS`, `[permissions] protected_paths`) at every root and in the home
  folder when it is writable, and the config files the policy was read from: read-only, whether they
  exist or not (the sandbox keeps a missing one from being created). `.git` is kept as `.git/hooks` and
  `.git/config` when it is a folder, so git can still write the rest (with bubblewrap);
- `.git/commondir` where it does not exist (`absent`): git outside the sandbox would take its config and
  hooks from the folder it names. Keeping it from being created would fix `.git`'s top level, where git
  makes its lock files; so a command that makes one has it removed when it ends (`remove_appeared`),
  and a background job, which no one checks after, gets it read-only like the rest, as does every command
  in a container (`shell/container.py`), whose mounts hold for its life and whose processes may outlive
  their command;
- paths a `Read(...)` deny covers: hidden (unreadable, and not writable either);
- paths an `Edit(...)` deny (or a deny for another editing tool) covers: read-only.

Deny rules are patterns, so they are expanded to the paths that exist now, by walking from each rule's
literal start (`src/secrets/*.pem` from `src/secrets`, a bare `.env` from each root), at most
`MAX_WALKED` entries in all. A path that matches is taken whole (a folder with everything in it), and
so is a folder that cannot be listed. When the walk would go past the bound, the paths cannot all be
known, and the command is refused (`SandboxPathsUnknown`) rather than run with some of them open.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.hiding import Hider
from mcp_codetools.policy.rules import Rule, _anchor_of

logger = logging.getLogger(__name__)

MAX_WALKED = 50_000
"""Entries looked at per command to expand the deny rules; past it the command is refused."""
_GLOB_CHARS = frozenset("*?[\\{")


class SandboxPathsUnknown(Exception):
    """The deny rules cover more than can be listed for one command; the message says what to do."""


@dataclass(frozen=True, slots=True)
class SandboxPaths:
    """What one command may not read (`hidden`) or write (`read_only`), as absolute paths."""

    hidden: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    absent: tuple[Path, ...] = ()
    """Paths that do not exist and must not appear; see the module doc."""


def sandbox_paths(policy: Policy, writable: Sequence[Path]) -> SandboxPaths:
    """The paths the sandbox keeps from a command under `policy`; `writable`: the folders it may write (real).

    Raises:
        SandboxPathsUnknown: the deny rules cover more than `MAX_WALKED` entries can show.
    """
    read_only = protected_paths(policy, writable)
    absent = tuple(p for p in read_only if p.name == "commondir" and not os.path.lexists(p))
    read_only = [p for p in read_only if p not in absent]
    readers = [h for h in (Hider.for_tool(policy, "Read"),) if h is not None]
    writers = sorted({"Edit", *policy.families.edit})
    editors = [h for h in (Hider.for_tool(policy, tool) for tool in writers) if h is not None]
    if not readers and not editors:
        return SandboxPaths((), tuple(read_only), absent)
    walk = _Walk(
        lambda path: any(h(path) for h in readers),
        lambda path: any(h(path) for h in editors),
        hides_nothing=not readers,
    )
    for start, whole in _starts([r for h in readers for r in h.rules], policy):
        walk.run(start, whole_hidden=whole)
    for start, whole in _starts([r for h in editors for r in h.rules], policy):
        walk.run(start, whole_kept=whole)
    read_only = list(dict.fromkeys([*read_only, *_outermost(walk.read_only)]))
    return SandboxPaths(_outermost(walk.hidden), tuple(read_only), absent)


def remove_appeared(absent: Sequence[Path]) -> list[Path]:
    """Remove what a command made at paths that were `absent` (never following a link); returns what was removed."""
    removed: list[Path] = []
    for path in absent:
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            logger.warning("could not remove %s, which a sandboxed command made", path, exc_info=True)
        removed.append(path)
    return removed


def protected_paths(policy: Policy, writable: Sequence[Path]) -> list[Path]:
    """The protected paths that lie in a writable folder, existing or not."""
    found: list[Path] = []
    for root in policy.roots:
        for name in policy.protected:
            found += _protected_at(root, name)
    home = Path(os.path.expanduser("~"))
    if _inside(home, writable):
        for name in policy.protected:
            if not name.startswith(".git"):
                found += _protected_at(home, name)
    found += policy.extra_protected_files
    return [path for path in dict.fromkeys(found) if _inside(path, writable)]


def _protected_at(folder: Path, name: str) -> list[Path]:
    path = folder / name
    if name == ".git" and path.is_dir() and not path.is_symlink():
        # The rest of `.git` is the repository git writes; these decide what git runs.
        return [path / "hooks", path / "config", path / "commondir"]
    return [path]


def _inside(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for folder in folders)


def _starts(rules: Sequence[Rule], policy: Policy) -> list[tuple[str, bool]]:
    """Where to walk from: each rule's base joined with the plain folders its pattern starts with.

    With each, whether the rule covers that folder whole (`secrets/**`: whatever is made in it later too).
    """
    roots = [str(root) for root in policy.roots]
    starts: dict[str, bool] = {}
    for rule in rules:
        assert rule.specifier is not None
        parts = [p for p in _anchor_of(rule.specifier)[1].strip("/").split("/") if p not in ("", ".")]
        lead: list[str] = []
        for part in parts:
            if _GLOB_CHARS & set(part):
                break
            lead.append(part)
        whole = len(lead) == len(parts) or parts[len(lead) :] == ["**"]
        for base in rule.bases(roots):
            start = os.path.normpath(os.path.join(base, *lead))
            starts[start] = starts.get(start, False) or (whole and bool(lead))
    return sorted(starts.items())


class _Walk:
    """A bounded walk that collects the entries the deny rules cover, without going into one hidden whole."""

    def __init__(self, hides: Callable[[str], bool], keeps: Callable[[str], bool], *, hides_nothing: bool) -> None:
        self.hides, self.keeps = hides, keeps
        self.hides_nothing = hides_nothing
        self._kept_set: set[Path] = set()
        self.hidden: list[Path] = []
        self.read_only: list[Path] = []
        self.seen = 0
        self._walked: set[str] = set()

    def run(self, start: str, *, whole_hidden: bool = False, whole_kept: bool = False) -> None:
        """Walk from `start`; `whole_*`: a rule covers `start` itself and all that may appear in it."""
        if not os.path.lexists(start):
            return
        if whole_hidden:
            self.hidden.append(_real(start))
            return
        if whole_kept:
            self.read_only.append(_real(start))
        if self._judge(start, whole_kept) or not os.path.isdir(start) or os.path.islink(start):
            return
        stack = [(start, whole_kept)]
        while stack:
            folder, kept = stack.pop()
            if folder in self._walked:
                continue
            self._walked.add(folder)
            try:
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except OSError:
                # What the deny rules cover in it is not known: hidden whole (the command, running as
                # this user, could not list it either, but it might open a name it knows).
                self.hidden.append(_real(folder))
                continue
            self.seen += len(listed)
            if self.seen > MAX_WALKED:
                raise SandboxPathsUnknown(
                    f"finding the paths the deny rules cover would mean looking at more than {MAX_WALKED:,} "
                    f"entries (under {start})"
                )
            for entry in listed:
                if self._judge(entry.path, kept) or not entry.is_dir(follow_symlinks=False):
                    continue
                inside_kept = kept or Path(entry.path) in self._kept_set
                if not (inside_kept and self.hides_nothing):  # beneath a read-only folder only hidden paths count
                    stack.append((entry.path, inside_kept))

    def _judge(self, path: str, under_kept: bool) -> bool:
        """Record `path` when a rule covers it; True when it is hidden (nothing beneath needs looking at)."""
        if self.hides(path):
            self.hidden.append(_real(path))
            return True
        if not under_kept and self.keeps(path):
            self.read_only.append(_real(path))
            self._kept_set.add(Path(path))
        return False


def _outermost(paths: Sequence[Path]) -> tuple[Path, ...]:
    """The paths not inside another of them: a mask or bind inside another one is not needed (nor mountable)."""
    given = set(paths)
    return tuple(p for p in dict.fromkeys(paths) if not any(parent in given for parent in p.parents))


def _real(path: str) -> Path:
    """The path the kernel sees: a mask or a bind over a link's spelling would leave its target open."""
    return Path(os.path.realpath(path))
