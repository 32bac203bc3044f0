"""The shared end of short-lived children: fed without failing on a child that stops reading, drained without
stalling it, and killed with everything it left in its group."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import psutil
import pytest

from mcp_codetools.child_pipes import drain, feed, finish

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")]


async def _open(script: str) -> anyio.abc.Process:
    return await anyio.open_process(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_feeding_a_child_that_never_reads_is_not_an_error() -> None:
    process = await _open("import sys; sys.stdin.close()")
    try:
        with anyio.fail_after(30):
            await process.wait()
            await feed(process, b"x" * 4_000_000)
    finally:
        await finish(process)
    assert process.stdin is not None


async def test_drain_keeps_a_bounded_head_but_reads_to_the_end() -> None:
    process = await _open("import sys; sys.stdout.write('a' * 3_000_000); sys.stdout.flush()")
    out = bytearray()
    try:
        with anyio.fail_after(30):
            await drain(process.stdout, out, 1000)
            await process.wait()
    finally:
        await finish(process)
    assert bytes(out) == b"a" * 1000
    assert process.returncode == 0, "the child wrote all it had: nothing was left blocking on a full pipe"


async def test_finish_kills_what_an_exited_child_left_in_its_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        "import subprocess, sys; "
        "p = subprocess.Popen(['sleep', '600'], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))"
    )
    process = await _open(script)
    with anyio.fail_after(30):
        await process.wait()
    left = int(pid_file.read_text())
    assert _running(left), "the leftover must be alive before finish() for this test to mean anything"
    await finish(process)
    with anyio.fail_after(10):
        while _running(left):  # noqa: ASYNC110 - bounded poll until the kill lands
            await anyio.sleep(0.02)
