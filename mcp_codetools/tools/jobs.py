"""BashOutput and KillShell: read and stop the background jobs that Bash's `run_in_background` started."""

from __future__ import annotations

import time

import anyio
from pydantic import Field
from typing_extensions import override

from mcp_codetools.errors import ExecutionError, InvalidInputError
from mcp_codetools.session import CodeSession
from mcp_codetools.shell.background import Job, JobRegistry
from mcp_codetools.tools.base import CallContext, Tool, ToolInput, ToolOutput


def _find_job(session: CodeSession, job_id: str) -> tuple[JobRegistry, Job]:
    registry = session.jobs
    job = registry.get(job_id)
    if job is None:
        raise InvalidInputError(f"No shell found with ID: {job_id}. {registry.describe()}")
    return registry, job


def _meta(job: Job) -> dict[str, object]:
    return {
        "shellId": job.id,
        "status": job.state,
        "running": job.running,
        "exitCode": job.returncode,
        "logPath": str(job.log_path),
    }


class BashOutputInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    bash_id: str = Field(description="The background shell's ID, as Bash returned it.")
    filter: str | None = Field(
        default=None, description="Regular expression: return only matching lines (the others are skipped)."
    )
    wait_s: float = Field(
        default=0,
        ge=0,
        description="Wait up to this many seconds (at most {bash_return_after_s:g} s) for new output or the end; "
        "returns as soon as either comes. Use it instead of calling again in a loop.",
    )


class BashOutputTool(Tool[BashOutputInput]):
    """BashOutput: what a background job printed since the last read, and whether it still runs."""

    name = "BashOutput"
    title = "Read background shell output"
    description = (
        "Read what a background shell (Bash with run_in_background) printed since the last read, and whether "
        "it is still running or its exit code. filter: a regex; only matching lines are returned. "
        "Output over 30000 characters keeps the start and the end; the full log path is given."
    )
    input_model = BashOutputInput
    read_only = True
    destructive = False
    idempotent = False
    reads_files = False
    writes_files = False
    job_arg = "bash_id"

    @override
    def is_concurrency_safe(self, args: BashOutputInput) -> bool:
        # A filtered read runs in a worker thread; alone, it cannot race another read of the same job.
        return not args.filter

    @override
    async def call(self, args: BashOutputInput, ctx: CallContext, prepared: None) -> ToolOutput:
        registry, job = _find_job(ctx.session, args.bash_id)
        pattern = BudgetedFilter(args.filter) if args.filter else None
        if args.wait_s > 0:  # bounded by the same budget as a Bash call, so no client gives up on it
            await registry.wait_for_news(job, min(args.wait_s, ctx.session.settings.bash_return_after_s))
        status = job.status()
        if pattern is None:
            new = registry.read_new(job, None)
        else:  # in a worker thread, so a slow filter never holds up the event loop
            new = await anyio.to_thread.run_sync(registry.read_new, job, pattern)
        parts = [f"Shell {job.id} {status}.", new.text or "(no new output)"]
        if new.skipped_bytes:
            parts.append(f"[{new.skipped_bytes:,} older bytes were skipped; they are in {job.log_path}.]")
        if job.leftovers_stopped:
            parts.append("Processes it left running in the background were stopped when it finished.")
        if job.log_error:
            parts.append(
                f"[Its log could not be written past {job.written:,} bytes ({job.log_error}); later output was lost.]"
            )
        meta = _meta(job)
        meta["skippedBytes"] = new.skipped_bytes
        return ToolOutput("\n\n".join(parts), meta=meta)


FILTER_BUDGET_S = 2.0


class BudgetedFilter:
    """BashOutput's `filter`, matched with the `regex` engine under a time budget for the whole read.

    Python's `re` has no time limit, and a pattern that backtracks heavily (`(a|aa)+$`) can run for days;
    `regex` takes a timeout per match, and the budget is shared by every line of one read.
    """

    def __init__(self, source: str) -> None:
        import regex  # only BashOutput with a filter needs it

        try:
            self._pattern = regex.compile(source)
        except regex.error as exc:
            raise InvalidInputError(f"Invalid regular expression in `filter`: {exc}.") from None
        self._deadline = time.monotonic() + FILTER_BUDGET_S

    def search(self, line: str) -> object:
        """A match object when `line` matches, else None.

        Raises:
            InvalidInputError: the read's time budget ran out (nothing of the log was consumed).
        """
        left = self._deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self._pattern.search(line, timeout=left)
        except TimeoutError:
            raise InvalidInputError(
                f"The filter took over {FILTER_BUDGET_S:g} s on this output (a pattern that backtracks heavily). "
                "Nothing was consumed: simplify the pattern and call BashOutput again."
            ) from None


class KillShellInput(ToolInput):  # noqa: D101  (no docstring: pydantic would send it to the model in the input schema)
    shell_id: str = Field(description="The background shell's ID, as Bash returned it.")


class KillShellTool(Tool[KillShellInput]):
    """KillShell: stop a background job and every process it started."""

    name = "KillShell"
    title = "Stop background shell"
    description = (
        "Stop a background shell started by Bash with run_in_background, with every process it started "
        "(SIGTERM, then SIGKILL). Its output stays readable with BashOutput."
    )
    input_model = KillShellInput
    read_only = False
    destructive = True
    idempotent = False
    reads_files = False
    writes_files = False
    job_arg = "shell_id"

    @override
    async def call(self, args: KillShellInput, ctx: CallContext, prepared: None) -> ToolOutput:
        registry, job = _find_job(ctx.session, args.shell_id)
        if not job.running:
            raise ExecutionError(
                f"Shell {job.id} is not running: it {job.status()}. Its output can still be read with BashOutput."
            )
        await registry.kill(job)
        return ToolOutput(
            f"Killed shell {job.id} ({job.command.strip()[:200]}). Its output can still be read with BashOutput.",
            meta=_meta(job),
        )
