"""The Bash sandbox, backend by backend: the ordinary workflows it lets through and the protected-name attacks it holds.

The figures docs/reliability.md reports for issue 35's matrix. Each workflow and each attack of
`tests/tools/test_bash_sandbox_workflow.py` runs in a fresh git repository, through the whole pipeline with
every question answered yes (so only the sandbox stands in the way), on each backend that works here.
Every attack must be held and no placeholder may be left in a root; a workflow a backend cannot let through
yet must be one it declares (`BLOCKED`), so the counts move only when the code does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from tests.reliability.report import Figures
from tests.tools.test_bash_sandbox import working
from tests.tools.test_bash_sandbox_kept import YesCaller, gate_for
from tests.tools.test_bash_sandbox_workflow import (
    BACKENDS,
    GONE,
    PROTECTED,
    STUBS,
    WORKFLOWS,
    blocked,
    container_backend,
    entries,
    repository,
    sandbox_settings,
)  # fmt: skip

pytestmark = pytest.mark.anyio


async def run_in_fresh_root(base: Path, backend: str, command: str) -> tuple[Path, bool, str, set[str]]:
    """Runs `command` in a new repository: the root, whether the call failed, its text, the entries before."""
    root = repository(Path(os.path.realpath(base)))
    session = CodeSession(Settings(roots=(root,), sandbox=sandbox_settings(backend)))
    try:
        before = entries(root)
        out = await YesCaller(Pipeline(default_tools(), gate_for(root)), session)("Bash", {"command": command})
    finally:
        await session.aclose()  # the container backend's container is removed with it
    return root, out.is_error, out.text, before


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_sandbox_matrix(backend: str, tmp_path: Path, figures: Figures, suite: str) -> None:
    if backend == "container":
        backend = container_backend()  # skips, or fails where CI requires Docker
    else:
        working(backend)  # skips, or fails where CI requires the backend
    let_through, refused_as_declared, surprises = 0, 0, []
    for index, (name, (command, made)) in enumerate(WORKFLOWS.items()):
        root, failed, text, _ = await run_in_fresh_root(tmp_path / f"w{index}", backend, command)
        assert not STUBS & set(os.listdir(root)), f"{name}: a placeholder was left in the root"
        if name in blocked(backend):
            refused_as_declared += failed and "[Sandbox: " in text
            if not failed:
                surprises.append(f"{name}: declared blocked but went through")
        elif (
            not failed
            and all((root / p).exists() for p in made)
            and not any((root / p).exists() for p in GONE.get(name, []))
        ):
            let_through += 1
        else:
            surprises.append(f"{name}: {text[:300]}")
    held = 0
    for index, (what, command) in enumerate(PROTECTED.items()):
        root, _, text, before = await run_in_fresh_root(tmp_path / f"a{index}", backend, command)
        appeared = {p.split("/")[0] for p in entries(root) - before}
        kept = not appeared & (STUBS | {".git-old"})
        kept = kept and not (root / ".git" / "hooks" / "pre-commit").exists()
        kept = kept and b"fsmonitor" not in (root / ".git" / "config").read_bytes()
        held += kept
        assert kept, f"{what} got through the {backend} sandbox: {text[:300]}"
    figures.count(suite, calls=len(WORKFLOWS) + len(PROTECTED), inputs=len(PROTECTED))
    figures.measure(
        f"sandbox ({backend}): ordinary workflows let through",
        f"{let_through}/{len(WORKFLOWS)}",
        note=f"{refused_as_declared} refused with the sandbox's note, as declared" if refused_as_declared else "",
    )
    figures.measure(f"sandbox ({backend}): protected-name attacks held", f"{held}/{len(PROTECTED)}")
    assert not surprises, surprises
