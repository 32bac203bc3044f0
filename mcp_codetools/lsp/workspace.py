"""A session's language servers: started on first use per server and root, kept in step with the files.

Each server sees a document as the session last read or wrote it: before a request its file is sent with
`didOpen`, or `didChange` when its content changed since. Diagnostics are never stale: after an edit the
answer is read only from a `publishDiagnostics` for the version just sent. A server that crashes is started
again on the next call, a bounded number of times; all of them stop with the session.

A server runs as a Bash command would: with Bash's environment (the `bash_env_exclude` names and the
server's own secrets left out), and in a private empty folder of its own rather than at a root, so
nothing of the project sits in its working folder (see servers.py for the Python server's import path).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from mcp_codetools.files.scratch import make_scratch_dir
from mcp_codetools.lsp.servers import ServerSpec, for_file, program_in
from mcp_codetools.lsp.warming import GIVE_UP_S, Warming
from mcp_codetools.lsp.wire import Connection, ServerGone
from mcp_codetools.shell.spawning import command_env

logger = logging.getLogger(__name__)

MAX_STARTS = 3
"""Starts of one server (per root) within START_WINDOW_S; past that the tool says it keeps crashing."""
START_WINDOW_S = 600.0
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
MAX_MISSES = 2
"""Requests in a row a server may leave unanswered within the timeout before it is stopped (and started
afresh by the next call): one that misses this often is stuck, often still busy with a cancelled request.
Only a server past its indexing counts them (see `Client.indexing`): a cold one may be reading a large
project, and starting it again would only start the reading again."""


NEEDS = {
    "goToDefinition": "definitionProvider",
    "findReferences": "referencesProvider",
    "hover": "hoverProvider",
    "documentSymbol": "documentSymbolProvider",
    "workspaceSymbol": "workspaceSymbolProvider",
    "goToImplementation": "implementationProvider",
    "prepareCallHierarchy": "callHierarchyProvider",
    "incomingCalls": "callHierarchyProvider",
    "outgoingCalls": "callHierarchyProvider",
}
"""The capability a server announces for each of the LSP tool's operations."""


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class LanguageServerUnavailable(Exception):
    """No server can answer for this file now; the message says why and what to do."""


def file_uri(path: Path) -> str:
    """The `file://` URI of an absolute path."""
    return path.as_uri()


def uri_path(uri: str) -> Path | None:
    """The path of a `file://` URI (None for other schemes)."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


@dataclass
class _Published:
    version: int | None
    items: list[dict[str, Any]]
    serial: int


@dataclass
class Client:
    """One running server for one root: its connection, what it was told, what it published."""

    spec: ServerSpec
    root: Path
    conn: Connection
    capabilities: dict[str, Any]
    started_ms: float
    utf16: bool
    warming: Warming
    """Its requests, some left running past the call that asked (see warming.py)."""
    documents: dict[str, tuple[int, str]] = field(default_factory=dict)
    """uri → (version, digest of the text sent)."""
    published: dict[str, _Published] = field(default_factory=dict)
    serial: int = 0
    sent_serial: dict[str, int] = field(default_factory=dict)
    """uri → the publication count when its last text was sent (servers that publish no version)."""
    misses: int = 0
    """Requests in a row that found no answer within the timeout."""
    warm: bool = False
    """Whether it has answered a call (so a miss is not the indexing of a cold start)."""
    changed: anyio.Event = field(default_factory=anyio.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    sending: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def indexing(self) -> bool:
        """Whether it may still be reading the project: it has answered nothing yet, and has not run for long."""
        return not self.warm and time.monotonic() - self.warming.born < GIVE_UP_S

    def supports(self, capability: str) -> bool:
        """Whether the server announced a provider (`definitionProvider`, `callHierarchyProvider`, …)."""
        return bool(self.capabilities.get(capability))

    def unsupported(self) -> list[str]:
        """The LSP tool's operations this server cannot answer."""
        return [operation for operation, capability in NEEDS.items() if not self.supports(capability)]

    def has_seen(self, path: Path, text: str) -> bool:
        """Whether the server's copy of `path` is `text`."""
        known = self.documents.get(file_uri(path))
        return known is not None and known[1] == _digest(text)

    async def sync(self, path: Path, text: str) -> int:
        """Make the server's copy of `path` equal `text`; the document version it now has."""
        async with self.sending:  # reads run side by side: two of them must not both open a document
            return await self._sync(path, text)

    async def _sync(self, path: Path, text: str) -> int:
        uri = file_uri(path)
        digest = _digest(text)
        known = self.documents.get(uri)
        if known is not None and known[1] == digest:
            return known[0]
        with self.lock:  # before sending: the publication it causes may arrive before notify returns
            self.sent_serial[uri] = self.serial
        if known is None:
            version = 1
            await self.conn.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": self.spec.language_id(path), "version": 1, "text": text}},
            )
        else:
            version = known[0] + 1
            await self.conn.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
            )
        self.documents[uri] = (version, digest)
        return version

    def diagnostics(self, path: Path) -> list[dict[str, Any]] | None:
        """What the server last published for `path` (None: nothing yet)."""
        with self.lock:
            found = self.published.get(file_uri(path))
        return None if found is None else found.items

    async def diagnostics_for(self, path: Path, version: int, wait_s: float) -> list[dict[str, Any]] | None:
        """The diagnostics published for `version` of `path`, waiting up to `wait_s`; None when none came."""
        uri = file_uri(path)
        with anyio.move_on_after(wait_s):
            while True:
                with self.lock:
                    found = self.published.get(uri)
                    event = self.changed
                if found is not None and (
                    found.version >= version
                    if found.version is not None
                    else found.serial > self.sent_serial.get(uri, 0)
                ):
                    return found.items
                await event.wait()
        return None

    def on_notification(self, method: str, params: Any) -> None:
        """Keep `publishDiagnostics` (runs on the reader thread; waiters are woken on the event loop)."""
        if method != "textDocument/publishDiagnostics" or not isinstance(params, dict):
            return
        with self.lock:
            self.serial += 1
            version = params.get("version")
            self.published[str(params.get("uri"))] = _Published(
                version if isinstance(version, int) else None, list(params.get("diagnostics") or []), self.serial
            )
        self.conn.call_soon(self._wake)

    def _wake(self) -> None:
        with self.lock:
            event, self.changed = self.changed, anyio.Event()
        event.set()


class LanguageServers:
    """The language servers of one session."""

    def __init__(
        self, specs: Sequence[ServerSpec], *, env_exclude: Collection[str] = (), start_timeout_s: float = 20.0
    ) -> None:
        self.specs = list(specs)
        self.env_exclude = frozenset(env_exclude)
        """Variables the servers do not see, as Bash commands do not (the `bash_env_exclude` setting)."""
        self.start_timeout_s = start_timeout_s
        self._home: Path | None = None
        self._clients: dict[tuple[str, Path], Client] = {}
        self._starting: dict[tuple[str, Path], anyio.Lock] = {}
        self._starts: dict[tuple[str, Path], list[float]] = {}
        self._closed = False

    def spec_for(self, path: Path) -> ServerSpec | None:
        """The server for a file, by its extension."""
        return for_file(self.specs, path)

    def no_server_message(self, path: Path) -> str:
        """Why no server answers for this file, and what to use instead."""
        served = sorted({e for s in self.specs for e in s.extensions})
        return (
            f"No language server is configured for {path.suffix or 'files without an extension'} files "
            f"(served here: {', '.join(served) or 'none'}). Use Grep to find definitions and uses instead."
        )

    def running(self, path: Path, root: Path) -> Client | None:
        """The live server for this file and root, if one was started (never starts one)."""
        spec = self.spec_for(path)
        client = self._clients.get((spec.name, root)) if spec else None
        return client if client is not None and client.conn.alive else None

    async def client(self, path: Path, root: Path) -> Client:
        """The running server for this file's language and root, started (or restarted) when needed.

        Raises:
            LanguageServerUnavailable: no server serves the file, or it cannot be started.
        """
        spec = self.spec_for(path)
        if spec is None:
            raise LanguageServerUnavailable(self.no_server_message(path))
        return await self.client_of(spec, root)

    async def client_of(self, spec: ServerSpec, root: Path) -> Client:
        """The running `spec` server for `root`, started (or restarted) when needed (see `client`).

        Raises:
            LanguageServerUnavailable: it cannot be started, or stopped too often of late.
        """
        key = (spec.name, root)
        lock = self._starting.setdefault(key, anyio.Lock())
        async with lock:
            if self._closed:
                raise LanguageServerUnavailable("The session is closing.")
            current = self._clients.get(key)
            if current is not None and current.conn.alive:
                return current
            if current is not None:
                logger.warning(
                    "language server %s for %s stopped (%s); starting it again", spec.name, root, current.conn.gone
                )
                await current.conn.close()
            recent = [t for t in self._starts.get(key, []) if time.monotonic() - t < START_WINDOW_S]
            if len(recent) >= MAX_STARTS:
                raise LanguageServerUnavailable(
                    f"The {spec.name} language server stopped {len(recent)} times in the last "
                    f"{int(START_WINDOW_S // 60)} minutes and is not started again yet. Use Grep and Read meanwhile."
                )
            refuse_project_program(spec, [root])
            self._starts[key] = [*recent, time.monotonic()]
            client = await self._start(spec, root)
            self._clients[key] = client
            return client

    async def _start(self, spec: ServerSpec, root: Path) -> Client:
        started, born = time.perf_counter(), time.monotonic()
        holder: list[Client] = []

        def route(method: str, params: Any) -> None:
            if holder:
                holder[0].on_notification(method, params)

        try:
            env = spec.environment(command_env(read_only=True, exclude=self.env_exclude))
            conn = await Connection.start(spec.command, self._workdir(), route, env=env)
        except OSError as exc:
            raise LanguageServerUnavailable(
                f"Could not start the {spec.name} language server ({spec.command[0]}): {exc.strerror or exc}."
            ) from exc
        try:
            result = await conn.request("initialize", _initialize_params(spec, root), self.start_timeout_s)
            await conn.notify("initialized", {})
        except (TimeoutError, ServerGone, Exception) as exc:
            await conn.close()
            raise LanguageServerUnavailable(
                f"The {spec.name} language server did not start: {exc or type(exc).__name__}."
            ) from exc
        capabilities = (result or {}).get("capabilities") or {}
        encoding = capabilities.get("positionEncoding", "utf-16")
        elapsed_ms = (time.perf_counter() - started) * 1000
        warming = Warming(conn, root, spec.extensions, born)
        client = Client(spec, root, conn, capabilities, elapsed_ms, encoding == "utf-16", warming)
        holder.append(client)
        logger.info("language server %s started for %s in %.0f ms", spec.name, root, client.started_ms)
        return client

    def _workdir(self) -> Path:
        """The servers' working folder: private, empty, outside the roots (removed with them)."""
        if self._home is None:
            self._home = make_scratch_dir()
        return self._home

    def answered(self, client: Client) -> None:
        """Note that `client` answered a call in time."""
        client.misses = 0
        client.warm = True

    async def missed(self, client: Client) -> bool:
        """Count a request `client` did not answer in time; True when that made MAX_MISSES and it was stopped."""
        if not client.indexing:
            client.misses += 1
        if client.misses < MAX_MISSES or not client.conn.alive:
            return False
        logger.warning(
            "language server %s for %s missed %d requests in a row; stopping it",
            client.spec.name,
            client.root,
            MAX_MISSES,
        )
        await client.conn.close(graceful=False)
        return True

    def status(self) -> list[dict[str, Any]]:
        """Each running server: name, root, start time and resident memory (for doctor and logs)."""
        rows = []
        for (name, root), client in self._clients.items():
            rows.append(
                {
                    "name": name,
                    "root": str(root),
                    "alive": client.conn.alive,
                    "startMs": round(client.started_ms, 1),
                    "rssMiB": _rss_mib(client.conn.pid),
                }
            )
        return rows

    async def aclose(self) -> None:
        """Stop every server. Idempotent."""
        self._closed = True
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.conn.close()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None


def refuse_project_program(spec: ServerSpec, roots: Sequence[Path]) -> None:
    """Refuse to start a server whose program a root holds (see `program_in`).

    Raises:
        LanguageServerUnavailable: it does, saying which program and what to do.
    """
    program = program_in(spec, roots)
    if program is not None:
        raise LanguageServerUnavailable(
            f"The {spec.name} language server's program is {program}, inside a project folder: a project's own "
            "program is not started as a language server (a command may have changed it). Install the server "
            "outside the roots, or name it by an absolute path there in the user config's [lsp.servers]."
        )


def _initialize_params(spec: ServerSpec, root: Path) -> dict[str, Any]:
    uri = file_uri(root)
    return {
        "processId": os.getpid(),
        "clientInfo": {"name": "mcp-codetools"},
        "rootUri": uri,
        "rootPath": str(root),
        "workspaceFolders": [{"uri": uri, "name": root.name or str(root)}],
        "initializationOptions": spec.options_for(root),
        "capabilities": {
            "general": {"positionEncodings": ["utf-32", "utf-16"]},
            "textDocument": {
                "synchronization": {"didSave": False, "dynamicRegistration": False},
                "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
                "definition": {"linkSupport": True},
                "implementation": {"linkSupport": True},
                "references": {},
                "hover": {"contentFormat": ["plaintext", "markdown"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                "callHierarchy": {},
            },
            "workspace": {"symbol": {}, "workspaceFolders": True, "configuration": True},
        },
    }


def _rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            pages = int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024), 1)
