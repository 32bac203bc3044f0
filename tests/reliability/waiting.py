"""Bounded waits for something to go away, whose outcome a test then asserts on (never a tautology)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import anyio

T = TypeVar("T")


async def left_after(find: Callable[[], Iterable[T]], seconds: float, interval: float = 0.05) -> list[T]:
    """What `find` still returns once it came back empty or `seconds` passed (polled: /proc cannot be awaited).

    The caller asserts on the list, so a wait that runs out fails as an assertion naming what was left,
    not as a timeout.
    """
    with anyio.move_on_after(seconds):
        while list(find()):  # noqa: ASYNC110 - bounded poll of the process table
            await anyio.sleep(interval)
    return list(find())
