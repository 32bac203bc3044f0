"""Build the edit-miss corpus: `python -m benchmarks.edit_miss.make_corpus [--count N] [--seed S]`.

Each case is a real region of one of this repository's own source files (Python, Markdown, TOML, JSON,
shell), an edit of it, and the damage a model's copy picks up, applied to old_string and new_string alike:
Read's prefixes, lost or added trailing spaces, curly quotes, CRLF, tabs for spaces, a shifted indent, and
mixes of these. Decoys must change nothing: the region doubled elsewhere (ambiguous), a changed word (a
real miss) and an inconsistent indent. The file kept with a case is the 40 lines around its region, so the
corpus stays small and does not change when the sources do. Writes benchmarks/edit_miss/corpus.jsonl.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CORPUS = HERE / "corpus.jsonl"
SUFFIXES = (".py", ".md", ".toml", ".json", ".sh")
WINDOW = 40

Damage = Callable[[str, int], str]
"""Damage to a piece of text, given the 1-based line number where it starts in the file."""


def _prefix_tab(text: str, first: int) -> str:
    return "\n".join(f"{first + i}\t{line}" for i, line in enumerate(text.split("\n")))


def _prefix_arrow(text: str, first: int) -> str:
    return "\n".join(f"{first + i:>6}\u2192{line}" for i, line in enumerate(text.split("\n")))


def _trailing(text: str, first: int) -> str:
    return "\n".join(line + "  " if i % 2 == 0 else line for i, line in enumerate(text.split("\n")))


def _curly(text: str, first: int) -> str:
    """Typographic quotes, as a word processor or a chat interface writes them: opening after a space."""
    out = []
    for index, char in enumerate(text):
        if char in "\"'":
            before = text[index - 1] if index else " "
            opening = before.isspace() or before in "([{"
            pair = "\u201c\u201d" if char == '"' else "\u2018\u2019"
            out.append(pair[0] if opening else pair[1])
        else:
            out.append(char)
    return "".join(out)


def _crlf(text: str, first: int) -> str:
    return text.replace("\n", "\r\n")


def _dedent(text: str, first: int) -> str:
    return "\n".join(line[4:] if line.startswith("    ") else line for line in text.split("\n"))


def _indent(text: str, first: int) -> str:
    return "\n".join("    " + line if line.strip() else line for line in text.split("\n"))


def _both(a: Damage, b: Damage) -> Damage:
    return lambda text, first: b(a(text, first), first)


def _to_tabs(text: str) -> str:
    """The file as a tab-indented project would keep it (each 4 leading spaces a tab)."""
    out = []
    for line in text.split("\n"):
        body = line.lstrip(" ")
        width = len(line) - len(body)
        out.append("\t" * (width // 4) + " " * (width % 4) + body)
    return "\n".join(out)


RECOVERABLE: dict[str, Damage] = {
    "prefix-tab": _prefix_tab,
    "prefix-arrow": _prefix_arrow,
    "trailing-whitespace": _trailing,
    "curly-quotes": _curly,
    "crlf-in-old": _crlf,
    "dedent": _dedent,
    "indent": _indent,
    "mixed-prefix-dedent": _both(_dedent, _prefix_tab),
    "mixed-quotes-trailing": _both(_curly, _trailing),
    "mixed-indent-crlf": _both(_indent, _crlf),
}
"""Damage done to old_string and new_string alike; the file is as the sources have it."""


def _sources() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [
        REPO / name
        for name in sorted(listed.splitlines())
        if name.endswith(SUFFIXES) and "edit_miss" not in name and not name.startswith("tests/ecosystem/schemas")
    ]


def _edit(region: str, rng: random.Random) -> str | None:
    """The region as a model would change it: a word renamed, or a line added after one of its lines."""
    lines = region.split("\n")
    words = list(re.finditer(r"[A-Za-z_][A-Za-z0-9_]{3,}", region))
    if words and rng.random() < 0.6:
        word = rng.choice(words)
        return region[: word.start()] + word.group(0) + "_v2" + region[word.end() :]
    at = rng.randrange(len(lines))
    beside = next((ln for ln in [*lines[at:], *lines[:at][::-1]] if ln.strip()), "")
    indent = beside[: len(beside) - len(beside.lstrip())]
    return "\n".join([*lines[: at + 1], indent + "added_line = 1", *lines[at + 1 :]])


def _pick(text: str, rng: random.Random, need_indent: bool, need_quotes: bool) -> tuple[int, int] | None:
    """[first, last) line indexes of a region worth editing: 2-6 lines, some text, found once in the file."""
    lines = text.split("\n")
    for _ in range(40):
        size = rng.randint(2, 6)
        if len(lines) <= size + 2:
            return None
        first = rng.randrange(0, len(lines) - size)
        chunk = lines[first : first + size]
        region = "\n".join(chunk)
        if sum(bool(line.strip()) for line in chunk) < 2 or len(region) < 30 or "\t" in region:
            continue
        if need_indent and not all(line.startswith("    ") or not line.strip() for line in chunk):
            continue
        if need_quotes and not ('"' in region or "'" in region):
            continue
        if any(ch in region for ch in "\u2018\u2019\u201c\u201d\u2192"):
            continue
        if text.count(region) != 1:
            continue
        return first, first + size
    return None


def _window(lines: list[str], first: int, last: int) -> tuple[list[str], int]:
    start = max(0, first - (WINDOW - (last - first)) // 2)
    return lines[start : start + WINDOW], start


def build(count: int, seed: int) -> list[dict[str, object]]:
    """`count` cases, about 70% recoverable and 30% decoys, reproducible from `seed`."""
    rng = random.Random(seed)
    sources = [(p, p.read_text(encoding="utf-8")) for p in _sources()]
    sources = [(p, t) for p, t in sources if t.count("\n") > 20]
    kinds = [
        *RECOVERABLE,
        "tabs-file",
        "curly-file",
        "copy-at-other-indent",
        "decoy-duplicate",
        "decoy-changed-word",
        "decoy-indent",
        "decoy-two-shifts",
    ]
    cases: list[dict[str, object]] = []
    attempts = 0
    while len(cases) < count and attempts < count * 50:
        attempts += 1
        kind = kinds[len(cases) % len(kinds)]
        path, full = rng.choice(sources)
        if kind == "curly-file" and path.suffix != ".md":
            continue
        need_indent = kind in {"dedent", "mixed-prefix-dedent", "tabs-file", "decoy-indent", "decoy-two-shifts"}
        picked = _pick(full, rng, need_indent, kind in {"curly-quotes", "mixed-quotes-trailing", "curly-file"})
        if picked is None:
            continue
        lines = full.split("\n")
        window, start = _window(lines, *picked)
        first, last = picked[0] - start, picked[1] - start
        text = "\n".join(window) + "\n"
        region = "\n".join(window[first:last])
        edited = _edit(region, rng)
        if edited is None or text.count(region) != 1:
            continue
        case = _case(kind, path, text, region, edited, first + 1, rng)
        if case is not None:
            cases.append(case)
    return cases


def _case(
    kind: str, path: Path, text: str, region: str, edited: str, line: int, rng: random.Random
) -> dict[str, object] | None:
    after = text.replace(region, edited, 1)
    expect = "applied"
    if kind in RECOVERABLE:
        damage = RECOVERABLE[kind]
        old, new = damage(region, line), damage(edited, line)
    elif kind == "tabs-file":
        text, after = _to_tabs(text), _to_tabs(after)
        old, new = region, edited
    elif kind == "curly-file":
        text, after = _curly(text, 1), _curly(after, 1)
        old, new = region, edited
    elif kind == "copy-at-other-indent":
        # The region again, one level deeper, further down: prefixes alone point at the first one.
        text = text + "\n" + _indent(region, 1) + "\n"
        after = after + "\n" + _indent(region, 1) + "\n"
        old, new = _prefix_tab(region, line), _prefix_tab(edited, line)
    elif kind == "decoy-two-shifts":
        # The region at two other depths and not at its own: a shift fits both, so neither may be edited.
        text = after = text.replace(region, _indent(region, 1), 1) + "\n" + _indent(_indent(region, 1), 1) + "\n"
        old, new, expect = _dedent(region, line), _dedent(edited, line), "unchanged"
    elif kind == "decoy-duplicate":
        text = after = text + "\n" + region + "\n"
        old, new, expect = _prefix_tab(region, line), _prefix_tab(edited, line), "unchanged"
    elif kind == "decoy-changed-word":
        words = list(re.finditer(r"[A-Za-z_][A-Za-z0-9_]{3,}", region))
        if not words:
            return None
        word = rng.choice(words)
        old = _prefix_tab(region[: word.start()] + word.group(0)[::-1] + region[word.end() :], line)
        new, after, expect = _prefix_tab(edited, line), text, "unchanged"
    else:  # decoy-indent: one line moved by a different amount than the others
        lines = region.split("\n")
        odd = max(i for i, ln in enumerate(lines) if ln.strip())
        shifted = [("  " if i == odd else "    ") + ln if ln.strip() else ln for i, ln in enumerate(lines)]
        old, new, after, expect = "\n".join(shifted), _indent(edited, line), text, "unchanged"
    if old in text:
        return None  # not a miss: nothing to recover
    return {
        "kind": kind,
        "source": str(path.relative_to(REPO)),
        "region_line": line,
        "file": text,
        "old_string": old,
        "new_string": new,
        "expect": expect,
        "change": _change(text, after),
    }


def _change(before: str, after: str) -> list[object]:
    """[start, end, text]: `after` is `before` with before[start:end] replaced by text (kept small on disk)."""
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    return [head, len(before) - tail, after[head : len(after) - tail]]


def expected_after(case: dict[str, object]) -> str:
    """The file as it must be after the case's edit (the file itself for cases that must change nothing)."""
    text = str(case["file"])
    start, end, piece = case["change"]  # type: ignore[misc]
    return text[:start] + piece + text[end:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=260)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    cases = build(args.count, args.seed)
    with CORPUS.open("w", encoding="utf-8") as out:
        for number, case in enumerate(cases):
            out.write(json.dumps({"id": number, **case}, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for case in cases:
        counts[str(case["kind"])] = counts.get(str(case["kind"]), 0) + 1
    print(f"{len(cases)} cases written to {CORPUS}")
    for kind, n in sorted(counts.items()):
        print(f"  {kind}: {n}")


if __name__ == "__main__":
    main()
