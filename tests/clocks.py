"""A clock for tests of reported durations: known readings instead of elapsed time."""

from __future__ import annotations

import time


class SteppingClock:
    """Stands in for a module's `time`: `perf_counter` moves `step` seconds at every reading, `monotonic` is real.

    A call read at its start and its end then reports exactly `step` seconds, whatever the machine's load.
    """

    def __init__(self, step: float) -> None:
        self.now = 1000.0
        self.step = step

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now

    def monotonic(self) -> float:
        return time.monotonic()
