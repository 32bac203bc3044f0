"""Settings: one model, fed by several sources, later wins.

1. built-in defaults (the field defaults below);
2. `~/.config/mcp-codetools/config.toml` (`$XDG_CONFIG_HOME` when set);
3. `mcp-codetools.toml` at the first root;
4. the file given by `--config`;
5. the environment (`MCP_CODETOOLS_*`, one variable per setting);
6. flags.

The project file lives where the model can write, so for the settings that confine it (`TIGHTENING`)
it may only move a value the tight way from what the defaults and the user's file said: the sandbox on,
its network off, more variables hidden, and so on. A loosening value is ignored, logged and listed by
`mcp-codetools config`. The later sources (`--config`, the environment, flags) are the user's own, given
where the server is started, and win as before.

The policy (`policy/loading.py`) reads its `[permissions]` and `[hooks]` tables from the same files, found
and read by the functions here, so the two never disagree about which files count or how a bad one is
reported. Every value is checked where it comes from: a bad one stops the server with a message naming
the file and key, the variable or the flag, never falls back to a default.

Plain pydantic rather than `pydantic-settings`: its sources are merged before validation, so an error
could not say which file or variable held the bad value, and it has no notion of where a value came from,
which `mcp-codetools config` prints.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import ConfigDict, Field, ValidationError, field_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.fields import FieldInfo

DEFAULT_MAX_CONCURRENCY = 10
DEFAULT_QUEUE_TIMEOUT_S = 600.0
MAX_RESULT_TOKENS = 25_000
DEFAULT_SPILL_BUDGET_BYTES = 2 << 30
DEFAULT_SESSION_IDLE_TIMEOUT_S = 30 * 60.0
SANDBOX_BACKENDS = ("auto", "bwrap", "landlock", "seatbelt", "container")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

PROJECT_FILE = "mcp-codetools.toml"
ENV_PREFIX = "MCP_CODETOOLS_"
POLICY_SECTIONS = frozenset({"permissions", "hooks"})
"""Tables in the same files that `policy/loading.py` reads and checks."""


logger = logging.getLogger(__name__)


class ConfigError(ValueError):
    """A setting or config file the server refuses to start with; the message names where it came from.

    `problems` holds each problem on its own (the message joins them), for `config --check`.
    """

    def __init__(self, message: str, problems: Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class LanguageServerEntry:
    """One `[lsp.servers.NAME]` table: the program to start, the files it serves, its initialization options."""

    command: Annotated[tuple[str, ...], Field(min_length=1)]
    extensions: Annotated[tuple[str, ...], Field(min_length=1)]
    initialization_options: dict[str, Any] = field(default_factory=dict)
    diagnostics: bool = True
    """Whether an edit waits (up to `lsp.diagnostics_wait_s`) for the server's diagnostics of the new text."""


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class SandboxSettings:
    """The Bash sandbox (`mcp_codetools.shell.sandbox`): here so that settings sit below the shell layer."""

    enabled: Annotated[
        bool,
        Field(description="Run Bash and its children in an OS sandbox (bubblewrap, else Landlock; Seatbelt on macOS)."),
    ] = False
    network: Annotated[bool, Field(description="Let sandboxed commands use the network.")] = False
    backend: Annotated[
        Literal["auto", "bwrap", "landlock", "seatbelt", "container"],
        Field(
            description="Which sandbox: `auto` (on Linux bubblewrap where user namespaces work, else Landlock; "
            "on macOS Seatbelt), `bwrap`, `landlock`, `seatbelt`, or `container` (each session's commands in a "
            "container of `image`)."
        ),
    ] = "auto"
    image: Annotated[
        str, Field(description="The image the `container` backend runs commands in (e.g. the project's dev container).")
    ] = ""
    engine: Annotated[
        Literal["docker", "podman"], Field(description="The container engine's command: `docker` or `podman`.")
    ] = "docker"
    memory: Annotated[str, Field(description="The container's memory limit (`--memory`; empty: none).")] = "4g"
    pids: Annotated[int, Field(ge=0, description="The container's process limit (`--pids-limit`; 0: none).")] = 1024
    cpus: Annotated[float, Field(ge=0, description="The container's CPU limit (`--cpus`; 0: none).")] = 2.0
    mask: Annotated[
        tuple[str, ...],
        Field(description="Paths to mask, beside the default credential folders (comma-separated in the environment)."),
    ] = ()
    env: Annotated[
        tuple[str, ...],
        Field(
            description="Environment variables passed through to sandboxed commands, beside the built-in "
            "allow-list (comma-separated in the environment)."
        ),
    ] = ()

    @field_validator("backend", mode="before")
    @classmethod
    def _known_backend(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.strip().lower()
            if value not in SANDBOX_BACKENDS:
                raise ValueError(f"{value!r} is not a sandbox backend; use one of {', '.join(SANDBOX_BACKENDS)}")
        return value

    @field_validator("env")
    @classmethod
    def _variable_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        bad = [name for name in names if not _ENV_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"{', '.join(map(repr, bad))} are not variable names; give names such as CI, GOPATH")
        return names

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SandboxSettings:
        """From `MCP_CODETOOLS_SANDBOX*` (and the rest of the environment, which must be valid too).

        Raises:
            ConfigError: a variable holds a bad value.
        """
        return load_settings(None, environ=environ, read_files=False).settings.sandbox


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Settings:
    """How one server instance behaves. Nothing here can be changed by the model.

    Each field's description is its documentation: the README's configuration reference is generated
    from it (`mcp-codetools config --markdown`).
    """

    roots: Annotated[tuple[Path, ...], Field(description="Workspace folders the tools may use.")] = field(
        default_factory=lambda: (Path.cwd(),)
    )
    max_concurrency: Annotated[int, Field(ge=1, description="Read-only calls that may run at once.")] = (
        DEFAULT_MAX_CONCURRENCY
    )
    queue_timeout_s: Annotated[
        float, Field(gt=0, description="Seconds a call may wait for its turn before it is refused.")
    ] = DEFAULT_QUEUE_TIMEOUT_S
    max_result_tokens: Annotated[
        int, Field(ge=1000, description="Size of one result, in tokens (4 characters each).")
    ] = MAX_RESULT_TOKENS
    read_default_lines: Annotated[
        int, Field(ge=1, description="Lines Read returns when the call gives no `limit`.")
    ] = 2000
    grep_head_limit: Annotated[
        int, Field(ge=1, description="Entries Grep returns when the call gives no `head_limit`.")
    ] = 250
    grep_max_result_chars: Annotated[
        int, Field(ge=1000, description="Characters of one Grep result (also bounded by `max_result_tokens`).")
    ] = 20_000
    glob_max_files: Annotated[int, Field(ge=1, description="Paths one Glob result lists.")] = 100
    glob_no_ignore: Annotated[
        bool, Field(description="List gitignored files in Glob too (Claude Code's Glob does by default).")
    ] = False
    bash_default_timeout_ms: Annotated[
        int, Field(ge=1000, description="Timeout of a Bash command when the call gives none, in milliseconds.")
    ] = 120_000
    bash_max_timeout_ms: Annotated[
        int, Field(ge=1000, description="Highest timeout a Bash call may ask for; a higher one is lowered to it.")
    ] = 600_000
    bash_return_after_s: Annotated[
        float,
        Field(
            gt=0,
            description="Seconds a Bash call waits for its command before returning with the command moved to the "
            "background (its timeout still applies); keep it under the client's own request timeout.",
        ),
    ] = 45
    bash_output_chars: Annotated[
        int, Field(ge=2000, description="Characters of a command's output in the result; the rest is saved to a file.")
    ] = 30_000
    bash_env_exclude: Annotated[
        frozenset[str],
        Field(
            description="Variables Bash commands do not see, besides the server's own `MCP_CODETOOLS_*TOKEN*` "
            "secrets (comma-separated in the environment)."
        ),
    ] = frozenset()
    spill_budget_bytes: Annotated[
        int,
        Field(
            ge=1,
            description="Disk one session's saved command output and job logs may take; past it the oldest files go.",
        ),
    ] = DEFAULT_SPILL_BUDGET_BYTES
    hard_links: Annotated[
        Literal["refuse", "write-through"],
        Field(
            description='Edit/Write on a file with several hard links: "refuse" (another link may be outside the '
            'roots) or "write-through" (write it in place, so every link sees the change).'
        ),
    ] = "refuse"
    edit_recovery: Annotated[
        Literal["apply", "suggest", "off"],
        Field(
            description="When Edit's old_string is not in the file as written but matches one region once Read's "
            "line-number prefixes, quote style, trailing whitespace, line endings or a uniform indentation shift "
            'are undone: "apply" the edit there (the result says what was undone), "suggest" the region in the '
            'error, or "off".'
        ),
    ] = "apply"
    syntax_check: Annotated[
        Literal["report", "refuse", "off"],
        Field(
            description='After an edit of a Python file: "report" a syntax error the change introduced, "refuse" '
            'such an edit (the file stays unchanged), or "off".'
        ),
    ] = "report"
    lsp_timeout_s: Annotated[
        float, Field(gt=0, description="Seconds the LSP tool waits for a language server's answer.")
    ] = 10.0
    lsp_diagnostics_wait_s: Annotated[
        float,
        Field(
            ge=0,
            description="Seconds an edit waits for a running language server's diagnostics of the new text "
            "(0: do not wait).",
        ),
    ] = 1.5
    lsp_servers: Annotated[
        dict[str, LanguageServerEntry],
        Field(
            description="Language servers beside the built-in Python one, as `[lsp.servers.NAME]` tables with "
            "`command`, `extensions` and optional `initialization_options` and `diagnostics` (true: edits wait "
            "for them); used when the program is on the PATH. "
            "Read from the user's config only: a project file cannot name a program to run."
        ),
    ] = field(default_factory=dict)
    history_max_bytes: Annotated[
        int,
        Field(
            ge=0,
            description="Bytes of earlier file versions one session keeps (the file history, kept on disk in "
            "the session's scratch folder).",
        ),
    ] = 256 * 1024 * 1024
    history_max_entries: Annotated[int, Field(ge=0, description="Earlier file versions one session keeps.")] = 200
    image_max_side: Annotated[
        int, Field(ge=1, description="Read shows an image no larger than this on its longest side (pixels).")
    ] = 1568
    image_max_pixels: Annotated[
        int,
        Field(
            ge=1,
            description="Read shows an image no larger than this in area (pixels); beyond this or "
            "`image_max_side` it is scaled down, aspect ratio kept.",
        ),
    ] = 1_150_000
    image_max_bytes: Annotated[
        int, Field(ge=1024, description="An encoded image above this size is encoded again, smaller.")
    ] = 512 * 1024
    result_max_images: Annotated[
        int, Field(ge=0, description="Images one Read result may carry (notebook outputs, scanned PDF pages).")
    ] = 8
    pdf_max_pages: Annotated[int, Field(ge=1, description="Pages one Read of a PDF may ask for.")] = 20
    pdf_pages_without_range: Annotated[
        int, Field(ge=1, description="A longer PDF read without `pages` answers with an overview instead of text.")
    ] = 10
    notebook_output_chars: Annotated[
        int, Field(ge=100, description="Characters of one notebook cell output shown before it is cut.")
    ] = 4000
    http_host: Annotated[str, Field(min_length=1, description="HTTP transport: the address to listen on.")] = (
        "127.0.0.1"
    )
    http_port: Annotated[
        int, Field(ge=0, le=65535, description="HTTP transport: the port to listen on (0 picks a free one).")
    ] = 8765
    session_idle_timeout_s: Annotated[
        float,
        Field(
            gt=0,
            allow_inf_nan=False,
            description="HTTP transport: a session with no request in flight and no open stream for this many "
            "seconds is closed (its jobs killed).",
        ),
    ] = DEFAULT_SESSION_IDLE_TIMEOUT_S
    http_max_sessions: Annotated[
        int,
        Field(
            ge=1,
            description="HTTP transport: sessions open at once; a client that would open one more gets HTTP 503 "
            "until one is deleted or idles out.",
        ),
    ] = 256
    http_max_states: Annotated[
        int,
        Field(
            ge=1,
            description="HTTP transport: 2026-07-28 client states (`state_id` handles) kept at once; a call that "
            "would make one more is refused with an error result until one idles out.",
        ),
    ] = 256
    http_replica: Annotated[
        str | None,
        Field(
            pattern=r"^[A-Za-z0-9-]+$",
            description="HTTP transport: this replica's name behind a load balancer (letters, digits, `-`); state "
            "ids are then minted as `st_<replica>_<random>`, which deploy/haproxy routes by. Unset: `st_<random>`.",
        ),
    ] = None
    audit_log: Annotated[
        Path | None,
        Field(
            description="A file to append one JSON line per tool call to (time, session, tool, input summary, "
            "decision, duration, outcome); unset: no audit log. A relative path in a file is relative to its folder."
        ),
    ] = None
    audit_log_max_bytes: Annotated[
        int, Field(ge=4096, description="Size at which the audit log is rotated (`audit.log` -> `audit.log.1`).")
    ] = 10 << 20
    audit_log_keep: Annotated[int, Field(ge=0, description="Rotated audit logs kept besides the current one.")] = 3
    sandbox: Annotated[
        SandboxSettings,
        Field(
            description="The OS sandbox Bash runs in; `sandbox.enabled` also tells the permission policy "
            "that Bash is confined."
        ),
    ] = SandboxSettings()

    @field_validator("roots")
    @classmethod
    def _some_root(cls, roots: tuple[Path, ...]) -> tuple[Path, ...]:
        if not roots:
            raise ValueError("at least one root is needed")
        return roots

    @property
    def max_result_chars(self) -> int:
        """The result size in characters (4 a token)."""
        return self.max_result_tokens * 4

    @classmethod
    def from_env(cls, roots: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
        """Defaults and the environment only (no files, no flags).

        Raises:
            ConfigError: a variable holds a bad value.
        """
        return load_settings(roots, environ=environ, read_files=False).settings


@dataclass(frozen=True)
class Place:
    """Where a setting is written: its TOML table and key, its environment variable and flag."""

    section: str
    key: str
    env: str
    flag: str | None = None


def _place(
    name: str,
    section: str,
    key: str | None = None,
    *,
    env: str | None = None,
    flag: str | None = None,
) -> Place:
    return Place(section, key or name, env or ENV_PREFIX + name.upper(), flag)


PLACES: dict[str, Place] = {
    "max_concurrency": _place(
        "max_concurrency", "limits", env="MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", flag="--max-concurrency"
    ),
    "queue_timeout_s": _place("queue_timeout_s", "limits"),
    "max_result_tokens": _place("max_result_tokens", "limits"),
    "read_default_lines": _place("read_default_lines", "read", "default_lines"),
    "grep_head_limit": _place("grep_head_limit", "grep", "head_limit"),
    "grep_max_result_chars": _place("grep_max_result_chars", "grep", "max_result_chars"),
    "glob_max_files": _place("glob_max_files", "glob", "max_files"),
    "glob_no_ignore": _place("glob_no_ignore", "glob", "no_ignore"),
    "bash_default_timeout_ms": _place("bash_default_timeout_ms", "bash", "default_timeout_ms"),
    "bash_max_timeout_ms": _place("bash_max_timeout_ms", "bash", "max_timeout_ms"),
    "bash_return_after_s": _place("bash_return_after_s", "bash", "return_after_s"),
    "bash_output_chars": _place("bash_output_chars", "bash", "output_chars"),
    "bash_env_exclude": _place("bash_env_exclude", "bash", "env_exclude"),
    "spill_budget_bytes": _place("spill_budget_bytes", "bash"),
    "hard_links": _place("hard_links", "files"),
    "edit_recovery": _place("edit_recovery", "files"),
    "syntax_check": _place("syntax_check", "files"),
    "lsp_timeout_s": _place("lsp_timeout_s", "lsp", "timeout_s"),
    "lsp_diagnostics_wait_s": _place("lsp_diagnostics_wait_s", "lsp", "diagnostics_wait_s"),
    "lsp_servers": _place("lsp_servers", "lsp", "servers"),
    "history_max_bytes": _place("history_max_bytes", "files"),
    "history_max_entries": _place("history_max_entries", "files"),
    "image_max_side": _place("image_max_side", "read"),
    "image_max_pixels": _place("image_max_pixels", "read"),
    "image_max_bytes": _place("image_max_bytes", "read"),
    "result_max_images": _place("result_max_images", "read"),
    "pdf_max_pages": _place("pdf_max_pages", "read"),
    "pdf_pages_without_range": _place("pdf_pages_without_range", "read"),
    "notebook_output_chars": _place("notebook_output_chars", "read"),
    "http_host": _place("http_host", "http", "host", flag="--host"),
    "http_port": _place("http_port", "http", "port", flag="--port"),
    "session_idle_timeout_s": _place("session_idle_timeout_s", "http"),
    "http_max_sessions": _place("http_max_sessions", "http", "max_sessions"),
    "http_max_states": _place("http_max_states", "http", "max_states"),
    "http_replica": _place("http_replica", "http", "replica", flag="--replica"),
    "audit_log": _place("audit_log", "audit", "log"),
    "audit_log_max_bytes": _place("audit_log_max_bytes", "audit", "max_bytes"),
    "audit_log_keep": _place("audit_log_keep", "audit", "keep"),
    "sandbox.enabled": _place("sandbox.enabled", "sandbox", "enabled", env="MCP_CODETOOLS_SANDBOX", flag="--sandbox"),
    "sandbox.network": _place(
        "sandbox.network", "sandbox", "network", env="MCP_CODETOOLS_SANDBOX_NETWORK", flag="--sandbox-network"
    ),
    "sandbox.backend": _place(
        "sandbox.backend", "sandbox", "backend", env="MCP_CODETOOLS_SANDBOX_BACKEND", flag="--sandbox-backend"
    ),
    "sandbox.mask": _place("sandbox.mask", "sandbox", "mask", env="MCP_CODETOOLS_SANDBOX_MASK"),
    "sandbox.image": _place("sandbox.image", "sandbox", "image", env="MCP_CODETOOLS_SANDBOX_IMAGE"),
    "sandbox.engine": _place("sandbox.engine", "sandbox", "engine", env="MCP_CODETOOLS_SANDBOX_ENGINE"),
    "sandbox.memory": _place("sandbox.memory", "sandbox", "memory", env="MCP_CODETOOLS_SANDBOX_MEMORY"),
    "sandbox.pids": _place("sandbox.pids", "sandbox", "pids", env="MCP_CODETOOLS_SANDBOX_PIDS"),
    "sandbox.cpus": _place("sandbox.cpus", "sandbox", "cpus", env="MCP_CODETOOLS_SANDBOX_CPUS"),
    "sandbox.env": _place("sandbox.env", "sandbox", "env", env="MCP_CODETOOLS_SANDBOX_ENV"),
}
"""Every setting but `roots` (flags only: the project file is found through them)."""


def _field_info(name: str) -> FieldInfo:
    """The pydantic field of a setting, a dotted name reaching into a nested settings dataclass."""
    owner: Any = Settings
    *outer, leaf = name.split(".")
    for part in outer:
        owner = owner.__pydantic_fields__[part].annotation
    info: FieldInfo = owner.__pydantic_fields__[leaf]
    return info


def setting_default(name: str) -> Any:
    """The default of a setting by its dotted name (none for `roots`, whose default is the current folder)."""
    return _field_info(name).default


def setting_value(settings: Settings, name: str) -> Any:
    """The value of a setting by its dotted name (`sandbox.enabled`)."""
    value: Any = settings
    for part in name.split("."):
        value = getattr(value, part)
    return value


_BY_KEY = {(p.section, p.key): name for name, p in PLACES.items()}
SECTIONS = tuple(dict.fromkeys(p.section for p in PLACES.values()))
_PATH_FIELDS = frozenset({"audit_log"})
_LIST_FIELDS = frozenset({"bash_env_exclude", "sandbox.mask", "sandbox.env"})
_JSON_FIELDS = frozenset({"lsp_servers"})
_USER_ONLY = frozenset({"lsp_servers"})
"""Settings that name a program to run: a project file (which the model can write) may not set them."""

DEFAULT_SOURCE = "default"


@dataclass(frozen=True)
class LoadedSettings:
    """The settings and, per field, where its value came from (`default`, a file and key, a variable, a flag)."""

    settings: Settings
    sources: dict[str, str]
    files: tuple[Path, ...]
    """The config files that were read."""
    ignored: tuple[str, ...] = ()
    """Project-file values that would have loosened a setting, each with why it was ignored."""


def user_config_file(environ: Mapping[str, str] | None = None) -> Path:
    """The user's config file: `$XDG_CONFIG_HOME/mcp-codetools/config.toml`, by default under `~/.config`."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcp-codetools" / "config.toml"


class ConfigFile(NamedTuple):
    """One config file every reader uses: whether it must exist, and whether it is the project's."""

    path: Path
    required: bool
    project: bool
    """Inside a root the model can write: it may only tighten (`TIGHTENING`, and the policy's own rules)."""


def config_files(
    roots: Sequence[Path], config_file: Path | None = None, environ: Mapping[str, str] | None = None
) -> list[ConfigFile]:
    """The TOML files every reader uses, in order. `--config` is the user's: it is given where the server starts."""
    files = [ConfigFile(user_config_file(environ), False, False)]
    if roots:
        files.append(ConfigFile(roots[0] / PROJECT_FILE, False, True))
    if config_file is not None:
        files.append(ConfigFile(config_file, True, False))
    return files


def read_toml(path: Path, *, required: bool) -> dict[str, Any] | None:
    """One config file's tables; None when an optional file is absent.

    Raises:
        ConfigError: a required file is missing, or a file cannot be read or is not TOML.
    """
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file not found: {path}") from None
        return None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except IsADirectoryError:
        raise ConfigError(f"cannot read {path}: it is a directory") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None


def load_settings(
    roots: Sequence[str | Path] | None = None,
    *,
    config_file: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    read_files: bool = True,
) -> LoadedSettings:
    """Every source in order, each value checked against the model where it comes from.

    `flags` maps field names to values given on the command line (None = not given).

    Raises:
        ConfigError: a file is bad (unknown table or key, bad value) or a variable or flag holds a bad value.
    """
    env = os.environ if environ is None else environ
    root_paths = tuple(Path(r) for r in roots) if roots else None
    base = Settings() if root_paths is None else _validated(Settings(), {"roots": root_paths}, {"roots": "--root flag"})
    values: dict[str, Any] = {}
    sources = {"roots": DEFAULT_SOURCE} | dict.fromkeys(PLACES, DEFAULT_SOURCE)
    if root_paths is not None:
        sources["roots"] = "--root flag"
    files: list[Path] = []
    ignored: list[str] = []
    if read_files:
        for path, required, project in config_files(base.roots, config_file, env):
            table = read_toml(path, required=required)
            if table is not None:
                files.append(path)
                found = _file_values(table, path)
                if project:
                    for name in _USER_ONLY & found.keys():
                        where = found.pop(name)[1]
                        ignored.append(f"{where} ignored: it names a program to run, so only the user's config sets it")
                    found = _tightened_only(base, values, sources, found, ignored)
                _take(base, values, sources, found)
    for note in ignored:
        logger.warning("%s", note)
    _take(base, values, sources, _env_values(env))
    given = {name: value for name, value in (flags or {}).items() if value is not None}
    _take(base, values, sources, {name: (value, f"{PLACES[name].flag} flag") for name, value in given.items()})
    settings = _with(base, values)
    _check_together(settings, sources)
    return LoadedSettings(settings, sources, tuple(files), tuple(ignored))


def check_file(path: Path) -> list[str]:
    """Every problem in one config file's server settings (not its [permissions] and [hooks])."""
    try:
        table = read_toml(path, required=True)
    except ConfigError as exc:
        return exc.problems
    assert table is not None
    problems: list[str] = []
    found = _file_values(table, path, problems)
    base = Settings()
    values: dict[str, Any] = {}
    sources: dict[str, str] = dict.fromkeys(PLACES, DEFAULT_SOURCE)
    for name, value in found.items():  # one at a time: a bad value must not hide the next one
        try:
            _take(base, values, sources, {name: value})
        except ConfigError as exc:
            problems += exc.problems
    try:
        _check_together(_with(base, values), sources)
    except ConfigError as exc:
        problems += exc.problems
    return problems


def _file_values(table: Mapping[str, Any], path: Path, problems: list[str] | None = None) -> dict[str, tuple[Any, str]]:
    """One file's settings with where each is written; a problem raises, or is added to `problems` when given."""

    def bad(message: str) -> None:
        if problems is None:
            raise ConfigError(message)
        problems.append(message)

    found: dict[str, tuple[Any, str]] = {}
    for section, body in table.items():
        if section in POLICY_SECTIONS:
            continue
        if section not in SECTIONS:
            known = ", ".join(f"[{s}]" for s in (*SECTIONS, *sorted(POLICY_SECTIONS)))
            bad(f"{path}: unknown table [{section}] (known: {known})")
            continue
        if not isinstance(body, dict):
            bad(f"{path}: [{section}] must be a table")
            continue
        for key, value in body.items():
            name = _BY_KEY.get((section, key))
            if name is None:
                known = ", ".join(p.key for p in PLACES.values() if p.section == section)
                bad(f"{path}: unknown key {key!r} in [{section}] (known: {known})")
                continue
            if name in _PATH_FIELDS and isinstance(value, str):
                value = path.parent / Path(value).expanduser()
            found[name] = (value, f"{path} [{section}] {key}")
    return found


def _env_values(env: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    found: dict[str, tuple[Any, str]] = {}
    for name, place in PLACES.items():
        raw = env.get(place.env)
        if raw is None or not raw.strip():
            continue
        value: Any = raw.strip()
        if name in _LIST_FIELDS:
            value = tuple(part.strip() for part in raw.split(",") if part.strip())
        elif name in _JSON_FIELDS:
            try:
                value = json.loads(raw)
            except ValueError as exc:
                raise ConfigError(f"environment variable {place.env}: not JSON ({exc})") from exc
        elif name in _PATH_FIELDS:
            value = Path(value).expanduser()
        found[name] = (value, f"environment variable {place.env}")
    return found


def _take(base: Settings, values: dict[str, Any], sources: dict[str, str], found: dict[str, tuple[Any, str]]) -> None:
    """Check one source's values on their own (so an error names that source), then let them win."""
    if not found:
        return
    where = {name: source for name, (_, source) in found.items()}
    checked = _validated(base, {name: value for name, (value, _) in found.items()}, where)
    for name in found:
        values[name] = setting_value(checked, name)
        sources[name] = where[name]


def _with(base: Settings, values: Mapping[str, Any]) -> Settings:
    """`base` with `values` (dotted names reach into nested settings such as `sandbox.enabled`), validated.

    Raises:
        ValidationError: a value is bad; its `loc` is the dotted name.
    """
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        outer, _, inner = name.partition(".")
        if inner:
            nested.setdefault(outer, {})[inner] = value
        else:
            top[name] = value
    for outer, inner_values in nested.items():
        top[outer] = replace(getattr(base, outer), **inner_values)
    return replace(base, **top)


def _validated(base: Settings, values: Mapping[str, Any], sources: Mapping[str, str]) -> Settings:
    """`base` with `values`, refusing a bad one with the source it came from."""
    try:
        return _with(base, values)
    except ValidationError as exc:
        problems = []
        prefix = {name.partition(".")[2]: name for name in values if "." in name}
        for err in exc.errors(include_url=False):
            loc = err.get("loc") or ("",)
            name = str(loc[0])
            name = name if name in sources else prefix.get(name, name)
            source = sources.get(name, name)
            message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if str(err.get("type", "")).startswith("bool_"):
                message = "not an on/off value; use true or false (1/0, yes/no, on/off)"
            problems.append(f"{source}: {message} (got {err.get('input')!r})")
        raise ConfigError("; ".join(problems), problems) from None


def _check_together(settings: Settings, sources: Mapping[str, str]) -> None:
    """Rules between settings, judged once every source has been taken (a later one may fix an earlier one)."""
    if settings.bash_default_timeout_ms > settings.bash_max_timeout_ms:
        raise ConfigError(
            f"bash_default_timeout_ms ({settings.bash_default_timeout_ms}, from {sources['bash_default_timeout_ms']}) "
            f"is above bash_max_timeout_ms ({settings.bash_max_timeout_ms}, from {sources['bash_max_timeout_ms']})"
        )


def _by_rank(*order: Any) -> Any:
    """A tightening rule for a value with a fixed order, loosest first."""

    def tighten(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
        if order.index(proposed) >= order.index(current):
            return proposed, None
        return current, "looser than " + _shown(current)

    return tighten


def _more(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    return (proposed, None) if proposed >= current else (current, f"lower than {current}")


def _fewer(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    return (proposed, None) if proposed <= current else (current, f"higher than {current}")


def _with_all_of(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    """A list that may only grow: it adds up, as rule lists do (the project's entries join the earlier ones)."""
    if isinstance(current, frozenset):
        return current | proposed, None
    return (*current, *(v for v in proposed if v not in current)), None


def _only_some_of(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    """A list that may only shrink: entries not already given are not added."""
    added = [v for v in proposed if v not in current]
    kept = tuple(v for v in proposed if v in current)
    why = f"it adds {_shown(added)}, which only the user's config or the command line may pass" if added else None
    return kept, why


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    if proposed == current or _loopback(proposed):
        return proposed, None
    return current, "only a loopback address may be set by a project file"


def _audit_log(current: Any, proposed: Any, roots: Sequence[Path]) -> tuple[Any, str | None]:
    if current is not None and proposed != current:
        return current, f"the audit log is already {_shown(current)}"
    inside = any(Path(os.path.abspath(proposed)).is_relative_to(os.path.abspath(r)) for r in roots)
    if proposed is not None and not inside:
        return current, "a project file may only put the audit log inside the roots"
    return proposed, None


TIGHTENING: dict[str, Any] = {
    "bash_env_exclude": _with_all_of,
    "hard_links": _by_rank("write-through", "refuse"),
    "http_host": _host,
    "http_max_sessions": _fewer,
    "http_max_states": _fewer,
    "audit_log": _audit_log,
    "audit_log_max_bytes": _more,
    "audit_log_keep": _more,
    "sandbox.enabled": _by_rank(False, True),
    "sandbox.network": _by_rank(True, False),
    "sandbox.backend": _by_rank("landlock", "auto", "bwrap"),
    "sandbox.mask": _with_all_of,
    "sandbox.env": _only_some_of,
}
"""The settings that confine the model, each with how a project file may change it (`(value, why refused)`).

The others are limits and formats: a project file sets them freely. Backends rank by what they hold
(bubblewrap also keeps the server's environment and descriptors out of reach); `auto` may mean Landlock.
"""


def _tightened_only(
    base: Settings,
    values: Mapping[str, Any],
    sources: dict[str, str],
    found: dict[str, tuple[Any, str]],
    ignored: list[str],
) -> dict[str, tuple[Any, str]]:
    """A project file's values, each security setting moved only the tight way from what came before."""
    values_found = {name: value for name, (value, _) in found.items()}
    checked = _validated(base, values_found, {name: where for name, (_, where) in found.items()})
    kept: dict[str, tuple[Any, str]] = {}
    for name, (raw, where) in found.items():
        if name not in TIGHTENING:
            kept[name] = (raw, where)
            continue
        current = values.get(name, setting_value(base, name))
        proposed = setting_value(checked, name)
        value, why = TIGHTENING[name](current, proposed, base.roots)
        if why is not None:
            ignored.append(
                f"{where} = {_shown(proposed)} ignored ({why}): a project file may only tighten this setting; "
                f"it is {_shown(value)}, from {sources[name] if value == current else f'{sources[name]} + {where}'}"
            )
        if value != current:
            kept[name] = (value, where if value == proposed else f"{sources[name]} + {where}")
    return kept


def _shown(value: Any) -> str:
    """A value as TOML would spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (frozenset, tuple, list)):
        return "[" + ", ".join(_shown(v) for v in sorted(value, key=str)) + "]"
    if isinstance(value, (str, Path)):
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "(unset)"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_shown(v)}" for k, v in value.items()) + "}"
    return str(value)


def describe(loaded: LoadedSettings) -> list[str]:
    """The effective settings, one per line, each with where its value came from."""
    lines = [f"roots = {_shown(loaded.settings.roots)}  # {loaded.sources['roots']}"]
    for name, place in PLACES.items():
        value = _shown(setting_value(loaded.settings, name))
        lines.append(f"{place.section}.{place.key} = {value}  # {loaded.sources[name]}")
    lines += [f"# ignored: {note}" for note in loaded.ignored]
    return lines


def markdown_reference() -> str:
    """The README's configuration reference, generated from the model."""
    out = [
        "| Setting (TOML) | Environment variable | Flag | Default | Meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    defaults = Settings(roots=(Path("."),))
    for name, place in PLACES.items():
        info = _field_info(name)
        default = _shown(setting_value(defaults, name))
        flag = f"`{place.flag}`" if place.flag else ""
        out.append(f"| `[{place.section}] {place.key}` | `{place.env}` | {flag} | `{default}` | {info.description} |")
    return "\n".join(out) + "\n"
