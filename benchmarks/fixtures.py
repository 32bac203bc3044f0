"""Files the workloads read and edit, generated into the run's scratch root (deterministic, not committed)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

EDIT_MARKER = "BENCH_EDIT_MARKER_0001"
EDIT_REPLACEMENT = "BENCH_EDIT_MARKER_0002"
COMMON_WORD = "import"
_WORDS = (
    "value result config session handler request response buffer index record parser token stream cache "
    "path offset limit count items entry state error message client server worker queue event option"
).split()


def _source_line(rng: random.Random, number: int) -> str:
    """A line that looks like ordinary code (roughly 20 to 90 characters)."""
    a, b, c = rng.sample(_WORDS, 3)
    shapes = (
        f"    {a}_{b} = {c}.get({number})",
        f"def {a}_{b}({c}, {a}=None):",
        f"    if {a} is not None and {b}.{c} > {number}:",
        f"        return self.{a}[{b}] + {c}_{number}",
        f"    # {a.capitalize()} the {b} before the {c} is read again ({number}).",
        f"from .{a} import {b.capitalize()}{c.capitalize()}",
        "",
        f'    raise ValueError(f"bad {a}: {{{b}!r}} at {number}")',
    )
    return rng.choice(shapes)


def source_text(lines: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(_source_line(rng, n) + "\n" for n in range(1, lines + 1))


def write_source(path: Path, lines: int, seed: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source_text(lines, seed), encoding="utf-8")
    return path


def many_files(folder: Path, count: int, lines: int, seed: int) -> list[Path]:
    return [write_source(folder / f"mod_{i:04d}.py", lines, seed * 100_000 + i) for i in range(count)]


def edit_target(path: Path, size_bytes: int) -> Path:
    """A source file of about `size_bytes` with EDIT_MARKER once, in the middle."""
    block = source_text(2000, 7)
    repeats = max(2, size_bytes // len(block.encode()))
    half = repeats // 2
    with path.open("w", encoding="utf-8") as handle:
        for i in range(repeats):
            if i == half:
                handle.write(f"{EDIT_MARKER} = True\n")
            handle.write(block)
    return path


@dataclass
class BigFile:
    path: Path
    lines: int
    size: int


def big_file(path: Path, size_bytes: int) -> BigFile:
    """A log-like file of about `size_bytes`, written in large blocks; every line is numbered."""
    lines = 0
    written = 0
    with path.open("w", encoding="ascii") as handle:
        while written < size_bytes:
            chunk = "".join(
                f"2026-01-01T00:00:00Z worker-{n % 7} processed record {n:09d} in {n % 997} us status=ok\n"
                for n in range(lines + 1, lines + 50_001)
            )
            handle.write(chunk)
            lines += 50_000
            written += len(chunk)
    return BigFile(path, lines, path.stat().st_size)


def tiny_tree(root: Path, files: int = 300) -> Path:
    """A small source tree for quick runs: a few folders of generated modules, some with a TODO."""
    for i in range(files):
        text = source_text(40 + i % 60, 1000 + i)
        if i % 10 == 0:
            text += f"# TODO: handle the {i} case\n"
        write_source(root / f"pkg_{i % 12}" / f"m_{i:04d}.py", 0, 0).write_text(text, encoding="utf-8")
    return root
