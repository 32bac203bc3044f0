"""What the numbers were measured on: cores, memory, and the versions of everything in the race."""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version


def _first_line(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return "not found"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else "unknown"


def _package(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def memory_gib() -> float:
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / (1024 * 1024)
    return float("nan")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe(rg: str | None, peer_versions: dict[str, str]) -> dict[str, str]:
    """Facts for the report header, in display order."""
    facts = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} cores (nproc), {memory_gib():.1f} GiB memory, {cpu_model()}",
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "mcp": _package("mcp"),
        "mcp-codetools": _package("mcp-codetools"),
        "rg": _first_line([rg, "--version"]) if rg else "not found",
        "node": _first_line(["node", "--version"]) if shutil.which("node") else "not found",
    }
    facts.update(peer_versions)
    return facts
