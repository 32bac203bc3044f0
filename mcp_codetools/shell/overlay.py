"""Missing protected paths kept from being made under bubblewrap, with nothing made in the user's folder.

A bind mount needs a path to mount over, and a missing path has none. Making one in the user's folder leaves
an empty stub that `git status` shows (Claude Code's and Codex's sandboxes do that), and freezing the folder
instead (binding it read-only and its entries writable again, `sandbox.freeze_for`) refuses every new entry:
no `mkdir build`, no `python3 -m venv .venv`, no `rm a.py` at a root's top level.

So a folder holding missing kept paths is mounted as an overlay inside the command's mount namespace:

- its upper layer is the folder itself, so every write lands in the user's folder at once, as with a plain
  bind (nothing is staged or copied back);
- its lower layer is a private folder of the server's holding an empty file at each missing path, so those
  names exist in the command's view only;
- bubblewrap then binds an empty read-only file over each of them: a mount point cannot be written,
  removed, renamed over or replaced, so the name can never be made, and copy-up (which would write the
  placeholder into the user's folder) never happens.

Overlayfs needs a work folder on the same filesystem as the upper layer and outside it. The server keeps
one per filesystem: a private folder in the temp folder (named like a scratch folder, so a killed server's
is swept, and removed at exit), else `$XDG_CACHE_HOME/mcp-codetools/overlay`; never one inside a folder a
command may write. Where none fits, or the kernel refuses the trial mount, the folder is frozen as before.

An overlay keeps what it looked up: a file replaced from outside while a command runs may still show its
old content to that command, and file watches inside see no change made outside. So a background job (a
dev server watching files while Edit changes them) gets the frozen folder, not an overlay. The whole price,
and the designs measured against it, are in docs/sandbox-live-view.md.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_codetools.files.scratch import make_scratch_dir

logger = logging.getLogger(__name__)

TRIAL_TIMEOUT_S = 10.0
SUFFIX = "_overlay"
"""How a private overlay folder's name ends: it lives for the process, not for a session."""

_lock = threading.Lock()
_bases: dict[int, Path | None] = {}
"""The base folder chosen per filesystem (st_dev), None where no base works."""


@dataclass(frozen=True, slots=True)
class Overlay:
    """How bubblewrap mounts one writable folder with placeholders at its missing kept paths."""

    folder: str
    lower: str
    work: str
    stub: str
    placeholders: tuple[str, ...]
    """The missing kept paths (absolute), each bound over with `stub` once the overlay is mounted."""

    def mount_args(self) -> list[str]:
        """bwrap's arguments that mount the overlay at the folder (before anything is mounted inside it)."""
        return ["--overlay-src", self.lower, "--overlay", self.folder, self.work, self.folder]

    def keep_args(self) -> list[str]:
        """bwrap's arguments that make each placeholder a read-only mount point (after the folder mounts)."""
        args: list[str] = []
        for path in self.placeholders:
            args += ["--ro-bind", self.stub, path]
        return args


def overlay_for(bwrap: str, folder: Path, missing: Sequence[str], writable: Sequence[Path]) -> Overlay | None:
    """The overlay that keeps `missing` (absolute paths inside `folder`) from being made, or None.

    None when no base folder fits this filesystem or overlays do not mount here: the caller freezes the
    folder instead, which keeps the same paths (fail closed, never open).
    """
    prefix = str(folder).rstrip("/") + "/"
    relative = sorted({p[len(prefix) :] for p in missing if p.startswith(prefix)})
    relative = [r for r in relative if not any(r.startswith(other + "/") for other in relative)]
    if not relative:
        return None
    try:
        device = os.stat(folder).st_dev
    except OSError:
        return None
    with _lock:
        if device not in _bases:
            _bases[device] = _choose_base(bwrap, device, writable)
        base = _bases[device]
        if base is None:
            return None
        try:
            lower = _placeholder_tree(base, relative)
        except OSError:
            logger.warning("could not make the sandbox's placeholder folder in %s", base, exc_info=True)
            return None
    placeholders = tuple(prefix + r for r in relative)
    return Overlay(str(folder), str(lower), str(base / "work"), str(base / "stub"), placeholders)


def _choose_base(bwrap: str, device: int, writable: Sequence[Path]) -> Path | None:
    for make in (_private_temp_base, _cache_base):
        try:
            base = make(device)
        except OSError:
            logger.debug("no overlay base from %s", make.__name__, exc_info=True)
            continue
        if base is None:
            continue
        if any(base == w or base.is_relative_to(w) or w.is_relative_to(base) for w in writable):
            continue  # a command could change the placeholders or the work folder
        if _trial(bwrap, base):
            return base
    logger.info("no overlay works for the filesystem %s: folders with missing protected paths stay frozen", device)
    return None


def _private_temp_base(device: int) -> Path | None:
    temp = Path(tempfile.gettempdir()).resolve()
    if os.stat(temp).st_dev != device:
        return None
    base = make_scratch_dir(suffix=SUFFIX)  # named like a scratch folder, so that a killed server's is swept
    atexit.register(_remove, base)
    return _furnished(base)


def _cache_base(device: int) -> Path | None:
    cache = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(cache) if os.path.isabs(cache) else Path(os.path.expanduser("~")) / ".cache"
    base = root / "mcp-codetools" / "overlay"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # someone else's, or open to others: its placeholders cannot be trusted
    if info.st_dev != device:
        return None
    return _furnished(base)


def _furnished(base: Path) -> Path:
    """`base` with its work folder and the empty read-only file bound over placeholders."""
    (base / "work").mkdir(exist_ok=True, mode=0o700)
    stub = base / "stub"
    if not stub.exists():
        stub.touch(mode=0o444)
    os.chmod(stub, 0o444)
    return base


def _placeholder_tree(base: Path, relative: Sequence[str]) -> Path:
    """The lower layer for these missing paths: made once, under a name given by its content."""
    digest = hashlib.sha256("\0".join(relative).encode()).hexdigest()[:20]
    lower = base / f"lower-{digest}"
    if lower.is_dir():
        return lower
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=base))
    for rel in relative:
        path = building / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o444)
    os.chmod(building, 0o755)
    try:
        os.rename(building, lower)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)  # another thread made it first
    return lower


def _trial(bwrap: str, base: Path) -> bool:
    """Whether an overlay mounts here with a placeholder kept: a kernel or bwrap without it fails this."""
    upper = Path(tempfile.mkdtemp(prefix=".trial-", dir=base))
    try:
        lower = _placeholder_tree(base, ["kept"])
        args = [
            bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--die-with-parent",
            "--overlay-src", str(lower), "--overlay", str(upper), str(base / "work"), str(upper),
            "--ro-bind", str(base / "stub"), str(upper / "kept"),
            "--", "sh", "-c", f"echo x > {upper}/made && ! (echo x > {upper}/kept) 2>/dev/null",
        ]  # fmt: skip
        try:
            done = subprocess.run(args, capture_output=True, timeout=TRIAL_TIMEOUT_S, start_new_session=True)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0 and (upper / "made").is_file() and not (upper / "kept").exists()
    finally:
        shutil.rmtree(upper, ignore_errors=True)


_STALE = re.compile(r"stale file handle", re.I)


def stale_view_note(output: str) -> str | None:
    """A note for an overlaid command whose output shows ESTALE: a file it had looked up changed outside it."""
    if not _STALE.search(output):
        return None
    return (
        '[Sandbox: "Stale file handle": a file this command had looked up was replaced or removed outside it '
        "while it ran (by Edit, Write, an editor or another process), and the sandbox's view of the root keeps "
        "the old entry until the command ends. Run the command again.]"
    )


def git_excludes_env(shown: Sequence[str], env: Mapping[str, str], passed: Mapping[str, str]) -> dict[str, str]:
    """Variables that keep git from seeing the placeholders as new files (`git add -A` would commit them).

    `env`: the server's environment (where the user's excludes are); `passed`: the command's.

    git's `core.excludesFile` is given (through `GIT_CONFIG_*`, which outranks every config file) a file
    with the user's own global excludes and the placeholders' names; `{}` where no base is known.
    """
    names = sorted(set(shown))
    with _lock:
        base = next((b for b in _bases.values() if b is not None), None)  # a placeholder was shown: one is
    if base is None:
        return {}
    own = _global_excludes(env)
    text = own + ("\n" if own and not own.endswith("\n") else "") + "".join(f"/{n}\n" for n in names)
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    path = base / f"excludes-{digest}"
    if not path.exists():
        fd, temp = tempfile.mkstemp(prefix=".excludes-", dir=base)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temp, 0o444)
        os.replace(temp, path)
    given = passed.get("GIT_CONFIG_COUNT", "")  # the command's own entries (a setting may pass them) come first
    count = int(given) if given.isdigit() else 0
    return {
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": "core.excludesFile",
        f"GIT_CONFIG_VALUE_{count}": str(path),
    }


def _global_excludes(env: Mapping[str, str]) -> str:
    """The text of the user's global excludes file, at git's default place.

    A `core.excludesFile` set in a config file is not looked up: that would cost a git start per command.
    """
    config_home = env.get("XDG_CONFIG_HOME", "")
    folder = Path(config_home) if os.path.isabs(config_home) else Path(env.get("HOME", "~")).expanduser() / ".config"
    try:
        return (folder / "git" / "ignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _remove(base: Path) -> None:
    """Remove a private base (the kernel leaves its work folder unreadable)."""
    for dirpath, dirnames, _ in os.walk(base):
        for name in dirnames:
            try:
                os.chmod(os.path.join(dirpath, name), 0o700)
            except OSError:
                pass
    shutil.rmtree(base, ignore_errors=True)
