"""Runs of the real server over stdio with a start snapshot: raw JSON-RPC lines in, answers and log out.

Every run gives the server the test's own cache folder (`XDG_CACHE_HOME` under tmp_path), so nothing is
left behind; `MCP_CODETOOLS_LOG_LEVEL=INFO` in every run (the same in each, so the snapshot key stays the
same) lets the log say what the snapshot and the early calls answered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.protocol.stdio_raw import server_command

ANSWERED = "answered from the start snapshot"
EARLY = "answered before the SDK was ready"
RUN_TIMEOUT_S = 60


def handshake(version: str, capabilities: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    init = {
        "protocolVersion": version,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]


def _count(stderr: str, phrase: str) -> int:
    for line in stderr.splitlines():
        if phrase in line:
            return int(line.rsplit(": ", 1)[1].split()[0])
    return 0


class Run:
    def __init__(self, done: subprocess.CompletedProcess[bytes]) -> None:
        self.returncode = done.returncode
        self.stderr = done.stderr.decode(errors="replace")
        self.messages = [json.loads(line) for line in done.stdout.splitlines()]  # stdout is protocol only
        self.answers = {m["id"]: m for m in self.messages if "id" in m and "method" not in m}

    @property
    def from_snapshot(self) -> int:
        """How many requests the log says the snapshot answered (0: a normal start)."""
        return _count(self.stderr, ANSWERED)

    @property
    def early(self) -> int:
        """How many calls the log says were answered before the SDK was imported."""
        return _count(self.stderr, EARLY)


def environment(tmp_path: Path, cache: Path | None = None, snapshot: bool = True) -> dict[str, str]:
    """What a run adds to the environment (the variables the snapshot key holds among them)."""
    return {
        "XDG_CACHE_HOME": str(cache or tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "no-user-config"),
        "MCP_CODETOOLS_LOG_LEVEL": "INFO",
        "MCP_CODETOOLS_START_SNAPSHOT": "1" if snapshot else "0",  # tests/conftest.py turns it off
    }


def run(  # lines: messages, or raw bytes sent as they are
    tmp_path: Path,
    root: Path,
    lines: Sequence[dict[str, Any] | bytes],
    *,
    snapshot: bool = True,
    extra: tuple[str, ...] = (),
    cache: Path | None = None,
    cwd: Path | None = None,
) -> Run:
    env = environment(tmp_path, cache, snapshot)
    done = subprocess.run(
        [*server_command(), "--root", str(root), *extra],
        input=b"".join(line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n" for line in lines),
        capture_output=True,
        cwd=str(cwd or tmp_path),
        env={**os.environ, **env},
        timeout=RUN_TIMEOUT_S,
    )
    return Run(done)


def untimed(answers: dict[Any, Any]) -> dict[Any, Any]:
    """The answers without the dispatcher's timing and a command's duration, which differ from run to run."""
    for answer in answers.values():
        details = answer.get("result", {}).get("_meta", {}).get("codetools/result", {})
        details.pop("timing", None)
        details.pop("durationMs", None)
    return answers


def snapshots(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "mcp-codetools" / "start").glob("*.json"))


@dataclass(frozen=True)
class Recorded:
    """A workspace (`folder`: the runs' cwd, `root`) whose start snapshot a cold start recorded once for a module.

    A start costs ~1.5 CPU-s: tests that need a snapshot but do not test its recording run in this workspace
    (the key holds the cwd, the root, the config files and the environment, so theirs is the same) and, when
    they change or delete the snapshot, on a copy in a cache folder of their own (`copy_to`).
    """

    folder: Path
    root: Path
    snapshot: Path
    cold: Run
    """The recording start's run: the SDK's answers to `lines`."""
    lines: Sequence[dict[str, Any] | bytes]
    extra: tuple[str, ...] = ()
    """The arguments after `--root` of every start here (a config file's path: it is in the key)."""

    def run(self, lines: Sequence[dict[str, Any] | bytes] | None = None, **options: Any) -> Run:
        options.setdefault("extra", self.extra)
        return run(self.folder, self.root, self.lines if lines is None else lines, **options)

    def environment(self, cache: Path) -> dict[str, str]:
        """What a start here adds to the environment, with its cache folder `cache`."""
        return environment(self.folder, cache)

    def copy_to(self, cache: Path) -> Path:
        """The snapshot copied into `cache` (an XDG_CACHE_HOME), as the start would have written it there."""
        folder = cache / "mcp-codetools" / "start"
        folder.mkdir(parents=True, mode=0o700)
        copy = folder / self.snapshot.name
        shutil.copyfile(self.snapshot, copy)
        os.chmod(copy, 0o600)
        return copy


def record_once(
    folder: Path,
    lines: Sequence[dict[str, Any] | bytes],
    extra: tuple[str, ...] = (),
    files: dict[str, str] | None = None,
) -> Recorded:
    """A cold start in a new workspace under `folder`, which records its snapshot (see `Recorded`); `files`: the
    workspace's files, written before (the cold start is the SDK's: its answers to calls in `lines` are too).

    Its input stays open until the snapshot is written: at the end of its input a start waits for its
    recording only `start_snapshot.FINISH_TIMEOUT_S` (5 s), which a loaded machine can outlast, and every test
    of the module would then fail for one slow recording. The output goes to files, which never fill.
    """
    root = folder / "root"
    root.mkdir()
    for name, content in (files or {}).items():
        (root / name).write_text(content, encoding="utf-8")
    out, err = folder / "cold.out", folder / "cold.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(
            [*server_command(), "--root", str(root), *extra],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=stderr,
            cwd=str(folder),
            env={**os.environ, **environment(folder)},
        )
        try:
            assert proc.stdin is not None
            proc.stdin.write(
                b"".join(line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n" for line in lines)
            )
            proc.stdin.flush()
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while not snapshots(folder) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)  # bounded: the file another process writes, which no event announces
            proc.stdin.close()
            proc.wait(RUN_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    cold = Run(subprocess.CompletedProcess(proc.args, proc.returncode, out.read_bytes(), err.read_bytes()))
    assert cold.from_snapshot == 0, cold.stderr
    (snapshot,) = snapshots(folder)
    return Recorded(folder, root, snapshot, cold, lines, extra)
