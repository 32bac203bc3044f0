"""The start snapshot: `initialize` and `tools/list` answered from disk while the MCP SDK is still importing.

Importing the SDK costs ~0.6 s, more than a whole start of a Node server, and hosts start every server at
once, so the slowest sets the wait. A start that finds a snapshot for its inputs (`snapshot_key`) answers
the handshake from it (JSON only) from a thread while the main thread imports the SDK and runs the normal start-up;
every line read meanwhile is kept and fed, in order, into the real stdio wire afterwards, so the SDK's
state is what it would have been (`protocol/stdio.py`, `protocol/start_snapshot.py` compare its answers).
Nothing here imports pydantic or the SDK: this module only reads files, the environment and the stdio
descriptors. Without a snapshot the start is the normal one, which records the snapshot afterwards.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import select
import stat
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp_codetools import __version__

FORMAT = 1
"""The snapshot file's layout; a file of another format is ignored (and replaced by the next normal start)."""
SNAPSHOT_ENV = "MCP_CODETOOLS_START_SNAPSHOT"
"""The `start_snapshot` setting's variable, read here too so that `0` skips even the key computation."""
_OFF = frozenset({"0", "false", "f", "no", "n", "off"})
PROJECT_FILE = "mcp-codetools.toml"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
_ENVELOPE_KEYS = (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY)
_KEY_ENV = ("HOME", "XDG_CONFIG_HOME", "PATH")
"""Besides every `MCP_CODETOOLS_*` variable: where the user's config file is, and where programs are found."""
KEPT_SNAPSHOTS = 16
"""Snapshots kept in the cache folder (each is ~90 KB); older ones are deleted by the next recording."""
_SNAPSHOT_NAME = re.compile(r"[0-9a-f]{64}\.(json|code)")
"""A snapshot, or the code kept with it (`generated_code.py`)."""
MAX_CONFIG_BYTES = 1 << 20
READ_CHUNK = 64 * 1024
MAX_PARSED_LINE = 1 << 20
"""A longer line is not looked at here (it is no handshake request); the SDK still gets it."""


def cache_dir(environ: Mapping[str, str] | None = None) -> str:
    """Where snapshots are kept: `$XDG_CACHE_HOME/mcp-codetools/start` (an absolute one), else `~/.cache/...`."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mcp-codetools", "start")


def snapshot_off(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the `start_snapshot` setting is off in the environment (a config file's value is in the key)."""
    env = os.environ if environ is None else environ
    return env.get(SNAPSHOT_ENV, "").strip().lower() in _OFF


def _argv_paths(argv: Sequence[str]) -> tuple[list[str], str | None] | None:
    """The `--root` and `--config` values as argparse reads them; None where that cannot be told without it."""
    roots: list[str] = []
    config: str | None = None
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, value = token.partition("=")
        if token == "--":
            return None
        if name in ("--root", "--config"):
            if not eq:
                i += 1
                if i >= len(argv):
                    return None
                value = argv[i]
            if name == "--root":
                roots.append(value)
            else:
                config = value
        elif len(name) > 2 and name.startswith("--") and ("--root".startswith(name) or "--config".startswith(name)):
            return None  # an abbreviation argparse expands
        i += 1
    return roots, config


def _file_state(path: str) -> object:
    """A config file's bytes (its size and mtime when large), or why it cannot be read."""
    try:
        info = os.stat(path)
        if info.st_size > MAX_CONFIG_BYTES:
            return ("large", info.st_size, info.st_mtime_ns)
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError as exc:
        return ("unreadable", exc.errno)


def _installed() -> list[object]:
    """The SDK's distributions (their names carry the versions) and the state of this package's sources."""
    found: list[object] = []
    for name in ("mcp", "mcp_types"):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            found.append((name, None))
            continue
        site = os.path.dirname(os.path.dirname(origin))
        try:
            dists = sorted(e for e in os.listdir(site) if e.startswith(("mcp-", "mcp_")) and e.endswith(".dist-info"))
        except OSError:
            dists = []
        found.append((name, origin, dists))
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file in sorted(files):
            if file.endswith(".py"):
                info = os.stat(os.path.join(folder, file))
                found.append((os.path.relpath(os.path.join(folder, file), package), info.st_size, info.st_mtime_ns))
    return found


def _language_server(environ: Mapping[str, str]) -> bool:
    """Whether the LSP tool is listed: jedi-language-server importable here or on the PATH (`lsp/servers.py`)."""
    if importlib.util.find_spec("jedi_language_server") is not None:
        return True
    for folder in environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(folder or ".", "jedi-language-server")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


def _roots(given: Sequence[str], cwd: str) -> list[str]:
    """The roots as the settings resolve them (`--root` values, else the working folder), links followed."""
    return [os.path.realpath(os.path.join(cwd, os.path.expanduser(r))) for r in given] or [os.path.realpath(cwd)]


def inside_a_root(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> bool:
    """Whether the snapshot folder lies in a root (or the roots cannot be told): a tool call could write it there.

    What a snapshot holds reaches the client before anything can check it, so one that a call could have
    written (a Bash command, an Edit) is never read, nor recorded there. The policy keeps the folder like
    the config files (a protected path, read-only in the sandbox) for roots a client adds later.
    """
    paths = _argv_paths(argv)
    if paths is None:
        return True
    folder = os.path.realpath(cache_dir(environ))
    return any(os.path.commonpath([folder, root]) == root for root in _roots(paths[0], os.getcwd()))


def snapshot_key(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> str | None:
    """A digest of everything the `initialize` and `tools/list` answers depend on; None: no snapshot for this start.

    The settings come from argv, `MCP_CODETOOLS_*` and the config files (the user's, the project's at the
    first root, `--config`), so all of them are in; tool descriptions and the LSP tool follow from them and
    from whether a language server can run. The package sources and the SDK's versions are in too.
    """
    env = os.environ if environ is None else environ
    paths = _argv_paths(argv)
    if paths is None:
        return None
    given_roots, config = paths
    cwd = os.getcwd()
    roots = _roots(given_roots, cwd)
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    files = [os.path.join(xdg, "mcp-codetools", "config.toml"), os.path.join(roots[0], PROJECT_FILE)]
    if config is not None:
        files.append(os.path.join(cwd, os.path.expanduser(config)))
    variables = sorted((k, v) for k, v in env.items() if k.startswith("MCP_CODETOOLS_") or k in _KEY_ENV)
    parts: list[object] = [FORMAT, __version__, sys.executable, sys.version, cwd, list(argv), roots, variables]
    parts += [(path, _file_state(path)) for path in files]
    parts += [_installed(), _language_server(env)]
    return hashlib.sha256(json.dumps(parts, default=repr).encode()).hexdigest()


class Plan:
    """Where this start's snapshot is (or would be) kept."""

    def __init__(self, key: str, environ: Mapping[str, str] | None = None) -> None:
        self.key = key
        self.path = os.path.join(cache_dir(environ), f"{key}.json")

    def load(self) -> dict[str, Any] | None:
        """The snapshot for this key, or None (absent, unreadable, corrupt, another format or key).

        Only a regular file of this user's that no one else can write is believed: its answers reach the
        client before anything can check them.
        """
        try:
            with open(self.path, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
                    return None
                data = json.loads(handle.read())
        except (OSError, ValueError, RecursionError):
            return None
        return data if _well_formed(data, self.key) else None

    def write(self, answers: dict[str, Any]) -> None:
        """Store answers atomically (a temporary file renamed over), readable by this user only."""
        folder = os.path.dirname(self.path)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        temporary = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as out:
                json.dump({"format": FORMAT, "key": self.key, **answers}, out, ensure_ascii=False)
            os.replace(temporary, self.path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        _prune(folder, keep=self.path)

    def delete(self) -> None:
        """Drop the snapshot (it disagreed with the SDK): the next start records it again."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def _prune(folder: str, keep: str) -> None:
    """Keep the newest `KEPT_SNAPSHOTS` snapshots, and as many kept codes: each version or config edit makes a key."""
    try:
        found = [e for e in os.scandir(folder) if _SNAPSHOT_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False)]
        for suffix in (".json", ".code"):
            same = [e for e in found if e.name.endswith(suffix)]
            same.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns, reverse=True)
            for entry in same[KEPT_SNAPSHOTS:]:
                if entry.path != keep:
                    os.unlink(entry.path)
    except OSError:
        pass  # another start pruned the same files


def _results_by_version(table: object, methods: tuple[str, ...]) -> bool:
    return isinstance(table, dict) and all(
        isinstance(version, str)
        and isinstance(answers, dict)
        and all(isinstance(answers.get(method), dict) for method in methods)
        for version, answers in table.items()
    )


def _well_formed(data: object, key: str) -> bool:
    return (
        isinstance(data, dict)
        and data.get("format") == FORMAT
        and data.get("key") == key
        and _results_by_version(data.get("handshake"), ("initialize", "tools/list"))
        and _results_by_version(data.get("modern"), ("server/discover", "tools/list"))
        and isinstance(data.get("discover"), dict)
    )


def plan_for(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Plan | None:
    """This start's snapshot place, for a start that may serve stdio from a snapshot or record one.

    None when snapshots are off, or when their folder lies in a root (`inside_a_root`).
    """
    if sys.platform == "win32" or snapshot_off(environ) or inside_a_root(argv, environ):
        return None
    key = snapshot_key(argv, environ)
    return Plan(key, environ) if key is not None else None


def redirect_wire() -> tuple[int, int, int, int]:
    """Take the protocol stream off fd 0 and 1: returns duplicates of both (to serve) and of both (to restore).

    fd 0 then reads /dev/null and fd 1 writes to stderr, so no library or child process reaches the wire.
    """
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return wire_in, wire_out, saved_in, saved_out


def _is_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _is_info(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("name"), str) and isinstance(value.get("version"), str)


class SnapshotAnswers:
    """Which requests the snapshot answers, as the SDK would: the rest are left to it (`None`)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data
        self.version: str | None = None
        """The handshake version the snapshot's `initialize` answer negotiated."""
        self._handshake_held = False
        self._stopped = False
        self._seen: set[str | int] = set()
        self.answered: dict[str | int, dict[str, Any]] = {}
        """Each answered request's id and the response sent, for the comparison with the SDK's."""
        self.client_capabilities: dict[str, Any] | None = None
        """What the client declared in the `initialize` answered here (`early_calls` serves by it)."""

    def stop(self) -> None:
        """Answer nothing more (the input is no longer followed line by line)."""
        self._stopped = True

    def answer(self, line: bytes) -> bytes | None:
        """The response line for one input line, or None when the SDK must answer it."""
        if self._stopped:
            return None
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        if not isinstance(message.get("method"), str):
            return None
        method = message["method"]
        if "id" not in message:
            return None
        request_id = message["id"]
        if not _is_id(request_id) or request_id in self._seen:
            if method == "initialize":
                self._handshake_held = True
            return None
        self._seen.add(request_id)
        params = message.get("params")
        result = self._result(method, params) if params is None or isinstance(params, dict) else None
        if result is None:
            if method == "initialize":
                self._handshake_held = True
            return None
        response = {"jsonrpc": "2.0", "id": request_id, "result": result}
        self.answered[request_id] = response
        return json.dumps(response, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    def _modern_version(self, meta: Mapping[str, Any]) -> str | None:
        version = meta.get(PROTOCOL_VERSION_KEY)
        if not isinstance(version, str) or version not in self._data["modern"]:
            return None
        if not isinstance(meta.get(CLIENT_CAPABILITIES_KEY), dict):
            return None
        if CLIENT_INFO_KEY in meta and not _is_info(meta[CLIENT_INFO_KEY]):
            return None
        return version

    def _result(self, method: str, params: dict[str, Any] | None) -> dict[str, Any] | None:
        if params is not None and set(params) - {"_meta", "protocolVersion", "capabilities", "clientInfo"}:
            return None  # a cursor, or anything else the snapshot did not see
        given = (params or {}).get("_meta")
        if given is not None and not isinstance(given, dict):
            return None
        meta: dict[str, Any] = given or {}
        enveloped = PROTOCOL_VERSION_KEY in meta
        if method == "server/discover":
            if set(params or {}) - {"_meta"}:
                return None
            if not any(key in meta for key in _ENVELOPE_KEYS):
                return dict(self._data["discover"])  # a bare probe: answered for the newest version (eras.py)
            version = self._modern_version(meta) if enveloped else None
            return self._data["modern"][version]["server/discover"] if version else None
        if enveloped:
            version = self._modern_version(meta) if method == "tools/list" and set(params or {}) == {"_meta"} else None
            return self._data["modern"][version]["tools/list"] if version else None
        if method == "initialize":
            return self._initialize(params)
        if method == "tools/list" and self.version is not None and not self._handshake_held:
            if set(params or {}) - {"_meta"}:
                return None
            result: dict[str, Any] = self._data["handshake"][self.version]["tools/list"]
            return result
        return None

    def _initialize(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        if self.version is not None or self._handshake_held or params is None:
            return None
        version = params.get("protocolVersion")
        if not isinstance(params.get("capabilities"), dict) or not _is_info(params.get("clientInfo")):
            return None
        if not isinstance(version, str) or version not in self._data["handshake"]:
            return None
        self.version = version
        self.client_capabilities = params["capabilities"]
        result: dict[str, Any] = self._data["handshake"][version]["initialize"]
        return result


class EarlyStart:
    """A start served from a snapshot: the wire taken over, answered from a thread while the start-up runs.

    The start-up (the SDK import above all) keeps the main thread, where it runs as fast as at a normal
    start; the answering thread needs the interpreter only for the few milliseconds of each answer.
    """

    def __init__(self, plan: Plan, data: dict[str, Any], prepare: Callable[[], Any]) -> None:
        self.plan = plan
        self.answers = SnapshotAnswers(data)
        self.wire_in, self.wire_out, self.saved_in, self.saved_out = redirect_wire()  # before any import
        self.buffered: list[bytes] = []
        """Every chunk read before the start-up was done, for the stdio wire to read first."""
        self.verdicts: list[bool] = []
        """For each whole line read, in order: whether the snapshot answered it (`early_calls` goes on from there)."""
        self.lost_track = False
        """A line too long to look at came: the lines after it were neither answered nor counted."""
        self.peer_gone = False
        self._prepare = prepare
        self._ready_read, self._ready_write = os.pipe()
        self._thread = threading.Thread(target=self._answer, name="mcp-codetools-start", daemon=True)
        self._thread.start()

    def wait(self) -> Any:
        """Run the start-up and return its result (or raise its exception) once the answering has stopped."""
        try:
            return self._prepare()
        finally:
            os.write(self._ready_write, b".")
            self._thread.join()
            os.close(self._ready_read)
            os.close(self._ready_write)

    def _answer(self) -> None:
        """Answer what the snapshot can, line by line, until the start-up is done or the input ends."""
        pending = b""
        while True:
            readable, _, _ = select.select([self.wire_in, self._ready_read], [], [])
            if self._ready_read in readable:
                return
            try:
                chunk = os.read(self.wire_in, READ_CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                return
            self.buffered.append(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                answer = self.answers.answer(line)
                self._say(answer)
                if not self.lost_track:
                    self.verdicts.append(answer is not None)
            if len(pending) > MAX_PARSED_LINE:
                pending = b""
                self.answers.stop()
                self.lost_track = True

    def _say(self, data: bytes | None) -> None:
        if data is None or self.peer_gone:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.wire_out, view) :]
        except OSError:
            self.peer_gone = True

    def close(self) -> None:
        """Put fd 0 and 1 back (the wire's duplicates are closed by the wire)."""
        os.dup2(self.saved_in, 0)
        os.dup2(self.saved_out, 1)
        os.close(self.saved_in)
        os.close(self.saved_out)


def begin(plan: Plan | None, prepare: Callable[[], Any]) -> EarlyStart | None:
    """Start from the snapshot when there is one for `plan` and stdin is not a terminal; None: start normally."""
    if plan is None or os.isatty(0):
        return None
    data = plan.load()
    if data is None:
        return None
    return EarlyStart(plan, data, prepare)
