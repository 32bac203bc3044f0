"""Grep's files mode: names statted as rg reports them, in the order newest_first gave after rg ended."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_codetools.search import sinks
from mcp_codetools.search.sinks import NewestFirstCollector, newest_first

pytestmark = pytest.mark.anyio


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[tuple[Path, int, list[bytes]]]:
    """Files with distinct and shared mtimes (ties go by name), one in a subfolder, and one name that is gone."""
    names: list[bytes] = []
    (tmp_path / "sub").mkdir()
    for i, name in enumerate(["b.py", "a.py", "sub/c.py", "d.py", "e.py", "f.py"]):
        path = tmp_path / name
        path.write_text("x\n", encoding="utf-8")
        os.utime(path, ns=(0, 1_000_000_000 * (i % 3)))
        names.append(name.encode())
    names.append(b"gone.py")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield tmp_path, fd, names
    finally:
        os.close(fd)


def fed(fd: int, data: bytes, cuts: list[int], max_bytes: int = 1 << 20) -> NewestFirstCollector:
    collect = NewestFirstCollector(max_bytes, fd)
    last = 0
    for cut in [*cuts, len(data)]:
        if not collect(data[last:cut]):
            break
        last = cut
    return collect


async def test_the_order_is_newest_first_for_every_chunking(folder: tuple[Path, int, list[bytes]]) -> None:
    _, fd, names = folder
    data = b"\0".join(names) + b"\0"
    expected = await newest_first(names, fd)
    rng = random.Random(5)
    for cuts in ([], list(range(1, len(data))), sorted(rng.sample(range(len(data)), 8))):
        assert fed(fd, data, cuts).ordered() == expected
    # rg always ends a name with NUL; a last one without is still listed.
    assert fed(fd, data[:-1], [4]).ordered() == expected


async def test_after_an_early_stop_the_cut_off_name_is_left_out(folder: tuple[Path, int, list[bytes]]) -> None:
    _, fd, names = folder
    data = b"\0".join(names) + b"\0"
    collect = fed(fd, data, [10, 20], max_bytes=12)  # stops at the second chunk
    assert not collect.complete
    kept = collect.records()
    assert kept == data[: data[:20].rfind(b"\0")].split(b"\0")
    assert 0 < len(kept) < len(names)
    assert collect.ordered() == await newest_first(kept, fd)


async def test_names_are_statted_while_rg_streams_not_after(
    folder: tuple[Path, int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, fd, names = folder
    collect = fed(fd, b"\0".join(names), [3, 9, 17])  # the last name comes without its NUL
    statted: list[bytes] = []
    real = sinks._mtime_or_zero

    def counting(name: bytes, dir_fd: int) -> int:
        statted.append(name)
        return real(name, dir_fd)

    monkeypatch.setattr(sinks, "_mtime_or_zero", counting)
    collect.ordered()
    assert statted == [names[-1]]
