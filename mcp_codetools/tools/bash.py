"""Bash: run a shell command that cannot hang the call or outlive it, and say plainly what happened.

The process work (group, timeout, capture, cleanup) is in `mcp_codetools.shell.running`; this module
turns a run into the text the model reads: the output (head and tail past 30,000 characters, with the
path of the full output), `Exit code N` for a failure, the "no match"/"differs" codes of grep, diff,
test and find reported as such, and notes for a timeout, a cwd reset, stopped leftovers, saved output
removed to keep within the session's spill budget, files Read earlier that the command changed, and
reads or writes the sandbox refused (with the sandbox on, each command also gets the paths the
permission rules keep from it: `policy/sandboxing.py`).

A command still running at `bash_return_after_s` (under the ~60 s at which many clients give up on a
call) is moved to the background rather than waited for: the call returns what it printed so far and
a job id, the job goes on from the next byte (BashOutput shows only what follows), its timeout still
counts from its start, and it no longer moves the session's cwd. A larger `timeout` does not lift the
budget (the client's limit is what it guards against); the setting does.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import anyio
import anyio.lowlevel
from pydantic import Field, PrivateAttr
from typing_extensions import override

from mcp_codetools.commands.analysis import CommandAnalysis, analyse
from mcp_codetools.errors import ExecutionError, InvalidInputError
from mcp_codetools.policy.engine import CallFacts, Policy
from mcp_codetools.policy.sandboxing import SandboxPaths, SandboxPathsUnknown, remove_appeared, sandbox_paths
from mcp_codetools.session import CodeSession
from mcp_codetools.shell import capture as capture_limits
from mcp_codetools.shell import forkless, in_place, reaping, running, spawning
from mcp_codetools.shell import warm as warm_shells
from mcp_codetools.shell.background import Job
from mcp_codetools.shell.capture import OutputCapture
from mcp_codetools.shell.sandbox import Confinement, SandboxUnavailable, refusal_note
from mcp_codetools.shell.spills import removal_note
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput

logger = logging.getLogger(__name__)

MAX_LISTED_FILES = 10

_NO_MATCH = {1: "No matches found"}
INTERPRETATIONS: dict[str, dict[int, str]] = {
    "grep": _NO_MATCH,
    "egrep": _NO_MATCH,
    "fgrep": _NO_MATCH,
    "rg": _NO_MATCH,
    "diff": {1: "Files differ"},
    "test": {1: "Condition is false"},
    "[": {1: "Condition is false"},
    "find": {1: "Some directories were inaccessible"},
}
"""Exit codes that answer a question rather than report a failure, by the command that set the status."""


class BashInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    command: str = Field(description="The bash command to run. Multi-line scripts are fine.")
    timeout: int | None = Field(
        default=None,
        gt=0,
        description="Timeout in milliseconds (default {bash_default_timeout_ms}, max {bash_max_timeout_ms}).",
    )
    description: str | None = Field(default=None, description="What the command does, in 5-10 words.")
    run_in_background: bool = Field(
        default=False, description="Start as a background job and return its id at once (see BashOutput)."
    )
    _analysis: CommandAnalysis | None = PrivateAttr(default=None)


class BashTool(Tool[BashInput]):
    """Bash: run one command in the session's working directory, or start it as a background job."""

    name = "Bash"
    title = "Run shell command"
    description = (
        "Run a bash command in the workspace and return its output (stdout and stderr interleaved). "
        "The working directory persists between calls (a cd that leaves the workspace is undone); "
        "environment variables and other shell state do not. stdin is /dev/null and there is no terminal, "
        "so interactive programs get end of file. timeout is in ms: default {bash_default_timeout_ms}, "
        "max {bash_max_timeout_ms}; on timeout the command and every process it started are killed. Whatever "
        "the timeout, a command still running after {bash_return_after_s:g} s moves to the background: you "
        "get its output so far and a BashOutput id. Output over {bash_output_chars} characters keeps the "
        "beginning and the end, and the full output is saved to a file you can Read. A non-zero exit is an "
        "error starting with `Exit code N` (grep/diff/test/find's 'no match' codes are not). Use "
        "run_in_background for servers, watchers and long builds, then BashOutput and KillShell. Prefer "
        "Read, Grep, Glob and Edit over cat, grep, find and sed."
    )
    input_model = BashInput
    read_only = False
    destructive = True
    idempotent = False
    open_world = True
    reads_files = False  # what its commands read and write is judged from the command (mcp_codetools.commands)
    writes_files = False
    runs_programs = True

    @override
    async def classify(self, args: BashInput) -> None:
        # bashlex takes about 25 µs a character, and its first parse 0.2-0.3 s to build its tables: on the
        # event loop that would hold every session's calls. Built once; every later step reads it. A short
        # command once the parser is warm costs less on the loop than the thread hop (a scheduler wake-up,
        # the largest cost of an `echo hi` after the spawn), so it is analysed in place.
        if _parser_warm.is_set() and len(args.command) <= INLINE_MAX_CHARS:
            args._analysis = analyse(args.command)
            return
        args._analysis = await anyio.to_thread.run_sync(analyse, args.command)
        _parser_warm.set()

    @override
    def is_read_only(self, args: BashInput) -> bool:
        return not args.run_in_background and _analysis_of(args).read_only

    @override
    def is_concurrency_safe(self, args: BashInput) -> bool:
        return self.is_read_only(args)

    @override
    def permission_facts(self, args: BashInput, ctx: CallContext) -> CallFacts:
        # The engine reads the parts from the analysis `classify` built, never the text again.
        return CallFacts(self.name, self.is_read_only(args), cwd=ctx.session.cwd, analysis=_analysis_of(args))

    @override
    async def validate_input(self, args: BashInput, ctx: CallContext) -> None:
        if not args.command.strip():
            raise InvalidInputError("`command` is empty. Give the shell command to run.")
        if "\x00" in args.command:
            raise InvalidInputError("`command` contains a NUL byte, which no shell command can hold.")
        editor = _idle_screen_editor(args.command, _analysis_of(args))
        if editor is not None:
            raise InvalidInputError(
                f"`{editor}` with nothing to do waits for keys from a terminal, and commands here have none: it "
                "would run until the timeout. Change files with Edit or Write; to script the editor, give it "
                f"its commands (e.g. `{editor} -es -c '%s/old/new/g' -c wq FILE`)."
            )

    @override
    async def call(self, args: BashInput, ctx: CallContext, prepared: None) -> ToolOutput:
        session = ctx.session
        analysis = _analysis_of(args).verdict
        read_only = self.is_read_only(args)
        notes: list[str] = []
        cwd = _usable_cwd(session, ctx, notes)
        # Built once: a read-only command's environment is the other one's plus git's variables, and the bash that
        # waits for the next command gets the other one (a second `command_env` cost ~20-30 µs a call).
        base_env = spawning.command_env(
            read_only=False, session_marker=session.process_marker, exclude=session.settings.bash_env_exclude
        )
        env = spawning.with_read_only(base_env) if read_only else base_env
        confinement = _confinement(session)
        kept = None if confinement is None else _kept(confinement, ctx)
        if confinement is not None and kept is not None:
            # A missing `.git/commondir` is kept from a background job, which nothing checks after it ends, and
            # from every command in a container, whose processes may outlive their command (its mounts are
            # the container's, for its life); a foreground command elsewhere has one it made removed after it.
            always = args.run_in_background or confinement.container is not None
            confinement = confinement.keeping(
                kept.hidden, (*kept.read_only, *(kept.absent if always else ())), lasting=args.run_in_background
            )
        await _ready(confinement)
        # A cancel that came while the call sat in a worker thread (classify's analysis runs to its end
        # whatever happens) is only seen at the next checkpoint, and from here to the spawn there is none:
        # without this look a cancelled call would start its command (a job nobody is told of).
        await anyio.lowlevel.checkpoint_if_cancelled()
        if args.run_in_background:
            return _start_job(session, args.command, cwd, env, notes, confinement)

        settings = session.settings
        timeout_ms = args.timeout or settings.bash_default_timeout_ms
        if timeout_ms > settings.bash_max_timeout_ms:
            timeout_ms, asked = settings.bash_max_timeout_ms, timeout_ms
            notes.append(f"The timeout of {asked} ms is above the maximum; it was lowered to {timeout_ms} ms.")
        before = None if read_only else _stamps(session.ledger.paths())
        file_cap = min(capture_limits.FILE_CAP_BYTES, session.spills.limit_bytes)
        capture = OutputCapture(settings.bash_output_chars, spill_dir=session.scratch_dir, file_cap=file_cap)

        async def report(elapsed: float, line: str) -> None:
            try:
                await ctx.progress(round(elapsed, 3), None, line or f"running for {elapsed:.0f}s")
            except Exception:
                logger.debug("progress notification failed", exc_info=True)

        moved: list[Job] = []

        def to_background(detached: running.Detached) -> None:
            moved.append(session.jobs.adopt(detached, args.command, log_dir=session.scratch_dir, timeout_ms=timeout_ms))

        warm = session.warm_shell if confinement is None and len(args.command) <= WARM_MAX_CHARS else None
        forks = confinement is not None or not forkless.starts_no_process(args.command, env)
        taken = None
        here = False
        if warm is not None:
            next_env = base_env  # a bash waits for any command with the environment of one that is not read-only
            await warm.settled()  # a bash still starting for this call (in a thread) is waited for, not doubled
            taken = warm.take(cwd, env)
            # A builtin that changes nothing is run by the waiting bash itself, which goes on waiting.
            if (
                not forks
                and taken is not None
                and in_place.changes_nothing(args.command)
                and in_place.can_run(taken[0])
            ):
                here = await _quiet_start(taken[0])
            if not here:
                warm.prepare_during(cwd, next_env)  # runs once `run` waits on the command
        try:
            result = None
            if here and taken is not None:
                result = await _in_place(warm, taken[0], args.command, capture, timeout_ms / 1000)
                taken = None  # used, or stopped when it could not take the command (then a bash is started)
            if result is None:
                result = await running.run(
                    args.command,
                    cwd=cwd,
                    env=env,
                    timeout_s=timeout_ms / 1000,
                    capture=capture,
                    progress=report,
                    confinement=confinement,
                    return_after_s=settings.bash_return_after_s,
                    detach=to_background,
                    warm=taken,
                    forks=forks,
                )
        except OSError as exc:
            raise _not_started(exc, args.command) from exc
        finally:  # counted even when the call is cancelled: the file stays in the scratch folder
            if capture.spill_path is not None:
                session.spills.add(capture.spill_path)
            removed = [] if kept is None else remove_appeared(kept.absent)  # cancelled too

        meta: dict[str, object] = {
            "readOnly": read_only,
            "timeoutMs": timeout_ms,
            "durationMs": round(result.elapsed_s * 1000, 1),
            "outputChars": capture.total_chars,
            "truncated": capture.truncated,
            "interrupted": result.timed_out,
        }
        if capture.spill_path is not None:
            meta["persistedOutputPath"] = str(capture.spill_path)
            meta["persistedOutputSize"] = capture.spilled_bytes
        if moved:
            return _moved(session, moved[0], capture, notes, meta, cwd)
        _keep_within_budget(session, capture.spill_path, notes, meta)
        next_cwd = _follow_cwd(session, ctx, cwd, result.final_cwd, notes)
        meta["cwd"] = str(next_cwd)
        if warm is not None:  # kept if it waits where the command left the session, else started there
            warm.prepare_soon(next_cwd, next_env)
        if result.leftovers_stopped:
            notes.append(
                "Processes the command left running in the background were stopped when it finished. "
                "Use run_in_background for servers and watchers."
            )
        refused = None if confinement is None else refusal_note(capture.render(""), confinement)
        if refused is not None:
            notes.append(refused)
        if removed:
            notes.append(
                f"[Sandbox: removed {', '.join(map(str, removed))}, which the command made: it would send git, "
                "outside the sandbox, to another folder's config and hooks.]"
            )
        if before is not None:
            changed = _changed_files(before)
            if changed:
                meta["staleReadFiles"] = [str(p) for p in changed]
                notes.append(_stale_note(changed, cwd))
        return _result(analysis.last_command, result, capture, timeout_ms, notes, meta, settings.bash_max_timeout_ms)


async def _quiet_start(shell: warm_shells.WarmShell) -> bool:
    """`shell.quiet_start()`; a call cancelled while it waits stops the bash it took."""
    try:
        return await shell.quiet_start()
    except BaseException:
        shell.discard()
        raise


async def _in_place(
    slot: warm_shells.WarmSlot | None,
    shell: warm_shells.WarmShell,
    command: str,
    capture: OutputCapture,
    timeout_s: float,
) -> running.RunResult | None:
    """A builtin run by the waiting bash, which is put back; None if it ran nothing (a bash is then started)."""
    done = await in_place.run(shell, command, capture=capture, timeout_s=timeout_s)
    if done is None:
        return None
    result, kept = done
    if kept and slot is not None:
        slot.give_back(shell)
    return result


def _result(
    last_command: str | None,
    result: running.RunResult,
    capture: OutputCapture,
    timeout_ms: int,
    notes: list[str],
    meta: dict[str, object],
    max_timeout_ms: int,
) -> ToolOutput:
    """The run as the model reads it; the one place an exit code decides whether the call failed."""
    output = capture.render(_where(capture))
    code = result.returncode if result.returncode >= 0 else 128 - result.returncode
    meta["exitCode"] = code
    interpretation = INTERPRETATIONS.get(last_command or "", {}).get(code)
    parts: list[str] = []
    is_error = True
    if result.timed_out:
        parts.append(f"Command timed out after {_duration(timeout_ms)}")
        notes.append(
            f"The command and every process it started were stopped. Give a larger timeout (up to "
            f"{max_timeout_ms} ms), or use run_in_background for long-running commands."
        )
    elif code == 0:
        is_error = False
    elif interpretation is not None:
        is_error = False
        meta["returnCodeInterpretation"] = interpretation
        if not output:
            output = f"{interpretation} (exit code {code})"
        else:
            notes.insert(0, f"(exit code {code}: {interpretation})")
    else:
        killed_by = f" (ended by {reaping.signal_name(-result.returncode)})" if result.returncode < 0 else ""
        parts.append(f"Exit code {code}{killed_by}")
    if output:
        parts.append(output)
    elif not is_error:
        parts.append("(no output)")
    text = "\n".join(parts)
    if notes:
        text += "\n\n" + "\n".join(notes)
    if is_error:
        meta["errorCode"] = ExecutionError.code
    return ToolOutput(text, meta=meta, is_error=is_error)


def _moved(
    session: CodeSession, job: Job, capture: OutputCapture, notes: list[str], meta: dict[str, object], cwd: Path
) -> ToolOutput:
    """A command moved to the background at the return-after budget: its output so far and how to follow it."""
    meta["cwd"] = str(cwd)
    _track_job(session, job, capture.spill_path, notes, meta)
    output = capture.render(_where(capture)) or "(no output yet)"
    budget = f"{session.settings.bash_return_after_s:g}s"
    text = (
        f"{output}\n\n"
        f"Command was still running after {budget}, so it was moved to the background. "
        f"Command running in background with ID: {job.id}. Output is being written to: {job.log_path}. "
        f'BashOutput (bash_id "{job.id}") shows what it prints after the output above (wait_s waits for it); '
        f'KillShell (shell_id "{job.id}") stops it. Its timeout of {_duration(job.timeout_ms or 0)} still '
        f"counts from its start. A `cd` in it does not change the working directory of later calls."
    )
    if notes:
        text += "\n\n" + "\n".join(notes)
    return ToolOutput(text, meta=meta)


def _track_job(session: CodeSession, job: Job, keep: Path | None, notes: list[str], meta: dict[str, object]) -> None:
    """Count a job's log against the session's spill budget (removable once it ends), and say so in meta."""

    def log_removed() -> None:
        job.log_removed = True

    session.spills.add(job.log_path, in_use=lambda: job.running, on_remove=log_removed)
    meta["backgroundTaskId"] = job.id
    meta["logPath"] = str(job.log_path)
    _keep_within_budget(session, keep or job.log_path, notes, meta)


def _where(capture: OutputCapture) -> str:
    if capture.spill_path is None:
        return "The full output could not be saved"
    saved = f"Full output saved to {capture.spill_path}"
    if capture.file_error:
        saved += f" (saving stopped: {capture.file_error})"
    elif capture.file_truncated:
        saved += f" (its first {capture.spilled_bytes:,} bytes)"
    return saved + "; Read it with offset and limit, or Grep it, to see the rest"


def _duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms}ms"
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms / 1000:g}s"


def _usable_cwd(session: CodeSession, ctx: CallContext, notes: list[str]) -> Path:
    """The session cwd, or the first root when that folder has gone (removed by an earlier command)."""
    if session.cwd.is_dir():
        return session.cwd
    root = session.workspace.roots[0]
    ctx.defer(_move(session, root))
    notes.append(f"Shell cwd was reset to {root} ({session.cwd} no longer exists).")
    return root


def _follow_cwd(session: CodeSession, ctx: CallContext, cwd: Path, final: str | None, notes: list[str]) -> Path:
    """Keep a `cd` inside the roots for later calls; undo one that left them."""
    if final is None or final == str(cwd):
        return cwd
    target = Path(final)
    if session.workspace.contains(target) and target.is_dir():
        ctx.defer(_move(session, target))
        return target
    notes.append(f"Shell cwd was reset to {cwd}")
    return cwd


def _move(session: CodeSession, target: Path) -> Callable[[], None]:
    """A deferred cwd change; set_cwd re-checks the roots when it is committed."""

    def change() -> None:
        session.set_cwd(target)

    return change


def _keep_within_budget(session: CodeSession, keep: Path | None, notes: list[str], meta: dict[str, object]) -> None:
    """Remove the oldest saved output past the session's spill budget, and say which."""
    removed = session.spills.enforce(keep=keep)
    if removed:
        meta["removedOutputPaths"] = [str(item.path) for item in removed]
        notes.append(removal_note(removed, session.spills.limit_bytes))


_SCREEN_EDITORS = frozenset({"vi", "vim", "nvim", "view", "vimdiff", "rvim", "rview"})
"""Editors that, without a terminal, wait on stderr for keys that never come (others exit at end of input)."""
_EDITOR_WORD = re.compile(r"\b(?:n?vim?|view|vimdiff|rvim|rview)\b")


def _idle_screen_editor(command: str, analysis: CommandAnalysis) -> str | None:
    """The full-screen editor `command` starts without options or commands, which would hang until the timeout."""
    if _EDITOR_WORD.search(command) is None:  # most commands: no parse
        return None
    if "<" in command or "|" in command:  # keys may come from a here-document, a file or a pipe
        return None
    for simple in analysis.parts.commands:
        words = simple.unwrapped().words
        if words and os.path.basename(words[0]) in _SCREEN_EDITORS and not any(w[:1] in "-+" for w in words[1:]):
            return words[0]
    return None


def _confinement(session: CodeSession) -> Confinement | None:
    try:
        return session.confinement
    except SandboxUnavailable as exc:  # fail closed: never run unconfined when the sandbox was asked for
        raise ExecutionError(f"The command was not run. {exc}") from None


async def _ready(confinement: Confinement | None) -> None:
    """Start the session's container at its first command (the container backend); fail closed."""
    if confinement is None:
        return
    try:
        await confinement.ready()
    except SandboxUnavailable as exc:
        raise ExecutionError(f"The command was not run. {exc}") from None


def _kept(confinement: Confinement, ctx: CallContext) -> SandboxPaths:
    """What the rules keep from this command in the sandbox: found now, as files come and go."""
    policy = ctx.policy or Policy(roots=tuple(ctx.session.workspace.roots))
    try:
        return sandbox_paths(policy, confinement.writable)
    except SandboxPathsUnknown as exc:  # fail closed: never run with some denied paths open
        raise ExecutionError(
            f"The command was not run: {exc}. Anchor the deny rule to a folder (`Read(./config/.env)` rather "
            "than `Read(.env)`, which matches at any depth), or run the command without the sandbox."
        ) from None


def _start_job(
    session: CodeSession,
    command: str,
    cwd: Path,
    env: dict[str, str],
    notes: list[str],
    confinement: Confinement | None,
) -> ToolOutput:
    try:
        job = session.jobs.start(command, cwd=cwd, env=env, log_dir=session.scratch_dir, confinement=confinement)
    except OSError as exc:
        raise _not_started(exc, command) from exc

    meta: dict[str, object] = {"cwd": str(cwd)}
    _track_job(session, job, None, notes, meta)
    text = (
        f"Command running in background with ID: {job.id}. Output is being written to: {job.log_path}. "
        f'Read new output with BashOutput (bash_id "{job.id}"); stop it with KillShell (shell_id "{job.id}").'
    )
    if notes:
        text += "\n\n" + "\n".join(notes)
    return ToolOutput(text, meta=meta)


def _stamps(paths: Iterable[Path]) -> dict[Path, int | None]:
    """mtime of each path (one stat each; None when it is gone)."""
    stamps: dict[Path, int | None] = {}
    for path in paths:
        try:
            stamps[path] = os.stat(path).st_mtime_ns
        except OSError:
            stamps[path] = None
    return stamps


def _changed_files(before: dict[Path, int | None]) -> list[Path]:
    after = _stamps(before)
    return [path for path, stamp in before.items() if after[path] != stamp]


def _stale_note(changed: list[Path], cwd: Path) -> str:
    names = [os.path.relpath(p, cwd) if p.is_relative_to(cwd) else str(p) for p in changed[:MAX_LISTED_FILES]]
    more = f" and {len(changed) - MAX_LISTED_FILES} more" if len(changed) > MAX_LISTED_FILES else ""
    count = f"{len(changed)} file{'s' if len(changed) != 1 else ''}"
    return (
        f"[This command modified {count} you've previously read: {', '.join(names)}{more}. Call Read before editing.]"
    )


def _analysis_of(args: BashInput) -> CommandAnalysis:
    """The analysis `classify` built off the loop; built here when it did not run (a direct call, a failure)."""
    # Read from pydantic's dict of private attributes: its `__getattr__` took 5-25 µs a read (by load), and a call
    # reads the analysis six times (safety, permission, validation, the call).
    private = args.__pydantic_private__
    analysis = None if private is None else private.get("_analysis")
    if analysis is None:
        analysis = args._analysis = analyse(args.command)
    return analysis


WARM_MAX_CHARS = warm_shells.MAX_CHARS
INLINE_MAX_CHARS = 64
"""Commands up to this long are analysed on the event loop once the parser is warm (bashlex takes about
25 µs a character: at most ~2 ms)."""
_parser_warm = threading.Event()


def _not_started(exc: OSError, command: str) -> ExecutionError:
    if exc.errno == errno.E2BIG:  # the command goes to bash as one argument (Linux: at most 128 KiB)
        size = len(command.encode("utf-8", "surrogateescape"))
        return ExecutionError(
            f"Could not start the command: at {size:,} bytes it is longer than the system passes to a program. "
            "Write the script to a file with Write and run it with `bash FILE`."
        )
    return ExecutionError(f"Could not start the command: {exc.strerror or exc}.")
