"""
The figures the reliability suite collects while it runs, and the report it writes from them.

Tests add to `FIGURES` (calls made, faults injected, inputs tried, measurements); the suite's conftest
records each test's outcome and, when the run was asked to (`--reliability-report PATH`, see
`requested_path`) and executed the whole suite, writes the report with `write_report`. A run that was not
asked writes nothing: running the tests never rewrites a tracked file. Nothing here talks to the server.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

LONG_ENV = "MCP_CODETOOLS_RELIABILITY_LONG"
REPORT_OPTION = "--reliability-report"
REPORT_ENV = "MCP_CODETOOLS_RELIABILITY_REPORT"
"""Either names the file to write the report to; the option wins. Neither: no report is written."""
WRITE_COMMAND = "python -m pytest tests/reliability --reliability-report docs/reliability.md"


@dataclass
class Measurement:
    value: float | int | str
    unit: str = ""
    note: str = ""


@dataclass
class Outcome:
    suite: str
    outcome: str
    duration_s: float
    reason: str = ""


@dataclass
class Figures:
    """Counters per suite (test module), measurements by name, and the outcome of every test."""

    calls: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    inputs: Counter[str] = field(default_factory=Counter)
    violations: Counter[str] = field(default_factory=Counter)
    known_bug_hits: Counter[str] = field(default_factory=Counter)
    results: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(tool, "ok" or the error code) of every fuzzed call: shows the fuzz reaches the success paths too."""
    measurements: dict[str, Measurement] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    long_mode: bool = False

    def __repr__(self) -> str:  # shown by pytest and hypothesis for every failing test: keep it short
        return f"Figures(calls={sum(self.calls.values())}, tests={len(self.outcomes)})"

    def count(self, suite: str, *, calls: int = 0, faults: int = 0, inputs: int = 0) -> None:
        self.calls[suite] += calls
        self.faults[suite] += faults
        self.inputs[suite] += inputs

    def measure(self, name: str, value: float | int | str, unit: str = "", note: str = "") -> None:
        self.measurements[name] = Measurement(value, unit, note)

    def known_bug(self, key: str) -> None:
        """An input that hit a bug already pinned by an xfail test (counted, reported, not a new failure)."""
        self.known_bug_hits[key] += 1

    def suites(self) -> list[str]:
        names = {o.suite for o in self.outcomes.values()} | set(self.calls) | set(self.faults) | set(self.inputs)
        return sorted(names)


FIGURES = Figures()


def suite_of(module_file: str) -> str:
    """The suite name of a test module: `tests/reliability/test_soak.py` -> `soak`."""
    return Path(module_file).stem.removeprefix("test_")


def long_mode_requested() -> bool:
    return os.environ.get(LONG_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def requested_path(option: str | None, environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The file this run should write the report to, or None (the default: write nothing).

    Raises:
        ValueError: the variable holds a switch of the old kind (`1`, `force`) rather than a path.
    """
    value = option if option else environ.get(REPORT_ENV, "").strip()
    if value.lower() in ("", "0", "no", "off", "false"):
        return None
    if value.lower() in ("1", "yes", "on", "true", "force"):
        raise ValueError(f"{REPORT_ENV}={value!r}: it now names the file to write, e.g. docs/reliability.md")
    return cwd / value


def _machine() -> str:
    cores = os.cpu_count() or 0
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            total_kib = int(handle.readline().split()[1])
        memory = f"{total_kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        memory = "unknown memory"
    try:
        mcp_version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        mcp_version = "?"
    return (
        f"{platform.system()} {platform.release()} ({platform.machine()}), {cores} cores, {memory}; "
        f"Python {sys.version.split()[0]}, mcp {mcp_version}"
    )


def _fmt(value: float | int | str) -> str:
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.2f}"


def render(figures: Figures, *, wall_s: float, now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.UTC)
    outcomes = list(figures.outcomes.values())
    failed = [o for o in outcomes if o.outcome == "failed"]
    total_violations = sum(figures.violations.values())
    by_outcome = Counter(o.outcome for o in outcomes)
    mode = "long (`--run-slow` or `MCP_CODETOOLS_RELIABILITY_LONG=1`)" if figures.long_mode else "CI"
    lines = [
        "# Reliability report",
        "",
        f"<!-- Written by `{WRITE_COMMAND}` (tests/reliability/report.py); do not edit by hand. -->",
        "",
        f"- Generated: {now:%Y-%m-%d %H:%M} UTC by a pytest run of {wall_s:,.0f} s "
        f"(the reliability tests themselves: {sum(o.duration_s for o in outcomes):,.0f} s)",
        f"- Mode: {mode}",
        f"- Machine: {_machine()}",
        "",
        "## Totals",
        "",
        "| Calls made | Faults injected | Inputs tried | Failures | Tests passed | Bugs pinned (xfail) | Skipped |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {sum(figures.calls.values()):,} | {sum(figures.faults.values()):,} | {sum(figures.inputs.values()):,} "
        f"| {len(failed) + total_violations} | {by_outcome['passed']} | {by_outcome['xfailed']} "
        f"| {by_outcome['skipped']} |",
        "",
        "Failures counts failed tests plus invariant violations the suites recorded without failing a test "
        "(both must be zero). A known bug is pinned by a strict xfail test: the suite stays green until the "
        "owner fixes it, and turns red when the fix lands until the mark is removed.",
        "",
        "## By suite",
        "",
        "| Suite | Tests (pass/xfail/skip/fail) | Calls | Faults | Inputs | Time (s) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for suite in figures.suites():
        mine = [o for o in outcomes if o.suite == suite]
        counts = Counter(o.outcome for o in mine)
        tests = f"{counts['passed']}/{counts['xfailed']}/{counts['skipped']}/{counts['failed']}"
        seconds = sum(o.duration_s for o in mine)
        lines.append(
            f"| {suite} | {tests} | {figures.calls[suite]:,} | {figures.faults[suite]:,} "
            f"| {figures.inputs[suite]:,} | {seconds:,.1f} |"
        )
    if figures.measurements:
        lines += ["", "## Measurements", "", "| Measurement | Value | Note |", "|---|---:|---|"]
        for name, m in sorted(figures.measurements.items()):
            value = f"{_fmt(m.value)} {m.unit}".strip()
            lines.append(f"| {name} | {value} | {m.note} |")
    if figures.results:
        lines += _results_table(figures.results)
    pinned: dict[str, list[str]] = {}
    for nodeid, o in sorted(figures.outcomes.items()):
        if o.outcome == "xfailed":
            pinned.setdefault(o.reason, []).append(f"`{nodeid.split('::', 1)[-1]}` ({o.suite})")
    if pinned:
        lines += ["", "## Open bugs pinned by xfail tests", ""]
        lines += [f"- {', '.join(tests)}: {reason}" for reason, tests in pinned.items()]
    lines += ["", "## Bugs found by this suite and fixed", ""]
    lines += [f"- {bug} (guarded by: {where})" for bug, where in FOUND_AND_FIXED]
    if figures.known_bug_hits:
        lines += [
            "",
            "## Calls that hit a pinned bug",
            "",
            "Counted, not failed: each matches the signature of an open bug above (harness.KNOWN_BUGS, and the "
            "protocol oracle).",
            "",
        ]
        lines += [f"- {key}: {n:,}" for key, n in sorted(figures.known_bug_hits.items())]
    if failed or total_violations:
        lines += ["", "## Failures", ""]
        lines += [f"- `{o.suite}`: {nodeid}" for nodeid, o in sorted(figures.outcomes.items()) if o.outcome == "failed"]
        lines += [f"- violation: {key} ({n})" for key, n in sorted(figures.violations.items())]
    skipped = sorted((nodeid, o) for nodeid, o in figures.outcomes.items() if o.outcome == "skipped")
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- `{nodeid.split('::', 1)[-1]}`: {o.reason}" for nodeid, o in skipped]
    lines += ["", _HOW_TO_RUN]
    return "\n".join(lines) + "\n"


FOUND_AND_FIXED: tuple[tuple[str, str], ...] = (
    ("a lone surrogate in a path or written text answered internal_error", "fuzz; attack_inputs"),
    ("a NUL byte in a Grep/Glob pattern, glob or type reached argv: internal_error", "attack_inputs"),
    ("Write of text the file's encoding (latin-1, UTF-16) cannot hold: internal_error", "fuzz; attack_inputs"),
    ("an over-long folder name (ENAMETOOLONG) when creating folders: internal_error", "attack_inputs"),
    ("Write to a symlink loop (ELOOP): internal_error", "attack_inputs"),
    ("a 1 MB path echoed whole in the error: results far over the token budget", "attack_inputs"),
    ("a path of 300k components: realpath O(N^2) blocked the event loop for seconds to hours", "attack_inputs"),
    ("a 50 MB missing file name: 2.2 GB peak RSS (difflib suggestion over the whole name)", "protocol_abuse"),
    ("a 2 kB line of nested brackets killed the server (RecursionError in the transport)", "protocol_abuse"),
    ("requests with an object/array/null/boolean/fractional id silently dropped as notifications", "protocol_abuse"),
    ("a line just over the 256 MiB limit swallowed the next message", "protocol_abuse"),
    ("spec methods the server does not serve answered -32602 instead of -32601", "protocol_abuse"),
    (
        "a symlink swapped while the path is resolved, or a file vanishing before Edit's re-read: internal_error",
        "faults (swap loop)",
    ),
    ("a folder swapped for a link out before mkdir: a folder created outside the roots", "faults (swap loop)"),
    ("a same-size change with its mtime put back (cp -p, rsync -t) was overwritten", "faults"),
    (
        "Edit refusing a non-unique old_string numbered every match, O(matches x size): 13 s for 64k lines",
        "attack_inputs",
    ),
    (
        "BashOutput's regex filter could backtrack for days on the event loop (ReDoS), blocking the session",
        "attack_inputs",
    ),
    ("Grep of a named 20 GiB sparse file read all of it (65 s, no bound)", "attack_inputs"),
    ("the edit history kept up to 64 MiB per session, never read (100k-call soak: RSS +73%)", "soak"),
)
"""Bugs this suite found that were fixed while it was written; the named suites keep them fixed."""


def _results_table(results: Counter[tuple[str, str]]) -> list[str]:
    tools = sorted({tool for tool, _ in results})
    lines = [
        "",
        "## How the checked calls ended",
        "",
        "Every call of the fuzz, attack-input and fault suites, per tool: how many succeeded, and the error codes "
        "of the others (each one a result, none an exception).",
        "",
        "| Tool | Calls | ok | Error codes (count) |",
        "|---|---:|---:|---|",
    ]
    for tool in tools:
        mine = {code: n for (t, code), n in results.items() if t == tool}
        errors = ", ".join(f"{code} {n:,}" for code, n in sorted(mine.items(), key=lambda kv: -kv[1]) if code != "ok")
        lines.append(f"| {tool} | {sum(mine.values()):,} | {mine.get('ok', 0):,} | {errors} |")
    return lines


_HOW_TO_RUN = """## How to run

- CI (about three minutes on 2 cores): `.venv/bin/python -m pytest tests/reliability`. The 750-call soak,
  25 fuzz examples a tool, and 5,000 pipelined calls.
- Long: add `--run-slow` (or set `MCP_CODETOOLS_RELIABILITY_LONG=1`): the 100,000-call soak, 800 fuzz examples
  a tool, 10,000 pipelined calls and more SIGKILL trials.
- Running the tests writes no report. `--reliability-report docs/reliability.md` (or
  `MCP_CODETOOLS_RELIABILITY_REPORT=docs/reliability.md`) rewrites this file at the end of a run that
  executed the whole reliability suite (no `-k`, no single file); commit it deliberately.
- Hypothesis prints a reproduction blob for any failing example; rerun with `@reproduce_failure` to replay it.
"""


KEPT_START = "<!-- kept by hand: start -->"
KEPT_END = "<!-- kept by hand: end -->"
"""Between these, the report holds figures no pytest run makes (attack runs, by hand): a rewrite keeps them."""


def kept_section(text: str) -> str:
    """The hand-kept block of an existing report, markers included ('' when there is none)."""
    start, end = text.find(KEPT_START), text.find(KEPT_END)
    if start < 0 or end < start:
        return ""
    return text[start : end + len(KEPT_END)] + "\n"


def write_report(figures: Figures, *, wall_s: float, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = kept_section(path.read_text(encoding="utf-8")) if path.exists() else ""
    path.write_text(render(figures, wall_s=wall_s) + ("\n" + kept if kept else ""), encoding="utf-8")
    return path


def record_outcome(figures: Figures, nodeid: str, suite: str, outcome: str, duration_s: float, reason: str) -> None:
    """Merge one phase report into the test's outcome: a failure in any phase wins."""
    previous = figures.outcomes.get(nodeid)
    if previous is None:
        figures.outcomes[nodeid] = Outcome(suite, outcome, duration_s, reason)
        return
    previous.duration_s += duration_s
    if outcome == "failed" or previous.outcome == "passed" and outcome != "passed":
        previous.outcome = outcome
        previous.reason = reason or previous.reason


def as_dict(figures: Figures) -> dict[str, Any]:
    """The figures as plain data (for debugging a run)."""
    return {
        "calls": dict(figures.calls),
        "faults": dict(figures.faults),
        "inputs": dict(figures.inputs),
        "violations": dict(figures.violations),
        "known_bug_hits": dict(figures.known_bug_hits),
        "measurements": {k: vars(v) for k, v in figures.measurements.items()},
    }
