"""What every tool is; tools work on plain values and never import `mcp`.

An input model, a description for the model, the concurrency and permission questions the pipeline asks,
`validate_input` and `call`.

What `validate_input` loaded to decide (a file's bytes and stat, where a string matched) is handed to
`call` as a typed value, the tool's second type parameter, so `call` neither guesses at it nor loads it again.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, cast

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic_core import PydanticCustomError
from typing_extensions import TypeVar, override

from mcp_codetools.files.realpaths import Pinned
from mcp_codetools.policy.engine import CallFacts, Policy
from mcp_codetools.policy.gate import Asker
from mcp_codetools.policy.hiding import Hider
from mcp_codetools.policy.rules import RuleFamilies
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings, default_settings, fill, fill_all

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]


_SURROGATE = re.compile("[\ud800-\udfff]")


class ToolInput(BaseModel):
    """Base of every tool's arguments: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)

    @field_validator("*", mode="before")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        # JSON can carry lone surrogates (\ud800); no file name, file content or command can. Before the type's
        # own checks, which refuse them in a constrained string (`min_length`) with a message that says less.
        if isinstance(value, str) and not value.isascii() and _SURROGATE.search(value):
            raise PydanticCustomError("surrogate", "it contains an unpaired surrogate, which is not valid Unicode text")
        return value


InputT = TypeVar("InputT", bound=ToolInput)
PreparedT = TypeVar("PreparedT", default=Any)
"""What `validate_input` hands to `call`; a tool that prepares nothing leaves it out and takes `None`."""


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image for the model: encoded bytes and their MIME type (server.py turns it into image content)."""

    data: bytes
    mime_type: str


@dataclass
class ToolOutput:
    """What a call produced: text for the model, details for machines, and whether it failed.

    Images follow the text, in order; a tool that mixes text and images puts the text that belongs
    after an image into `trailing`, keyed by the image's index.
    """

    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False
    images: list[ImagePart] = field(default_factory=list)
    trailing: dict[int, str] = field(default_factory=dict)


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


@dataclass
class CallContext:
    """One call's view of the session, plus what it needs from the pipeline."""

    session: CodeSession
    paths: dict[str, Path] = field(default_factory=dict)
    progress: ProgressFn = _no_progress
    changes: list[Callable[[], None]] = field(default_factory=list)
    ask: Asker | None = None
    """Asks the user to confirm the call (through the client); None when nobody can be asked."""
    hidden: Hider | None = None
    """Whether a deny rule hides a file (absolute real path) from this tool's listings; None when no rule can."""
    policy: Policy | None = None
    """The rules for the session's roots now (set by the permission step); None when there are none."""
    pinned: dict[str, Pinned] = field(default_factory=dict)
    """For a tool that `reads_pinned`: each path field's file as the resolver held it, where the system can
    hold one. A tool that takes one out closes it; the pipeline closes those left when the call ends."""

    def defer(self, change: Callable[[], None]) -> None:
        """Queue a session change; the dispatcher commits it in arrival order."""
        self.changes.append(change)


class Tool(Generic[InputT, PreparedT]):
    """A tool. Subclasses set the class attributes and override what they need."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    """A template: `{setting}` fields (`settings.fill`) are the server's own values, as are those of the
    input fields' descriptions, so a server configured otherwise tells the model its own limits."""
    input_model: ClassVar[type[ToolInput]]
    read_only: ClassVar[bool] = False
    destructive: ClassVar[bool] = True
    idempotent: ClassVar[bool] = False
    open_world: ClassVar[bool] = False
    path_fields: ClassVar[tuple[str, ...]] = ()
    """Input fields holding paths: the pipeline resolves and confines them before state checks."""

    # What the tool touches. The rule families, the protocol's handles and the tests' tool lists are derived
    # from these (`rule_families`, `protocol/server.py`), so a new tool is covered the day it lands.
    reads_files: ClassVar[bool]
    """It reads the files its path fields name: a `Read(...)` rule covers it (the Read family)."""
    writes_files: ClassVar[bool]
    """It writes the files its path fields name: an `Edit(...)` rule covers it (the Edit family), and it
    writes only through `files.editing.commit_write`."""
    reads_pinned: ClassVar[bool] = False
    """It reads its path fields' files through the descriptors the resolver held (`CallContext.pinned`), so
    what it reads is what was judged; the resolver holds them only for such a tool."""
    runs_programs: ClassVar[bool] = False
    """It starts programs that are not this server's (Bash's commands); their files are judged by what it runs."""
    job_arg: ClassVar[str | None] = None
    """The input field naming a background job of the state (BashOutput's `bash_id`), if any."""
    keeps_state: ClassVar[bool] = True
    """It reads or leaves something in the session (the read ledger, the working directory, jobs, history);
    False: a call needs nothing kept and keeps nothing, so it takes no state handle."""

    _derived: ClassVar[frozenset[str]] = frozenset()
    """The file facts this class did not declare, so a subclass derives them again from its own fields."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Undeclared file access fails closed: a tool with path fields counts as reading what they name when its
        # hint says read-only, as writing it otherwise, so it is in a rule family before anyone lists it.
        derived = {
            fact
            for fact in ("reads_files", "writes_files")
            if not any(fact in vars(klass) and fact not in vars(klass).get("_derived", ()) for klass in cls.__mro__)
        }
        if "reads_files" in derived:
            cls.reads_files = bool(cls.path_fields) and cls.read_only
        if "writes_files" in derived:
            cls.writes_files = bool(cls.path_fields) and not cls.read_only
        cls._derived = frozenset(derived)

    async def classify(self, args: InputT) -> None:
        """Do the work the sync questions below need that is too slow for the event loop (by default none).

        It runs before the call's turn, off the loop, and leaves its answers where those questions look.
        """

    def is_read_only(self, args: InputT) -> bool:
        """Whether this call only reads (by default the tool's `read_only` hint)."""
        return self.read_only

    def is_concurrency_safe(self, args: InputT) -> bool:
        """Whether this call may run beside others; by default no, so it runs alone."""
        return False

    def default_path(self, field_name: str, session: CodeSession) -> str | None:
        """The path a missing optional path field stands for (None: nothing to resolve)."""
        return None

    def permission_facts(self, args: InputT, ctx: CallContext) -> CallFacts:
        """What the permission rules judge: the resolved paths, read or written as the call is read-only or not."""
        paths = tuple(ctx.paths.values())
        read_only = self.is_read_only(args)
        return CallFacts(
            self.name,
            read_only,
            read_paths=paths if read_only else (),
            write_paths=() if read_only else paths,
            cwd=ctx.session.cwd,
        )

    async def validate_input(self, args: InputT, ctx: CallContext) -> PreparedT:
        """State checks (the file was read, has not changed, the string is there); raise a ToolError.

        Returns what `call` needs of what the checks loaded. A tool that names a prepared type overrides
        this; the others keep this one, which prepares nothing.
        """
        return cast(PreparedT, None)

    async def call(self, args: InputT, ctx: CallContext, prepared: PreparedT) -> ToolOutput:
        """Do the work, with what `validate_input` returned."""
        raise NotImplementedError

    def described(self, settings: Settings | None = None) -> tuple[str, dict[str, Any]]:
        """The description and input schema as a server with `settings` serves them (None: the defaults)."""
        values = settings or default_settings()
        return fill(self.description, values), fill_all(self.input_schema(), values)

    def input_schema(self) -> dict[str, Any]:
        """The input model's JSON schema without pydantic's titles, as tools/list sends it."""
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema


class SearchTool(Tool[InputT, PreparedT]):
    """Grep and Glob: read-only, safe to run side by side, searching the working directory by default."""

    read_only = True
    destructive = False
    idempotent = True
    open_world = False
    path_fields = ("path",)
    reads_files = True
    writes_files = False
    keeps_state = False

    @override
    def is_concurrency_safe(self, args: InputT) -> bool:
        return True

    @override
    def default_path(self, field_name: str, session: CodeSession) -> str | None:
        return str(session.cwd)


def rule_families(tools: Iterable[Tool[Any]]) -> RuleFamilies:
    """The tools each rule family covers, from what each tool declares it touches."""
    tools = list(tools)
    return RuleFamilies(
        read=frozenset(tool.name for tool in tools if tool.reads_files),
        edit=frozenset(tool.name for tool in tools if tool.writes_files),
    )
