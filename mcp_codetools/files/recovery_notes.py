"""What an Edit says about recovery: the note on an edit placed by normalising, and the "not found" answer."""

from __future__ import annotations

from mcp_codetools.files import lookalikes, matching
from mcp_codetools.files.recovery import Ambiguous, Recovered, Unsure
from mcp_codetools.files.text import number_lines

_SHOWN_LINES = 15


def _join(kinds: tuple[str, ...]) -> str:
    if not kinds:  # every normalisation names itself; this only keeps a missed one from failing the call
        return "whitespace"
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]


def _lines(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def applied_note(rec: Recovered) -> str:
    """What the result says when an edit was placed by normalising."""
    note = (
        f"Note: old_string was not in the file as written; it matched {_lines(rec.first_line, rec.last_line)} "
        f"once, ignoring {_join(rec.kinds)}, and the edit was made there."
    )
    if rec.reindented:
        note += " new_string was re-indented to match the file."
    elif "indentation" in rec.kinds or "tabs vs spaces" in rec.kinds:
        note += " new_string already fitted the file's indentation and was written as sent."
    if rec.inside_line:
        note += f" The match is part of line {rec.first_line}, which holds more text: check that line."
    return note


def _numbered(text: str, first: int) -> str:
    lines = text.split("\n")
    shown = number_lines(lines[:_SHOWN_LINES], first)
    return shown + (f"\n… ({len(lines) - _SHOWN_LINES} more lines)" if len(lines) > _SHOWN_LINES else "")


def miss_detail(text: str, found: Recovered | Ambiguous | Unsure) -> str:
    """The part of a "not found" answer that says where old_string nearly is."""
    if isinstance(found, Ambiguous):
        shown = [_lines(a, b) for a, b in found.regions[:10]]
        more = f" and {len(found.regions) - 10} more" if len(found.regions) > 10 else ""
        return (
            f"Ignoring {_join(found.kinds)}, it matches {len(found.regions)} places: "
            f"{', '.join(shown)}{more}. Nothing was changed. Add surrounding lines to old_string so it is unique, "
            "copying them exactly from Read."
        )
    where = _lines(found.first_line, found.last_line)
    if isinstance(found, Unsure):
        (label_a, text_a), (label_b, text_b) = found.readings
        return (
            f"Ignoring {_join(found.kinds)}, it matches {where} once, but {found.question}. Nothing was changed.\n"
            f"{label_a}, the lines would read:\n{_numbered(text_a, found.first_line)}\n"
            f"{label_b}, they would read:\n{_numbered(text_b, found.first_line)}\n"
            "Copy old_string exactly from Read, and give new_string exactly as the lines should be."
        )
    lines = text.split("\n")[found.first_line - 1 : min(found.last_line, found.first_line + 29)]
    return (
        f"Ignoring {_join(found.kinds)}, it matches {where}:\n"
        f"{number_lines(lines, found.first_line)}\nCopy the exact text from these lines into old_string."
    )


def not_found(text: str, old: str, path: str, found: Recovered | Ambiguous | Unsure | None) -> str:
    """The whole "not found" answer: where old_string nearly is, or the closest region of the file.

    Characters that print like a space or like nothing are named with their place, since quoting them back
    would not show the difference.
    """
    message = (
        matching.not_found_message(text, old, path)
        if found is None
        else f"{matching.not_found_head(old, path)}\n{miss_detail(text, found)}"
    )
    notes = [lookalikes.describe_invisible(old, "old_string")]
    if isinstance(found, (Recovered, Unsure)):
        region = "\n".join(text.split("\n")[found.first_line - 1 : found.last_line])
        notes.append(lookalikes.describe_invisible(region, "The file", found.first_line))
    elif found is None:
        near = matching.closest_region(text, old)
        if near is not None:
            region = "\n".join(text.split("\n")[near[0] - 1 : near[1]])
            notes.append(lookalikes.describe_invisible(region, "The file", near[0]))
    return message + "".join(f"\n{note}" for note in notes if note)
