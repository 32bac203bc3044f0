"""`benchmarks --against REF` runs the package exported at REF, not the work tree's beside it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchmarks import servers


def test_the_server_at_another_commit_imports_its_own_package(tmp_path: Path) -> None:
    package = tmp_path / "exported" / "mcp_codetools"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "__main__.py").write_text("print('exported', __file__)\n", encoding="utf-8")
    spec = servers.against(package.parent, "abc1234", [tmp_path])
    # Started as the benchmarks start it, from the work tree's root, where `python -m` would find the other one.
    env = {"PATH": os.environ.get("PATH", ""), **spec.env}
    done = subprocess.run(
        [spec.command, *spec.args],
        cwd=spec.cwd or Path(__file__).resolve().parent.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == f"exported {package / '__main__.py'}", done.stderr[-500:]
