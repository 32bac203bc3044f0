"""Processes found by their command line in /proc, for tests that tag what they start and check it is gone.

One scanner instead of a copy per test module. It reads /proc, so tests using it are marked to need /proc
(tests/platform_marks.py follows the import); it is not in tests/processes.py, which works without /proc.
"""

from __future__ import annotations

import os


def processes_with(marker: str, *, live_only: bool = True) -> list[int]:
    """Pids whose command line holds `marker`; zombies and dead ones are left out unless `live_only` is off."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            if marker.encode() not in cmdline:
                continue
            if live_only:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    if handle.read().rpartition(b")")[2].split()[0] in (b"Z", b"X"):
                        continue
        except OSError:
            continue
        found.append(int(entry))
    return found
