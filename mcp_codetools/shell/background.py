"""Background jobs: commands started with `run_in_background`, or moved there at Bash's return-after budget.

A job's output comes through a pipe that the server drains at once into a log file in the session's
scratch folder (the server holds none of it in memory), so a job does not wait on a full pipe, whoever
reads it and whenever; and each write wakes whoever waits for new output (`wait_for_news`: BashOutput's
`wait_s`), with no polling. `BashOutput` reads the log from where the last read stopped, through a
bounded view. A foreground command moved to the background (`adopt`) keeps its pipe: what the call
returned was read from it before the handover, and the log starts with the first byte after that.

Each job has a watcher task: it notices the exit at once (pidfd), reaps the job, stops processes the
job left behind, in its group or elsewhere with the job's marker in their environment (as a foreground
command's leftovers are), and kills a job whose log passes the disk cap, or (a moved command) that runs
past its timeout. The job outlives the call that started it, so the watcher cannot live in that call's
task group; it is an asyncio task kept by the registry (the server runs on asyncio). When the session
ends, `aclose` stops every job, so nothing started here outlives the session (see `reaping` for the one
kind of process no marker can find). Listeners in `on_end` hear of each job's end (the server sends
the client a notice).

The registry lives on the session (`CodeSession.jobs`); a job's log counts against the session's spill
budget and may be removed once the job has finished (`log_removed`).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

import anyio

from mcp_codetools.shell import exit_watcher, procs, reaping, running, spawning
from mcp_codetools.shell.capture import DEFAULT_CAP, OutputCapture
from mcp_codetools.shell.sandbox import Confinement
from mcp_codetools.shell.spills import size_text

logger = logging.getLogger(__name__)

LOG_CAP_BYTES = 1 << 30
CAP_CHECK_S = 1.0
SCAN_CAP_BYTES = 16 << 20
"""One BashOutput call reads at most this much new log; older unread output is skipped (and said so)."""
LINE_CAP = 1 << 20
READ_BLOCK = 1 << 20


@dataclass(eq=False)
class Job:
    """One background command and what is known about it."""

    id: str
    command: str
    proc: subprocess.Popen[bytes]
    watcher: exit_watcher.ExitWatcher
    log_path: Path
    marker: spawning.Marker
    started: float = field(default_factory=time.monotonic)
    read_offset: int = 0
    returncode: int | None = None
    killed: bool = False
    over_cap: bool = False
    leftovers_stopped: bool = False
    log_removed: bool = False
    """Removed (after the job finished) to keep within the session's spill budget."""
    pid_namespace: bool = False
    """Runs in a sandbox's own PID namespace (see `reaping.namespace_teardown`)."""
    confinement: Confinement | None = None
    """The sandbox it runs in; a container's processes are stopped inside it."""
    out_fd: int | None = None
    """The read end of its output pipe, until the watcher has drained it."""
    cwd_fd: int | None = None
    """A moved foreground command's cwd pipe, held open until it exits (see `running.Detached`)."""
    timeout_ms: int | None = None
    """A moved foreground command's timeout, counted from its start: it is stopped then."""
    timed_out: bool = False
    written: int = 0
    """Bytes written to the log so far."""
    log_error: str | None = None
    """Why the log stopped being written (a full disk); later output was drained and dropped."""
    done: anyio.Event = field(default_factory=anyio.Event)
    task: asyncio.Task[None] | None = None
    _news: anyio.Event = field(default_factory=anyio.Event)

    def has_news(self) -> bool:
        """Whether there is unread output or the job has ended."""
        return not self.running or self.written > self.read_offset

    async def wait_news(self) -> None:
        """Return at the next write to the log or the job's end."""
        await self._news.wait()

    def _announce(self) -> None:
        news, self._news = self._news, anyio.Event()
        news.set()

    @property
    def deadline(self) -> float | None:
        """`time.monotonic()` at which its timeout stops it, if it has one."""
        return None if self.timeout_ms is None else self.started + self.timeout_ms / 1000

    @property
    def running(self) -> bool:
        """Whether the job's process has not exited yet."""
        return not self.done.is_set()

    @property
    def state(self) -> str:
        """One word for lists: running, exited N, killed."""
        if self.running:
            return "running"
        if self.killed or self.over_cap or (self.returncode or 0) < 0:
            return "killed"
        return f"exited {self.returncode}"

    def status(self) -> str:
        """A predicate for sentences: "Shell bash_1 <status>."."""
        if self.running:
            return f"is running (for {time.monotonic() - self.started:.1f}s)"
        if self.over_cap:
            return f"was killed: its output passed the {size_text(LOG_CAP_BYTES)} log cap"
        if self.timed_out:
            return f"was killed: it ran past its timeout of {self.timeout_ms} ms"
        if self.killed:
            return "was killed"
        code = self.returncode if self.returncode is not None else -signal.SIGKILL
        if code < 0:
            return f"was ended by {reaping.signal_name(-code)} (exit code {128 - code})"
        return f"exited with code {code}"


@dataclass(frozen=True, slots=True)
class NewOutput:
    """A job's output since the last read, and how many older unread bytes were skipped to bound it."""

    text: str
    skipped_bytes: int


class JobRegistry:
    """The jobs of one session, by id."""

    def __init__(self, *, unguessable_ids: bool = False) -> None:
        self.jobs: dict[str, Job] = {}
        self.unguessable_ids = unguessable_ids
        """Ids with 128 random bits instead of a counter: where an id alone finds its job (stateless HTTP)."""
        self.on_end: list[Callable[[Job], None]] = []
        """Called (on the event loop, must not block) once a job has ended and been reaped."""
        self._next = 0

    def start(
        self, command: str, *, cwd: Path, env: dict[str, str], log_dir: Path, confinement: Confinement | None = None
    ) -> Job:
        """Start a job with its log in `log_dir` (in `confinement`'s sandbox when given).

        Called on the event loop's thread (it creates the watcher task there), which is also the thread
        a sandboxed job must be spawned from (see `spawning.require_loop_thread`).

        Raises:
            OSError: it cannot start.
        """
        job_id, log_path = self._new_id(log_dir)
        marker = spawning.Marker.new(spawning.CALL_VAR)
        out_r, out_w = os.pipe()
        try:
            forks = procs.fork_count()
            proc = spawning.spawn(
                command, cwd=cwd, env=spawning.with_marker(env, marker), output_fd=out_w, confinement=confinement
            )
        except BaseException:
            os.close(out_r)
            raise
        finally:
            os.close(out_w)
        marker = marker.started(proc.pid, forks)
        job = Job(job_id, command, proc, exit_watcher.ExitWatcher(proc), log_path, marker, out_fd=out_r)
        job.pid_namespace = confinement is not None and confinement.pid_namespace
        job.confinement = confinement
        self._open_log(job)
        return job

    def adopt(self, detached: running.Detached, command: str, *, log_dir: Path, timeout_ms: int) -> Job:
        """Take over a foreground command still running at the call's return-after budget.

        Synchronous, so the command is never without an owner. If even the log cannot be made, the
        command is stopped by the watcher's error path.
        """
        job_id, log_path = self._new_id(log_dir)
        job = Job(
            job_id,
            command,
            detached.proc,
            detached.watcher,
            log_path,
            detached.marker,
            started=detached.started,
            pid_namespace=detached.pid_namespace,
            out_fd=detached.out_fd,
            cwd_fd=detached.cwd_fd,
            timeout_ms=timeout_ms,
        )
        job.confinement = detached.confinement  # a container's processes are found and stopped inside it
        self._open_log(job)
        return job

    def _new_id(self, log_dir: Path) -> tuple[str, Path]:
        self._next += 1
        job_id = f"bash_{secrets.token_hex(16)}" if self.unguessable_ids else f"bash_{self._next}"
        return job_id, log_dir / f"{job_id}.log"

    def _open_log(self, job: Job) -> None:
        """Register the job and start its watcher, which writes its log (an unwritable log is said, not fatal)."""
        try:
            log_fd: int | None = os.open(
                job.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            log_fd, job.log_error = None, exc.strerror or str(exc)
        self.jobs[job.id] = job
        job.task = asyncio.get_running_loop().create_task(self._watch(job, log_fd), name=f"watch {job.id}")

    async def wait_for_news(self, job: Job, timeout_s: float) -> None:
        """Return once the job has new output or has ended, or after `timeout_s`."""
        with anyio.move_on_after(timeout_s):
            while not job.has_news():
                await job.wait_news()

    def get(self, job_id: str) -> Job | None:
        """The job with `job_id` (surrounding blanks ignored), or None."""
        return self.jobs.get(job_id.strip())

    def describe(self) -> str:
        """The jobs by id, for "no such id" errors."""
        if not self.jobs:
            return "No background shells were started in this session."
        listed = ", ".join(f"{job.id} ({job.state}: {_short(job.command)})" for job in self.jobs.values())
        return f"Known shells: {listed}."

    async def _watch(self, job: Job, log_fd: int | None) -> None:
        try:
            eof = anyio.Event()
            async with anyio.create_task_group() as tg:
                if job.out_fd is not None:
                    tg.start_soon(_pump, job, job.out_fd, log_fd, eof)
                await _until_end(job)
                job.proc.poll()
                if job.pid_namespace:
                    await reaping.namespace_teardown(job.proc.pid, job.marker)
                job.leftovers_stopped = await reaping.stop_remaining(job.proc.pid, job.marker)
                box = job.confinement.container if job.confinement is not None else None
                if box is not None:
                    job.leftovers_stopped = box.finish(job.marker.entry) or job.leftovers_stopped
                with anyio.move_on_after(running.DRAIN_S):  # what is still in the pipe; a process that escaped
                    await eof.wait()  # every net may hold it open: it is not waited for
                tg.cancel_scope.cancel()
        except Exception:
            logger.exception("watching background job %s failed", job.id)
            with anyio.CancelScope(shield=True):
                await reaping.stop(job.proc, job.watcher, job.marker, job.confinement)
        finally:
            for fd in (job.out_fd, job.cwd_fd, log_fd):
                if fd is not None:
                    os.close(fd)
            job.out_fd = job.cwd_fd = None
            job.proc.poll()
            job.returncode = job.proc.returncode
            job.watcher.close()
            job.done.set()
            job._announce()
            self._ended(job)

    def _ended(self, job: Job) -> None:
        for listener in self.on_end:
            try:
                listener(job)
            except Exception:
                logger.exception("a listener for the end of job %s failed", job.id)

    async def kill(self, job: Job) -> None:
        """Stop a running job and everything it started: TERM, then KILL after the grace period.

        The group and the descendants that left it are signalled here; once bash has exited, the watcher
        stops what remains in the group or carries the job's marker (TERM, grace, KILL), and `done` is set.
        """
        if not job.running:
            return
        job.killed = True
        if job.confinement is not None and job.confinement.container is not None:
            await job.confinement.container.stop_call(job.marker.entry)  # the client's death would not reach them
        strays = reaping.stray_descendants(job.proc.pid)
        reaping.signal_group(job.proc.pid, signal.SIGTERM)
        reaping.signal_pids(strays, signal.SIGTERM)
        with anyio.move_on_after(reaping.TERM_GRACE_S):
            await job.done.wait()
        if job.running:
            reaping.signal_group(job.proc.pid, signal.SIGKILL)
            reaping.signal_pids(strays, signal.SIGKILL)
            # bash's exit, then the watcher's stop of what remains: its grace, KILL and the rescans
            bound = reaping.KILL_WAIT_S + reaping.TERM_GRACE_S + (reaping.RESCAN_ROUNDS + 1) * reaping.KILL_WAIT_S
            with anyio.move_on_after(bound):
                await job.done.wait()
        reaping.signal_pids(strays, signal.SIGKILL)

    async def aclose(self) -> None:
        """Stop every job (the session is ending). Never raises: other closers must still run."""
        with anyio.CancelScope(shield=True):
            try:
                async with anyio.create_task_group() as tg:
                    for job in self.jobs.values():
                        tg.start_soon(self.kill, job)
            except Exception:
                logger.exception("stopping background jobs failed")
            for job in self.jobs.values():
                if job.task is not None and not job.task.done():
                    job.task.cancel()
                    with contextlib.suppress(BaseException):
                        await job.task

    def read_new(self, job: Job, pattern: LineFilter | None) -> NewOutput:
        """Output written since the last read (only lines matching `pattern`, when given), bounded."""
        finished = not job.running  # decided before reading: a finished job's log is complete
        if job.log_removed:
            return NewOutput(
                "[Its log was removed to keep the session's saved output within its budget; "
                "its output can no longer be read.]",
                0,
            )
        size = _size(job.log_path)
        start = job.read_offset
        skipped = max(0, size - start - SCAN_CAP_BYTES)
        start += skipped
        capture = OutputCapture(DEFAULT_CAP)
        try:
            handle = open(job.log_path, "rb")  # closed by the `with` below; a missing log is not an error
        except FileNotFoundError:
            return NewOutput(f"[Its log {job.log_path} was deleted; its output can no longer be read.]", 0)
        with handle:
            handle.seek(start)
            if pattern is None:
                consumed = _read_all(handle, size - start, capture)
            else:
                consumed = _read_matching(handle, size - start, capture, pattern, finished)
        job.read_offset = start + consumed
        capture.close()
        return NewOutput(capture.render(f"Full log: {job.log_path}"), skipped)


async def _until_end(job: Job) -> None:
    """Wait for the job's exit; stop it first if its log passes the cap or it runs past its timeout."""
    while True:
        step = CAP_CHECK_S
        deadline = job.deadline
        if deadline is not None:
            step = min(step, deadline - time.monotonic())
        if await job.watcher.wait(step):
            return
        if job.over_cap or (deadline is not None and time.monotonic() >= deadline):
            job.timed_out = not job.over_cap
            await reaping.stop(job.proc, job.watcher, job.marker, job.confinement)
            return


async def _pump(job: Job, fd: int, log_fd: int | None, eof: anyio.Event) -> None:
    """Copy the job's output pipe into its log as it comes, announcing each write; drop what passes the cap."""
    os.set_blocking(fd, False)
    while True:
        await anyio.wait_readable(fd)
        for _ in range(running.READS_PER_WAKE):
            try:
                data = os.read(fd, running.READ_CHUNK)
            except BlockingIOError:
                break
            if not data:
                eof.set()
                job._announce()
                return
            if log_fd is not None and job.log_error is None and not job.over_cap:
                _append(job, log_fd, data)
        job._announce()


def _append(job: Job, log_fd: int, data: bytes) -> None:
    if job.written + len(data) > LOG_CAP_BYTES:
        data = data[: max(0, LOG_CAP_BYTES - job.written)]
        job.over_cap = True  # the watcher stops the job within CAP_CHECK_S
    view = memoryview(data)
    try:
        while view:
            count = os.write(log_fd, view)
            job.written += count
            view = view[count:]
    except OSError as exc:
        job.log_error = exc.strerror or str(exc)
        logger.warning("background job %s: its log cannot be written (%s); its later output is dropped", job.id, exc)


class LineFilter(Protocol):
    """What BashOutput's `filter` is matched with (a compiled pattern with a time budget)."""

    def search(self, line: str) -> object:
        """A match object when `line` matches, else None."""


def _read_all(handle: BinaryIO, length: int, capture: OutputCapture) -> int:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    remaining = length
    while remaining > 0:
        block = handle.read(min(READ_BLOCK, remaining))
        if not block:
            break
        remaining -= len(block)
        capture.add_text(decoder.decode(block))
    pending = len(decoder.getstate()[0])  # a character cut in half: read it whole next time
    return length - remaining - pending


def _read_matching(handle: BinaryIO, length: int, capture: OutputCapture, pattern: LineFilter, finished: bool) -> int:
    remaining = length
    carry = b""
    while remaining > 0:
        block = handle.read(min(READ_BLOCK, remaining))
        if not block:
            break
        remaining -= len(block)
        lines = (carry + block).split(b"\n")
        carry = lines.pop()
        if len(carry) > LINE_CAP:
            lines.append(carry)
            carry = b""
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            if pattern.search(line):
                capture.add_text(line + "\n")
    consumed = length - remaining
    if carry and finished:
        line = carry.decode("utf-8", "replace")
        if pattern.search(line):
            capture.add_text(line)
    elif carry:
        consumed -= len(carry)  # an unfinished line: match it once it is complete
    return consumed


def _short(command: str, limit: int = 60) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
