"""PreToolUse and PostToolUse hooks in Claude Code's shape: commands that see each call as JSON and may block it.

A hook gets on stdin `session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input` (and, after the
call, `tool_response`). Exit 0 lets the call go on, and JSON on stdout may carry a permission decision
(`hookSpecificOutput.permissionDecision`: allow, deny or ask, with `permissionDecisionReason`) or, after
the call, `additionalContext` for the model. Exit 2 blocks the call: the hook's stderr becomes what the
model reads. Any other exit, bad JSON or a hook past its timeout (its whole process group is killed) is
a non-blocking error: logged, and the call goes on. A hook's allow never overrides a deny rule; the
pipeline combines the two.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc

from mcp_codetools.child_pipes import drain, feed, finish
from mcp_codetools.policy.rules import Behaviour

logger = logging.getLogger(__name__)

Event = Literal["PreToolUse", "PostToolUse"]
EVENTS: tuple[Event, ...] = ("PreToolUse", "PostToolUse")
DEFAULT_TIMEOUT_S = 60.0
BLOCK_EXIT = 2
OUTPUT_KEEP_BYTES = 64 * 1024
"""A hook's stdout and stderr beyond this are cut: what the model reads must stay small."""
_RANK: dict[Behaviour, int] = {"allow": 0, "ask": 1, "deny": 2}


class HookConfigError(ValueError):
    """A hooks table the server refuses to start with; the message names the file."""


@dataclass(frozen=True, slots=True)
class HookCommand:
    """One hook's shell command, its time limit, and the settings file it came from."""

    command: str
    timeout_s: float
    source: str


@dataclass(frozen=True, slots=True)
class HookGroup:
    """The hook commands one event runs for the tools its matcher names."""

    event: Event
    matcher: re.Pattern[str] | None
    """None matches every tool."""
    commands: tuple[HookCommand, ...]

    def matches(self, tool_name: str) -> bool:
        """Whether the group runs for `tool_name` (the matcher must match the whole name)."""
        return self.matcher is None or self.matcher.fullmatch(tool_name) is not None


@dataclass
class HookOutcome:
    """What the hooks of one event said, combined."""

    blocked: bool = False
    message: str = ""
    """For a block: the text the model reads (the hooks' stderr or reason)."""
    decision: Behaviour | None = None
    reason: str = ""
    context: list[str] = field(default_factory=list)
    """Extra text for the model (PostToolUse `additionalContext`)."""


OPTION_KEYS = frozenset({"from_project", "from_claude_settings"})
"""Keys of a `[hooks]` table that are switches, not events (`policy/loading.py` reads them)."""


def parse_hooks(
    tables: Sequence[tuple[Path, Mapping[str, Any]]], *, problems: list[str] | None = None
) -> tuple[HookGroup, ...]:
    """`[[hooks.PreToolUse]]` tables (and Claude Code's JSON of the same shape) as hook groups.

    With `problems`, every problem is added there (and its entry left out) instead of raised.

    Raises:
        HookConfigError: an unknown event, a bad matcher regex, or an entry that is not a command hook.
    """
    groups: list[HookGroup] = []

    def bad(message: str) -> None:
        if problems is None:
            raise HookConfigError(message)
        problems.append(message)

    for path, table in tables:
        for event, entries in table.items():
            if event in OPTION_KEYS:
                continue
            if event not in EVENTS:
                bad(f"{path}: unknown hook event {event!r} (known: {', '.join(EVENTS)})")
                continue
            if not isinstance(entries, list):
                bad(f"{path}: hooks.{event} must be a list of tables")
                continue
            for entry in entries:
                try:
                    groups.append(_group(path, event, entry))
                except HookConfigError as exc:
                    bad(str(exc))
    return tuple(groups)


def _group(path: Path, event: Event, entry: Any) -> HookGroup:
    where = f"{path}: hooks.{event}"
    if not isinstance(entry, Mapping):
        raise HookConfigError(f"{where}: each entry must be a table with `matcher` and `hooks`")
    raw = entry.get("matcher", "")
    if not isinstance(raw, str):
        raise HookConfigError(f"{where}: matcher must be a string")
    try:
        matcher = None if raw in ("", "*") else re.compile(raw)
    except re.error as exc:
        raise HookConfigError(f"{where}: matcher {raw!r} is not a valid regex ({exc})") from None
    commands: list[HookCommand] = []
    for hook in entry.get("hooks", []):
        if not isinstance(hook, Mapping) or hook.get("type", "command") != "command":
            raise HookConfigError(f'{where}: only hooks of type = "command" are supported')
        command = hook.get("command")
        timeout = hook.get("timeout", DEFAULT_TIMEOUT_S)
        if not isinstance(command, str) or not command.strip():
            raise HookConfigError(f"{where}: a hook needs a `command` string")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise HookConfigError(f"{where}: timeout must be a positive number of seconds")
        commands.append(HookCommand(command, float(timeout), str(path)))
    return HookGroup(event, matcher, tuple(commands))


class Hooks:
    """The configured hooks, run for each call whose tool a group matches."""

    def __init__(self, groups: Sequence[HookGroup], env: Mapping[str, str] | None = None) -> None:
        self.groups = tuple(groups)
        self._env = dict(os.environ if env is None else env)

    def __bool__(self) -> bool:
        return bool(self.groups)

    async def run(self, event: Event, payload: dict[str, Any]) -> HookOutcome:
        """Run the hooks for `event` side by side, and fold their answers into one outcome."""
        commands = [c for g in self.groups if g.event == event and g.matches(payload["tool_name"]) for c in g.commands]
        outcome = HookOutcome()
        if not commands:
            return outcome
        data = json.dumps({**payload, "hook_event_name": event}).encode()
        results: list[tuple[HookCommand, int | None, bytes, bytes]] = []

        async def one(hook: HookCommand) -> None:
            results.append((hook, *await self._run_one(hook, data, payload.get("cwd"))))

        async with anyio.create_task_group() as tg:
            for hook in commands:
                tg.start_soon(one, hook)
        for hook, code, out, err in results:
            _fold(outcome, event, hook, code, out, err)
        return outcome

    async def _run_one(self, hook: HookCommand, data: bytes, cwd: str | None) -> tuple[int | None, bytes, bytes]:
        """Run one hook; (None, …) when it timed out and was killed."""
        process = await anyio.open_process(
            ["/bin/sh", "-c", hook.command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd if cwd and os.path.isdir(cwd) else None,
            env=self._env,
            start_new_session=True,
        )
        out = bytearray()
        err = bytearray()
        try:
            with anyio.move_on_after(hook.timeout_s):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(feed, process, data)
                    tg.start_soon(drain, process.stdout, out, OUTPUT_KEEP_BYTES)
                    tg.start_soon(drain, process.stderr, err, OUTPUT_KEEP_BYTES)
                await process.wait()
                return process.returncode, bytes(out), bytes(err)
            logger.warning("hook %r from %s timed out after %.0f s; killed", hook.command, hook.source, hook.timeout_s)
            return None, bytes(out), bytes(err)
        finally:
            await finish(process)


def _fold(outcome: HookOutcome, event: Event, hook: HookCommand, code: int | None, out: bytes, err: bytes) -> None:
    stderr = err.decode("utf-8", "replace").strip()
    if code == BLOCK_EXIT:
        outcome.blocked = True
        text = stderr or f"blocked by the hook `{hook.command}` ({hook.source})"
        outcome.message = f"{outcome.message}\n{text}".strip()
        return
    if code != 0:
        what = "timed out" if code is None else f"exited {code}"
        logger.warning("hook %r from %s %s (not blocking): %s", hook.command, hook.source, what, stderr[:500])
        return
    answer = _json(out)
    if answer is None:
        return
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if answer.get("decision") == "block" or answer.get("continue") is False:
        outcome.blocked = True
        reason = answer.get("reason") or answer.get("stopReason") or f"blocked by the hook `{hook.command}`"
        outcome.message = f"{outcome.message}\n{reason}".strip()
    decision = specific.get("permissionDecision") if event == "PreToolUse" else None
    if decision in _RANK and (outcome.decision is None or _RANK[decision] > _RANK[outcome.decision]):
        outcome.decision = decision
        outcome.reason = str(specific.get("permissionDecisionReason") or f"the hook `{hook.command}` ({hook.source})")
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        outcome.context.append(context.strip())


def _json(out: bytes) -> dict[str, Any] | None:
    text = out.decode("utf-8", "replace").strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        logger.warning("a hook printed output that starts like JSON but is not; ignored")
        return None
    return value if isinstance(value, dict) else None
