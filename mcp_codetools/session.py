"""`CodeSession`: everything one MCP session remembers between calls.

The read ledger (what was read, when, which part), the file history of edits, the working directory
shared by Bash and relative paths, background jobs, and the budget for output saved to disk. The
dispatcher decides who may touch it when.

Every process a session's commands start carries the session's marker in its environment; when the
session ends, its jobs are stopped and then whatever still carries the marker (see `shell.reaping`).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from mcp_codetools.files.history import FileHistory
from mcp_codetools.files.ledger import ReadLedger
from mcp_codetools.files.paths import Workspace
from mcp_codetools.files.realpaths import Pinned
from mcp_codetools.files.scratch import make_scratch_dir, sweep_once_in_background
from mcp_codetools.files.view import LineIndexCache
from mcp_codetools.settings import Settings
from mcp_codetools.shell import reaping, spawning
from mcp_codetools.shell.sandbox import Confinement, prepared
from mcp_codetools.shell.spills import SpillBudget
from mcp_codetools.shell.warm import WarmSlot

if TYPE_CHECKING:  # imported on first use: a Read needs none of them (the first call's start-up cost)
    from mcp_codetools.dispatcher import Dispatcher
    from mcp_codetools.lsp.workspace import LanguageServers
    from mcp_codetools.shell.background import JobRegistry

logger = logging.getLogger(__name__)

Closer = Callable[[], Awaitable[None]]
"""Stops something the session started; run once when the session ends, and must not raise."""

CLOSE_BOUND_S = 30.0
"""A backstop for closing a session: each step has its own bound (a job's stop takes at most ~12 s)."""


class CodeSession:
    """One MCP session's state. On stdio there is one per process."""

    def __init__(self, settings: Settings, *, unguessable_job_ids: bool = False) -> None:
        self.settings = settings
        self.unguessable_job_ids = unguessable_job_ids
        """Job ids with 128 random bits: a session reached through handles, where a job id alone finds it."""
        self.id = secrets.token_hex(8)
        """Names the session to hooks and in the audit log; not a secret, and not the process marker."""
        self.workspace = Workspace(settings.roots)
        self.cwd: Path = self.workspace.roots[0]
        self.roots_wanted = True
        """The client's roots are to be asked for before the next call (at the start, and after it says they
        changed)."""
        self.ledger = ReadLedger()
        self.history = FileHistory(
            lambda: self.scratch_dir / "history",
            max_bytes=settings.history_max_bytes,
            max_entries=settings.history_max_entries,
        )
        self.line_index = LineIndexCache()
        self.spills = SpillBudget(settings.spill_budget_bytes)
        self._process_marker = spawning.Marker.new(spawning.SESSION_VAR)
        self._marker_handed_out = False
        self._jobs: JobRegistry | None = None
        self._warm: WarmSlot | None = None
        self._language_servers: LanguageServers | None = None
        self._closers: list[Closer] = []
        self._scratch: Path | None = None
        self._confinement: Confinement | None = None
        self._confined_for: tuple[Path, ...] = ()
        self._dispatcher: Dispatcher | None = None
        sweep_once_in_background()  # the first session of a server removes what killed servers left

    @property
    def process_marker(self) -> spawning.Marker:
        """Carried by every process this session's commands start, to find them when it ends."""
        self._marker_handed_out = True
        return self._process_marker

    @property
    def dispatcher(self) -> Dispatcher:
        """The session's call scheduler, made on first use (imported late: it sits a layer above the session)."""
        if self._dispatcher is None:
            from mcp_codetools.dispatcher import Dispatcher

            self._dispatcher = Dispatcher(self.settings.max_concurrency, self.settings.queue_timeout_s)
        return self._dispatcher

    @property
    def jobs(self) -> JobRegistry:
        """The session's background jobs, created on first use; they are stopped when the session ends."""
        if self._jobs is None:
            from mcp_codetools.shell.background import JobRegistry

            self._jobs = JobRegistry(unguessable_ids=self.unguessable_job_ids)
            self.on_close(self._jobs.aclose)
        return self._jobs

    @property
    def warm_shell(self) -> WarmSlot:
        """Where the bash for the next command waits (`shell.warm`); it is stopped when the session ends."""
        if self._warm is None:
            self._warm = WarmSlot()
            self.on_close(self._warm.aclose)
        return self._warm

    def job_ids(self) -> list[str]:
        """The ids of the jobs started in this session (none made the registry: an empty list)."""
        return list(self._jobs.jobs) if self._jobs is not None else []

    def holds_state(self) -> bool:
        """Whether a later call could need anything this session remembers (reads, cwd, jobs, history, files)."""
        return bool(
            self.ledger.paths()
            or self.cwd != self.workspace.roots[0]
            or self.job_ids()
            or self.history.entries()
            or self._scratch is not None
            or self._language_servers is not None
        )

    @property
    def language_servers(self) -> LanguageServers:
        """The session's language servers (each started on first use); they stop when the session ends."""
        if self._language_servers is None:
            from mcp_codetools.lsp.servers import available
            from mcp_codetools.lsp.workspace import LanguageServers

            self._language_servers = LanguageServers(
                available(self.settings.lsp_servers), env_exclude=self.settings.bash_env_exclude
            )
            self.on_close(self._language_servers.aclose)
        return self._language_servers

    @property
    def language_servers_started(self) -> bool:
        """Whether any call has asked for a language server yet (edits look for diagnostics only then)."""
        return self._language_servers is not None

    def on_close(self, closer: Closer) -> None:
        """Run `closer` when the session ends, in the order registered."""
        self._closers.append(closer)

    @property
    def scratch_dir(self) -> Path:
        """A private temporary folder for this session (full command output and the like; see `files.scratch`)."""
        if self._scratch is None:
            self._scratch = make_scratch_dir()
            self.workspace.add_readable(self._scratch)
        return self._scratch

    @property
    def confinement(self) -> Confinement | None:
        """The sandbox this session's commands run in (None when it is off), set up on first use.

        Writable: the roots served now and the scratch folder, so a root the client adds becomes writable
        and one it drops stops being so; TMPDIR (Landlock, where /tmp is not writable) is a folder inside
        the scratch folder. The backend was probed once for the process (at start-up).

        Raises:
            SandboxUnavailable: the sandbox is on and no backend can run here.
        """
        sandbox = prepared(self.settings.sandbox)
        if sandbox is None:
            return None
        writable = (*self.workspace.roots, self.scratch_dir)
        if self._confinement is None or self._confined_for != writable:
            tmpdir = self.scratch_dir / "tmp"
            tmpdir.mkdir(mode=0o700, exist_ok=True)
            self._confinement = Confinement.for_session(sandbox, writable, tmpdir, self.scratch_dir)
            self._confined_for = writable
            if self._confinement.container is not None:
                # Its mounts are fixed when it starts: roots that change get a new container, and each is
                # removed when the session ends.
                self.on_close(self._confinement.container.remove)
        return self._confinement

    def resolve(self, raw: str, *, field: str = "file_path", for_read: bool = False) -> Path:
        """A path confined to the roots; `for_read` also admits the session's own scratch folder."""
        return self.workspace.resolve(raw, self.cwd, field=field, for_read=for_read)

    def resolve_pinned(
        self, raw: str, *, field: str = "file_path", for_read: bool = False
    ) -> tuple[Path, Pinned | None]:
        """As `resolve`, with the file held where the system can (`Workspace.resolve_pinned`); the caller closes it."""
        return self.workspace.resolve_pinned(raw, self.cwd, field=field, for_read=for_read)

    def set_cwd(self, path: Path) -> bool:
        """Move the working directory; refuse (return False) a folder outside the roots."""
        real = Path(os.path.realpath(path))
        if not real.is_dir() or not self.workspace.contains(real):
            return False
        self.cwd = real
        return True

    async def aclose(self) -> None:
        """End the session: stop what it started and remove its scratch folder. Idempotent.

        Shielded (within a bound): it runs when the server is being cancelled, at a stop signal or a lost
        client, and a cancelled close would leave the session's processes running.
        """
        with anyio.move_on_after(CLOSE_BOUND_S, shield=True):
            await self._close()

    async def _close(self) -> None:
        closers, self._closers = self._closers, []
        for close in closers:
            try:
                await close()
            except Exception:
                logger.exception("closing a session resource failed; going on with the rest")
        try:  # the last net: processes that escaped their job's or call's tracking but kept the session's marker
            if self._marker_handed_out:  # else no process can carry it, and the scan (~1 ms) is saved
                await reaping.stop_remaining(None, self._process_marker)
        except Exception:
            logger.exception("stopping the session's remaining processes failed")
        await anyio.to_thread.run_sync(self.history.close)  # its background writes go into the scratch folder
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
