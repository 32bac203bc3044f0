"""Build the second edit-miss corpus (issue 37): `python -m benchmarks.edit_miss.make_more [--count N] [--seed S]`.

The damage kinds the first corpus (make_corpus.py) lacks, on code this repository has never seen as well as
its own: Python from installed packages, Markdown, YAML and tab-indented JS from npm's bundled packages and
the system's documentation (paths that are absent are skipped). Kinds:
- lookalikes: no-break and zero-width spaces, smart dashes and ellipses, HTML entities, `\\u` escapes, each
  in the copy or (where the sources have them) in the file; a blank line missing or extra;
- `/old-only`: the damage on old_string alone, with new_string already right, for these and for the first
  corpus' indentation, prefix, quote and whitespace kinds;
- tab-indented regions holding column-0 lines, copied with spaces;
- combinations of two kinds;
- decoys that must change nothing: the region twice, differing only by a lookalike; and a blank line lost
  from both strings right beside the line the edit adds (`decoy-blank-two-readings`): the same two strings
  come from adding the line before the blank line or after it (`make_corpus._edit` adds a line after any
  line of the region, the blank one included), so no rule can tell which was meant, and the edit is refused.
The file kept with a case is the 40 lines around its region. Writes benchmarks/edit_miss/corpus_more.jsonl.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
from collections.abc import Callable
from pathlib import Path

from benchmarks.edit_miss import make_corpus as first

HERE = Path(__file__).resolve().parent
CORPUS_MORE = HERE / "corpus_more.jsonl"
EXTERNAL = (
    "/usr/lib/node_modules/npm/node_modules/*/README.md",
    "/usr/lib/node_modules/npm/node_modules/debug/src/*.js",
    "/usr/lib/node_modules/npm/node_modules/p-map/*.js",
    "/usr/lib/node_modules/npm/node_modules/glob/dist/commonjs/*.js",
    "/usr/lib/node_modules/npm/node_modules/minimatch/dist/commonjs/*.js",
    "/usr/share/doc/python3-yaml/examples/pygments-lexer/*.yaml",
    "/usr/share/perl/*/CPAN/Kwalify/*.yml",
    "/usr/share/javascript/sphinxdoc/1.0/*.js",
)
VENV_PACKAGES = ("click", "anyio/_core", "h11")
Damage = Callable[[str], str]


def _nbsp(text: str) -> str:
    """Every other space inside a line (not its indentation) a no-break space, as a web page's copy has them."""
    out = []
    for line in text.split("\n"):
        body = line.lstrip(" \t")
        head = line[: len(line) - len(body)]
        count = 0

        def swap(match: re.Match[str]) -> str:
            nonlocal count
            count += 1
            return "\u00a0" if count % 2 else " "

        out.append(head + re.sub(" ", swap, body))
    return "\n".join(out)


def _zero_width(text: str) -> str:
    return "\n".join(
        re.sub(r"(\w)(\W)", "\\1\u200b\\2", line, count=1) if i % 2 == 0 else line
        for i, line in enumerate(text.split("\n"))
    )


def _dashes(text: str) -> str:
    return text.replace("...", "\u2026").replace(" - ", " \u2014 ").replace("-", "\u2013")


def _plain_dashes(text: str) -> str:
    return re.sub("[\u2013\u2014]", "-", text).replace("\u2026", "...")


def _entities(text: str) -> str:
    return html.escape(text, quote=False)


def _escapes(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if 0x80 <= ord(c) <= 0xFFFF else c for c in text)


def _unescape(text: str) -> str:
    def char(match: re.Match[str]) -> str:
        code = int(match.group(1), 16)
        return chr(code) if _escapable(code) else match.group(0)

    return re.sub(r"\\u([0-9a-fA-F]{4})", char, text)


def _blank_missing(text: str) -> str:
    return re.sub(r"\n[ \t]*\n(?=[ \t]*\S)", "\n", text, count=1)


def two_readings(edited: str) -> bool:
    """Whether `_blank_missing` takes from `edited` a blank line beside the line `make_corpus._edit` added.

    Then old_string and new_string are the same whether the line went before the blank line or after it.
    """
    lost = re.search(r"\n[ \t]*\n(?=[ \t]*\S)", edited)
    if lost is None:
        return False
    above = edited[: lost.start()].rsplit("\n", 1)[-1]
    below = edited[lost.end() :].split("\n", 1)[0]
    return ADDED in (above.strip(), below.strip())


def _blank_extra(text: str) -> str:
    lines = text.split("\n")
    at = next((i for i in range(len(lines) - 1) if lines[i].strip() and lines[i + 1].strip()), None)
    return text if at is None else "\n".join([*lines[: at + 1], "", *lines[at + 1 :]])


def _spaces_for_tabs(text: str) -> str:
    return "\n".join(re.sub(r"^\t+", lambda m: "    " * len(m.group(0)), line) for line in text.split("\n"))


def _dedent_any(text: str) -> str:
    """One level less, whatever the file's unit (4 spaces or a tab)."""
    return "\n".join(re.sub(r"^(\t|    )", "", line) for line in text.split("\n"))


def _then(a: Damage, b: Damage) -> Damage:
    return lambda text: b(a(text))


def _first(name: str) -> Damage:
    return lambda text: first.RECOVERABLE[name](text, 1)


def _prefixed(damage: Damage) -> Callable[[str, int], str]:
    return lambda text, line: first._prefix_tab(damage(text), line)


BOTH: dict[str, Damage] = {
    "nbsp": _nbsp,
    "zero-width": _zero_width,
    "smart-dashes": _dashes,
    "html-entities": _entities,
    "u-escapes": _escapes,
    "blank-line-missing": _blank_missing,
    "blank-line-extra": _blank_extra,
    "tabs-col0": _spaces_for_tabs,
    "nbsp+dedent": _then(_dedent_any, _nbsp),
    "entities+trailing": _then(_entities, _first("trailing-whitespace")),
    "blank-missing+curly": _then(_blank_missing, _first("curly-quotes")),
    "dashes+indent": _then(_dashes, _first("indent")),
    "zero-width+crlf": _then(_zero_width, _first("crlf-in-old")),
}
"""Damage done to old_string and new_string alike."""
FILE_SIDE: dict[str, Damage] = {"smart-dashes-file": _plain_dashes, "u-escapes-file": _unescape}
"""The file has the special form; the copy (old_string and new_string) the plain one."""
OLD_ONLY: dict[str, Damage] = {
    **{f"{name}/old-only": BOTH[name] for name in ("nbsp", "zero-width", "smart-dashes", "html-entities")},
    **{f"{name}/old-only": BOTH[name] for name in ("u-escapes", "blank-line-missing", "blank-line-extra")},
    "tabs-col0/old-only": _spaces_for_tabs,
    "dedent/old-only": _dedent_any,
    "indent/old-only": _first("indent"),
    "trailing-whitespace/old-only": _first("trailing-whitespace"),
    "curly-quotes/old-only": _first("curly-quotes"),
    "prefix-dedent/old-only": _dedent_any,  # and Read's prefixes, added in _case
}
"""Damage done to old_string only: new_string is the intended text as it should be written."""
RECOVERABLE_MORE = (*BOTH, *FILE_SIDE, *OLD_ONLY)
DECOYS = ("decoy-lookalike-twice", "decoy-lookalike-changed-word")
ADDED = "added_line = 1"
"""The line `make_corpus._edit` adds."""
TWO_READINGS = "decoy-blank-two-readings"
"""The kind a blank-line-missing case becomes when its strings fit two edits (see `two_readings`)."""


def _escapable(code: int) -> bool:
    return code >= 0x80 and not 0xD800 <= code <= 0xDFFF


def _needs(kind: str) -> Callable[[str], bool]:
    """What a region must hold for the kind's damage to apply."""
    base = kind.split("/")[0].split("+")[0]
    table: dict[str, Callable[[str], bool]] = {
        "smart-dashes": lambda r: "-" in r or "..." in r,
        "dashes": lambda r: "-" in r or "..." in r,
        "html-entities": lambda r: any(c in r for c in "<>&"),
        "entities": lambda r: any(c in r for c in "<>&"),
        "u-escapes": lambda r: any(0x80 <= ord(c) <= 0xFFFF for c in r),
        "blank-line-missing": lambda r: re.search(r"\S\n[ \t]*\n[ \t]*\S", r) is not None,
        "blank-missing": lambda r: re.search(r"\S\n[ \t]*\n[ \t]*\S", r) is not None and ('"' in r or "'" in r),
        "tabs-col0": lambda r: re.search(r"^\t", r, re.M) is not None and re.search(r"^\S", r, re.M) is not None,
        "smart-dashes-file": lambda r: any(c in r for c in "\u2013\u2014\u2026"),
        "u-escapes-file": lambda r: any(_escapable(int(m, 16)) for m in re.findall(r"\\u([0-9a-fA-F]{4})", r)),
        "dedent": lambda r: all(ln.startswith(("    ", "\t")) or not ln.strip() for ln in r.split("\n")),
        "nbsp": lambda r: re.search(r"\S +\S", r) is not None,
        "curly-quotes": lambda r: '"' in r or "'" in r,
        "prefix-dedent": lambda r: all(ln.startswith(("    ", "\t")) or not ln.strip() for ln in r.split("\n")),
    }
    if kind.startswith("nbsp+dedent"):
        return lambda r: table["nbsp"](r) and table["dedent"](r)
    return table.get(base, lambda r: True)


def _sources() -> list[Path]:
    paths = [p for p in first._sources() if p.suffix in (".py", ".md", ".yml")]  # JS and YAML: only outside
    for pattern in EXTERNAL:
        paths += sorted(Path("/").glob(pattern.lstrip("/")))
    site = next(Path(first.REPO / ".venv" / "lib").glob("python3*/site-packages"), None)
    if site is not None:
        for package in VENV_PACKAGES:
            paths += sorted((site / package).glob("*.py"))
    return [p for p in paths if p.is_file() and not p.name.endswith(".min.js")]


def _pick(text: str, rng: random.Random, ok: Callable[[str], bool], tabs: bool) -> tuple[int, int] | None:
    lines = text.split("\n")
    for _ in range(60):
        size = rng.randint(2, 7)
        if len(lines) <= size + 2:
            return None
        start = rng.randrange(0, len(lines) - size)
        chunk = lines[start : start + size]
        region = "\n".join(chunk)
        if sum(bool(line.strip()) for line in chunk) < 2 or len(region) < 30 or ("\t" in region) != tabs:
            continue
        if not chunk[0].strip() or not chunk[-1].strip() or text.count(region) != 1 or not ok(region):
            continue
        return start, start + size
    return None


def build(count: int, seed: int) -> list[dict[str, object]]:
    """`count` cases over every kind in turn, reproducible from `seed` on the same machine."""
    rng = random.Random(seed)
    sources = [(p, p.read_text(encoding="utf-8", errors="replace")) for p in _sources()]
    sources = [(p, t) for p, t in sources if t.count("\n") > 20 and "\ufffd" not in t]
    kinds = [*RECOVERABLE_MORE, *DECOYS]
    pools: dict[bool, dict[str, list[tuple[Path, str]]]] = {False: {}, True: {}}
    for path, text in sources:
        # Each file type is drawn as often as the others, so YAML's few files weigh as much as Python's many.
        family = ".yml" if path.suffix == ".yaml" else path.suffix
        pools[text.count("\n\t") > 5].setdefault(family, []).append((path, text))
    per_kind = -(-count // len(kinds))
    cases: list[dict[str, object]] = []
    for kind in kinds:
        made = 0
        for _ in range(per_kind * 300):
            if made == per_kind:
                break
            case = _attempt(kind, pools[kind.startswith("tabs-col0")], rng)
            if case is not None:
                cases.append(case)
                made += case["kind"] == kind  # a case with two readings is kept, beside the quota
    return cases


def _attempt(kind: str, pools: dict[str, list[tuple[Path, str]]], rng: random.Random) -> dict[str, object] | None:
    tabs = kind.startswith("tabs-col0")
    path, full = rng.choice(pools[rng.choice(sorted(pools))])
    picked = _pick(full, rng, _needs(kind), tabs)
    if picked is None:
        return None
    lines = full.split("\n")
    window, start = first._window(lines, *picked)
    text = "\n".join(window) + "\n"
    region = "\n".join(window[picked[0] - start : picked[1] - start])
    edited = first._edit(region, rng)
    if edited is None or text.count(region) != 1:
        return None
    return _case(kind, path, text, region, edited, picked[0] - start + 1, rng)


def _case(
    kind: str, path: Path, text: str, region: str, edited: str, line: int, rng: random.Random
) -> dict[str, object] | None:
    after = text.replace(region, edited, 1)
    expect = "applied"
    if kind in BOTH:
        old, new = BOTH[kind](region), BOTH[kind](edited)
    elif kind in FILE_SIDE:
        old, new = FILE_SIDE[kind](region), FILE_SIDE[kind](edited)
    elif kind in OLD_ONLY:
        old, new = OLD_ONLY[kind](region), edited
        if kind == "prefix-dedent/old-only":
            old = first._prefix_tab(old, line)
    elif kind == "decoy-lookalike-twice":
        # The region again further down with its spaces made no-break: a copy with zero-width spaces fits both.
        twin = _nbsp(region)
        if twin == region:
            return None
        text = after = text + "\n" + twin + "\n"
        old, new, expect = _zero_width(region), _zero_width(edited), "unchanged"
    else:  # decoy-lookalike-changed-word
        words = list(re.finditer(r"[A-Za-z_][A-Za-z0-9_]{3,}", region))
        if not words:
            return None
        word = rng.choice(words)
        if word.group(0)[::-1] == word.group(0):
            return None
        old = _nbsp(region[: word.start()] + word.group(0)[::-1] + region[word.end() :])
        new, after, expect = edited, text, "unchanged"
    if old in text or old == region and expect == "applied" and kind not in FILE_SIDE:
        return None  # not a miss: nothing to recover
    if kind in BOTH and "blank" in kind and two_readings(edited):
        kind, after, expect = TWO_READINGS + kind.partition("+")[1] + kind.partition("+")[2], text, "unchanged"
    return {
        "kind": kind,
        "source": str(path.relative_to(first.REPO)) if path.is_relative_to(first.REPO) else str(path),
        "region_line": line,
        "file": text,
        "old_string": old,
        "new_string": new,
        "expect": expect,
        "change": first._change(text, after),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=600)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    cases = build(args.count, args.seed)
    with CORPUS_MORE.open("w", encoding="utf-8") as out:
        for number, case in enumerate(cases):
            out.write(json.dumps({"id": 10_000 + number, **case}, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for case in cases:
        counts[str(case["kind"])] = counts.get(str(case["kind"]), 0) + 1
    print(f"{len(cases)} cases written to {CORPUS_MORE}")
    for kind, n in sorted(counts.items()):
        print(f"  {kind}: {n}")


if __name__ == "__main__":
    main()
