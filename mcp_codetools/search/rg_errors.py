"""rg's complaints as the model reads them: the fault in its input or in the run, in the tool's own words.

Grep and Glob share one translation; `FailureWording` holds what differs between them, so each keeps
the texts it always gave.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_codetools.errors import ExecutionError, InvalidInputError
from mcp_codetools.search.process import RgResult


@dataclass(frozen=True)
class FailureWording:
    """How one tool words rg's failure."""

    tool: str
    """The tool's name, which opens the message."""
    subject: str
    """What the tool could not use when the fault is the model's: "the arguments", "the pattern"."""
    input_words: tuple[str, ...]
    """Words in rg's text that put the fault in the model's input (InvalidInputError), not in the run."""
    pattern_advice: bool = False
    """Whether rg searched for a pattern: its pattern is shown as the model wrote it, and its advice
    about command-line flags is turned into Grep's parameters."""


GREP_WORDING = FailureWording("Grep", "the arguments", ("regex", "pattern", "file type", "glob"), pattern_advice=True)
GLOB_WORDING = FailureWording("Glob", "the pattern", ("glob",))


def rg_failure(result: RgResult, wording: FailureWording) -> InvalidInputError | ExecutionError:
    """rg's explanation, as the error `wording`'s tool answers with."""
    text = result.error_text()
    if wording.pattern_advice:
        text = _as_grep_parameters(_own_pattern(text))
    if any(word in text for word in wording.input_words):
        return InvalidInputError(f"{wording.tool} could not use {wording.subject}: {text}")
    return ExecutionError(f"{wording.tool} failed: {text}")


def _as_grep_parameters(text: str) -> str:
    """rg's advice about command-line flags turned into Grep's parameters."""
    text = text.replace("the --multiline flag (or -U for short)", "multiline: true")
    if "--pcre2" in text:
        text = text[: text.find("Consider enabling PCRE2")].rstrip()
        text += "\nGrep uses Rust regex syntax, without look-around or backreferences: rewrite the pattern."
    if "--text" in text:
        text = text[: text.find("Consider enabling text mode")].rstrip()
        text += "\nGrep treats files with NUL bytes as binary, so a NUL byte cannot be matched."
    if "unrecognized file type" in text:
        text += ". Use one rg knows (py, js, ts, rust, go, java, cpp, …; `rg --type-list` lists them) or glob instead."
    return text


def _own_pattern(text: str) -> str:
    """rg shows a pattern it cannot parse wrapped as `(?:PATTERN)`; show the model's own pattern, caret moved."""
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1]):
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        caret = lines[i + 1]
        if body.startswith("(?:") and body.endswith(")") and caret.strip().startswith("^"):
            lines[i] = " " * indent + body[3:-1]
            spaces = len(caret) - len(caret.lstrip(" "))
            lines[i + 1] = " " * max(indent, spaces - 3) + caret.lstrip(" ")
            break
    return "\n".join(lines)


def problem_note(result: RgResult) -> str:
    """When rg found things but also complained (an unreadable file), say so in one line."""
    if result.nothing_searched:
        return "\n(No file was searched: none under the path passes the ignore rules and the glob and type filters.)"
    if not result.failed:
        return ""
    first = result.error_text().splitlines()[0]
    return f"\n\n(rg reported a problem with some files: {first})"
