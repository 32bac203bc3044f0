"""The workloads, in table order. Each module has NAME, TITLE and `async def run(ctx)` that adds rows."""

from __future__ import annotations

from types import ModuleType

from benchmarks.workloads import (
    big_file,
    cold_start,
    concurrent,
    dispatcher,
    edit,
    grep,
    result_size,
    rich_files,
    shell,
    small_read,
)

ALL: tuple[ModuleType, ...] = (
    cold_start,
    small_read,
    concurrent,
    dispatcher,
    big_file,
    grep,
    edit,
    shell,
    result_size,
    rich_files,
)


def by_name(names: list[str]) -> list[ModuleType]:
    known = {module.NAME: module for module in ALL}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [module for module in ALL if module.NAME in names]
