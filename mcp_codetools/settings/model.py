"""The settings model: every setting, its check, its documentation and where it is written, declared once.

Each field carries a `Place` in its metadata naming its TOML table (the key, the environment variable
and the flag follow from the field's name unless the `Place` says otherwise). The readers (`sources.py`),
the command line's flags (`cli.py`), `mcp-codetools config` and the README's reference all come from it.

Plain pydantic rather than `pydantic-settings`: its sources are merged before validation, so an error
could not say which file or variable held the bad value, and it has no notion of where a value came from,
which `mcp-codetools config` prints.

No `from __future__ import annotations` here: pydantic would evaluate each of the ~60 annotations from its
string when the model is built at import, on the way to a start's first result (~20% of the build).
"""

import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.fields import FieldInfo

DEFAULT_MAX_CONCURRENCY = 10
DEFAULT_QUEUE_TIMEOUT_S = 600.0
MAX_RESULT_TOKENS = 25_000
DEFAULT_SPILL_BUDGET_BYTES = 2 << 30
DEFAULT_SESSION_IDLE_TIMEOUT_S = 30 * 60.0
SANDBOX_BACKENDS = ("auto", "bwrap", "landlock", "seatbelt", "container")
ENV_PREFIX = "MCP_CODETOOLS_"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Place:
    """Where a setting is written: its TOML table and key, its environment variable, its flag.

    In a field's metadata only `section` is needed: the key is the field's name without the table's
    prefix (`read_default_lines` is `[read] default_lines`), the variable `MCP_CODETOOLS_` and the dotted
    name in capitals (`sandbox.network` is `MCP_CODETOOLS_SANDBOX_NETWORK`), and there is no flag.
    """

    section: str
    key: str = ""
    env: str = ""
    flag: str | None = None


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
        Field(
            description="Run Bash and its children in an OS sandbox (bubblewrap, else Landlock; Seatbelt on macOS). "
            "Unset: on where a backend that is on by default works, network open (the start log and `doctor` "
            "say which); `false` turns it off, and only the user's config, not a project's, may say so."
        ),
        Place("sandbox", env="MCP_CODETOOLS_SANDBOX", flag="--sandbox"),
    ] = False
    network: Annotated[
        bool,
        Field(
            description="Let sandboxed commands use the network (a sandbox on by default has it unless set to `false`)."
        ),
        Place("sandbox", flag="--sandbox-network"),
    ] = False
    backend: Annotated[
        Literal["auto", "bwrap", "landlock", "seatbelt", "container"],
        Field(
            description="Which sandbox: `auto` (on Linux bubblewrap where user namespaces work, else Landlock; "
            "on macOS Seatbelt), `bwrap`, `landlock`, `seatbelt`, or `container` (each session's commands in a "
            "container of `image`)."
        ),
        Place("sandbox", flag="--sandbox-backend"),
    ] = "auto"
    image: Annotated[
        str,
        Field(description="The image the `container` backend runs commands in (e.g. the project's dev container)."),
        Place("sandbox"),
    ] = ""
    engine: Annotated[
        Literal["docker", "podman"],
        Field(description="The container engine's command: `docker` or `podman`."),
        Place("sandbox"),
    ] = "docker"
    memory: Annotated[
        str, Field(description="The container's memory limit (`--memory`; empty: none)."), Place("sandbox")
    ] = "4g"
    pids: Annotated[
        int, Field(ge=0, description="The container's process limit (`--pids-limit`; 0: none)."), Place("sandbox")
    ] = 1024
    cpus: Annotated[
        float, Field(ge=0, description="The container's CPU limit (`--cpus`; 0: none)."), Place("sandbox")
    ] = 2.0
    mask: Annotated[
        tuple[str, ...],
        Field(description="Paths to mask, beside the default credential folders (comma-separated in the environment)."),
        Place("sandbox"),
    ] = ()
    env: Annotated[
        tuple[str, ...],
        Field(
            description="Environment variables passed through to sandboxed commands, beside the built-in "
            "allow-list (comma-separated in the environment)."
        ),
        Place("sandbox"),
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


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Settings:
    """How one server instance behaves. Nothing here can be changed by the model.

    Each field's description is its documentation: the README's configuration reference is generated
    from it (`mcp-codetools config --markdown`).
    """

    roots: Annotated[tuple[Path, ...], Field(description="Workspace folders the tools may use.")] = field(
        default_factory=lambda: (Path.cwd(),)
    )
    max_concurrency: Annotated[
        int,
        Field(ge=1, description="Read-only calls that may run at once."),
        Place("limits", env="MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", flag="--max-concurrency"),
    ] = DEFAULT_MAX_CONCURRENCY
    queue_timeout_s: Annotated[
        float, Field(gt=0, description="Seconds a call may wait for its turn before it is refused."), Place("limits")
    ] = DEFAULT_QUEUE_TIMEOUT_S
    max_result_tokens: Annotated[
        int, Field(ge=1000, description="Size of one result, in tokens (4 characters each)."), Place("limits")
    ] = MAX_RESULT_TOKENS
    read_default_lines: Annotated[
        int, Field(ge=1, description="Lines Read returns when the call gives no `limit`."), Place("read")
    ] = 2000
    grep_head_limit: Annotated[
        int, Field(ge=1, description="Entries Grep returns when the call gives no `head_limit`."), Place("grep")
    ] = 250
    grep_max_result_chars: Annotated[
        int,
        Field(ge=1000, description="Characters of one Grep result (also bounded by `max_result_tokens`)."),
        Place("grep"),
    ] = 20_000
    glob_max_files: Annotated[int, Field(ge=1, description="Paths one Glob result lists."), Place("glob")] = 100
    glob_no_ignore: Annotated[
        bool,
        Field(description="List gitignored files in Glob too (Claude Code's Glob does by default)."),
        Place("glob"),
    ] = False
    bash_default_timeout_ms: Annotated[
        int,
        Field(ge=1000, description="Timeout of a Bash command when the call gives none, in milliseconds."),
        Place("bash"),
    ] = 120_000
    bash_max_timeout_ms: Annotated[
        int,
        Field(ge=1000, description="Highest timeout a Bash call may ask for; a higher one is lowered to it."),
        Place("bash"),
    ] = 600_000
    bash_return_after_s: Annotated[
        float,
        Field(
            gt=0,
            description="Seconds a Bash call waits for its command before returning with the command moved to the "
            "background (its timeout still applies); keep it under the client's own request timeout.",
        ),
        Place("bash"),
    ] = 45
    bash_output_chars: Annotated[
        int,
        Field(ge=2000, description="Characters of a command's output in the result; the rest is saved to a file."),
        Place("bash"),
    ] = 30_000
    bash_env_exclude: Annotated[
        frozenset[str],
        Field(
            description="Variables Bash commands do not see, besides the server's own `MCP_CODETOOLS_*TOKEN*` "
            "secrets (comma-separated in the environment)."
        ),
        Place("bash"),
    ] = frozenset()
    spill_budget_bytes: Annotated[
        int,
        Field(
            ge=1,
            description="Disk one session's saved command output and job logs may take; past it the oldest files go.",
        ),
        Place("bash"),
    ] = DEFAULT_SPILL_BUDGET_BYTES
    hard_links: Annotated[
        Literal["refuse", "write-through"],
        Field(
            description='Edit/Write on a file with several hard links: "refuse" (another link may be outside the '
            'roots) or "write-through" (write it in place, so every link sees the change).'
        ),
        Place("files"),
    ] = "refuse"
    edit_recovery: Annotated[
        Literal["apply", "suggest", "off"],
        Field(
            description="When Edit's old_string is not in the file as written but matches one region once Read's "
            "line-number prefixes, quote style, trailing whitespace, line endings or a uniform indentation shift "
            'are undone: "apply" the edit there (the result says what was undone), "suggest" the region in the '
            'error, or "off".'
        ),
        Place("files"),
    ] = "apply"
    syntax_check: Annotated[
        Literal["report", "refuse", "off"],
        Field(
            description='After an edit of a Python file: "report" a syntax error the change introduced, "refuse" '
            'such an edit (the file stays unchanged), or "off".'
        ),
        Place("files"),
    ] = "report"
    lsp_timeout_s: Annotated[
        float, Field(gt=0, description="Seconds the LSP tool waits for a language server's answer."), Place("lsp")
    ] = 10.0
    lsp_first_call_s: Annotated[
        float,
        Field(
            gt=0,
            description="Seconds a call to a language server that has not answered yet (its start included) waits "
            "before saying it is still indexing and when to ask again; the question keeps running for that retry.",
        ),
        Place("lsp"),
    ] = 5.0
    lsp_diagnostics_wait_s: Annotated[
        float,
        Field(
            ge=0,
            description="Seconds an edit waits for the problems it introduced: ruff's rules and the call arity "
            "check on Python, and a running language server's diagnostics (0: check nothing).",
        ),
        Place("lsp"),
    ] = 1.5
    lsp_servers: Annotated[
        dict[str, LanguageServerEntry],
        Field(
            description="Language servers beside the built-in Python one, as `[lsp.servers.NAME]` tables with "
            "`command`, `extensions` and optional `initialization_options` and `diagnostics` (true: edits wait "
            "for them); used when the program is on the PATH. "
            "Read from the user's config only: a project file cannot name a program to run."
        ),
        Place("lsp"),
    ] = field(default_factory=dict)
    history_max_bytes: Annotated[
        int,
        Field(
            ge=0,
            description="Bytes of earlier file versions one session keeps (the file history, kept on disk in "
            "the session's scratch folder).",
        ),
        Place("files"),
    ] = 256 * 1024 * 1024
    history_max_entries: Annotated[
        int, Field(ge=0, description="Earlier file versions one session keeps."), Place("files")
    ] = 200
    image_max_side: Annotated[
        int,
        Field(ge=1, description="Read shows an image no larger than this on its longest side (pixels)."),
        Place("read"),
    ] = 1568
    image_max_pixels: Annotated[
        int,
        Field(
            ge=1,
            description="Read shows an image no larger than this in area (pixels); beyond this or "
            "`image_max_side` it is scaled down, aspect ratio kept.",
        ),
        Place("read"),
    ] = 1_150_000
    image_max_bytes: Annotated[
        int, Field(ge=1024, description="An encoded image above this size is encoded again, smaller."), Place("read")
    ] = 512 * 1024
    result_max_images: Annotated[
        int,
        Field(ge=0, description="Images one Read result may carry (notebook outputs, scanned PDF pages)."),
        Place("read"),
    ] = 8
    pdf_max_pages: Annotated[int, Field(ge=1, description="Pages one Read of a PDF may ask for."), Place("read")] = 20
    pdf_pages_without_range: Annotated[
        int,
        Field(ge=1, description="A longer PDF read without `pages` answers with an overview instead of text."),
        Place("read"),
    ] = 10
    notebook_output_chars: Annotated[
        int, Field(ge=100, description="Characters of one notebook cell output shown before it is cut."), Place("read")
    ] = 4000
    http_host: Annotated[
        str, Field(min_length=1, description="HTTP transport: the address to listen on."), Place("http", flag="--host")
    ] = "127.0.0.1"
    http_port: Annotated[
        int,
        Field(ge=0, le=65535, description="HTTP transport: the port to listen on (0 picks a free one)."),
        Place("http", flag="--port"),
    ] = 8765
    session_idle_timeout_s: Annotated[
        float,
        Field(
            gt=0,
            allow_inf_nan=False,
            description="HTTP transport: a session with no request in flight and no open stream for this many "
            "seconds is closed (its jobs killed).",
        ),
        Place("http"),
    ] = DEFAULT_SESSION_IDLE_TIMEOUT_S
    http_max_sessions: Annotated[
        int,
        Field(
            ge=1,
            description="HTTP transport: sessions open at once; a client that would open one more gets HTTP 503 "
            "until one is deleted or idles out.",
        ),
        Place("http"),
    ] = 256
    http_max_states: Annotated[
        int,
        Field(
            ge=1,
            description="HTTP transport: 2026-07-28 client states (`state_id` handles) kept at once; a call that "
            "would make one more is refused with an error result until one idles out.",
        ),
        Place("http"),
    ] = 256
    http_replica: Annotated[
        str | None,
        Field(
            pattern=r"^[A-Za-z0-9-]+$",
            description="HTTP transport: this replica's name behind a load balancer (letters, digits, `-`); state "
            "ids are then minted as `st_<replica>_<random>`, which deploy/haproxy routes by. Unset: `st_<random>`.",
        ),
        Place("http", flag="--replica"),
    ] = None
    start_snapshot: Annotated[
        bool,
        Field(
            description="stdio: answer `initialize` and `tools/list` from a snapshot of an earlier start with the "
            "same inputs while the MCP SDK loads (kept in `$XDG_CACHE_HOME/mcp-codetools/start`, by default "
            "`~/.cache`); off: every start waits for the SDK (~1 s)."
        ),
        Place("start", key="snapshot"),
    ] = True
    audit_log: Annotated[
        Path | None,
        Field(
            description="A file to append one JSON line per tool call to (time, session, tool, input summary, "
            "decision, duration, outcome); unset: no audit log. A relative path in a file is relative to its folder."
        ),
        Place("audit"),
    ] = None
    audit_log_max_bytes: Annotated[
        int,
        Field(ge=4096, description="Size at which the audit log is rotated (`audit.log` -> `audit.log.1`)."),
        Place("audit", key="max_bytes"),
    ] = 10 << 20
    audit_log_keep: Annotated[
        int, Field(ge=0, description="Rotated audit logs kept besides the current one."), Place("audit", key="keep")
    ] = 3
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


@dataclass(frozen=True)
class LoadedSettings:
    """The settings and, per field, where its value came from (`default`, a file and key, a variable, a flag)."""

    settings: Settings
    sources: dict[str, str]
    files: tuple[Path, ...]
    """The config files that were read."""
    ignored: tuple[str, ...] = ()
    """Project-file values that would have loosened a setting, each with why it was ignored."""
    from_project: frozenset[str] = frozenset()
    """The settings whose value is the project file's: set or moved by it, or a default it repeats (its
    `sandbox.network = false` closes the network of a sandbox on by default: `shell/sandbox_default.py`)."""


def _setting_fields(owner: Any, prefix: str = "") -> dict[str, tuple[FieldInfo, Place]]:
    """Every field with a `Place`, by dotted name, nested settings (`sandbox`) reached into."""
    found: dict[str, tuple[FieldInfo, Place]] = {}
    for name, info in owner.__pydantic_fields__.items():
        place = next((item for item in info.metadata if isinstance(item, Place)), None)
        if place is not None:
            found[prefix + name] = (info, place)
        elif hasattr(info.annotation, "__pydantic_fields__"):
            found |= _setting_fields(info.annotation, f"{prefix}{name}.")
    return found


def _resolved(name: str, place: Place) -> Place:
    leaf = name.rpartition(".")[2]
    key = place.key or (leaf if "." in name else leaf.removeprefix(place.section + "_"))
    env = place.env or ENV_PREFIX + name.replace(".", "_").upper()
    return Place(place.section, key, env, place.flag)


_FIELDS = _setting_fields(Settings)
PLACES: dict[str, Place] = {name: _resolved(name, place) for name, (_, place) in _FIELDS.items()}
"""Every setting but `roots` (flags only: the project file is found through them), in the model's order."""
SECTIONS = tuple(dict.fromkeys(p.section for p in PLACES.values()))


def field_info(name: str) -> FieldInfo:
    """The pydantic field of a setting by its dotted name."""
    return _FIELDS[name][0]


def setting_default(name: str) -> Any:
    """The default of a setting by its dotted name (none for `roots`, whose default is the current folder)."""
    return field_info(name).default


def setting_value(settings: Settings, name: str) -> Any:
    """The value of a setting by its dotted name (`sandbox.enabled`)."""
    value: Any = settings
    for part in name.split("."):
        value = getattr(value, part)
    return value


Shape = Literal["path", "list", "json", "plain"]


def shape_of(name: str) -> Shape:
    """How a setting is spelt in one environment variable: a path, a comma-separated list, JSON, or plain text."""
    annotation = field_info(name).annotation
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) and Path in args:
        return "path"
    origin = typing.get_origin(annotation)
    if origin in (tuple, frozenset):
        return "list"
    if origin is dict:
        return "json"
    return "plain"


@cache
def default_settings() -> Settings:
    """The defaults, for texts that quote a setting when no server's settings are at hand (the manifest)."""
    return Settings(roots=(Path("."),))


_QUOTED = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)?)(?::([^{}]*))?\}")


def fill(template: str, settings: Settings) -> str:
    """A text with `{setting}` (or `{setting:format}`) fields, each replaced by that setting's value.

    Tool descriptions are such templates, so a server configured otherwise tells the model its own
    limits. Braces that are not a field (`*.{ts,tsx}`) stay as written.

    Raises:
        KeyError: a field names no setting.
    """

    def value(match: re.Match[str]) -> str:
        name, spec = match.group(1), match.group(2) or ""
        if name not in PLACES:
            raise KeyError(f"{name!r} in a text template is not a setting")
        return format(setting_value(settings, name), spec)

    return _QUOTED.sub(value, template)


def fill_all(texts: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """A JSON schema with every `description` string filled (`fill`)."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: fill(v, settings) if k == "description" and isinstance(v, str) else walk(v) for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    result: dict[str, Any] = walk(dict(texts))
    return result
