"""A missing facility skips its tests with the reason, and fails them where MCP_CODETOOLS_CI_REQUIRE names it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cpu_profile, facilities

REPO = Path(__file__).resolve().parents[1]


def test_a_missing_facility_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(facilities.REQUIRE_ENV, "landlock")
    with pytest.raises(pytest.skip.Exception, match="bwrap is missing: no user namespaces"):
        facilities.missing("bwrap", "no user namespaces")


def test_a_required_facility_that_is_missing_fails_the_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(facilities.REQUIRE_ENV, " landlock, bwrap ")
    with pytest.raises(pytest.fail.Exception, match=r"bwrap is required here \(MCP_CODETOOLS_CI_REQUIRE\).*namespaces"):
        facilities.missing("bwrap", "no user namespaces")


def test_an_unknown_facility_name_is_refused_not_ignored() -> None:
    with pytest.raises(ValueError, match=r"unknown facilities \['bwarp'\]"):
        facilities.required({facilities.REQUIRE_ENV: "bwarp,docker"})
    assert facilities.required({facilities.REQUIRE_ENV: ""}) == frozenset()
    assert facilities.required({}) == frozenset()


def test_ci_requires_only_known_facilities() -> None:
    """Always the ones the project brings; each outside one once .ci/run has it."""
    text = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if line.startswith("REQUIRE="))
    names = line.split("-", 1)[1].rstrip("}").split(",")
    names += re.findall(r"then require ([\w-]+)", text)
    assert facilities.required({facilities.REQUIRE_ENV: ",".join(names)}) == {
        "bwrap", "landlock", "docker", "haproxy", "jedi", "node-tools"
    }  # fmt: skip


def test_a_run_requiring_haproxy_fails_where_it_is_missing(tmp_path: Path) -> None:
    """The HAProxy smoke test, with haproxy off the PATH, in a pytest run that requires it: an error, not a skip."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # Nor is it this run's CPU record: its test is counted once, in this one.
    env = {**{k: v for k, v in os.environ.items() if k != cpu_profile.ENV}, "PATH": str(bin_dir)}
    env[facilities.REQUIRE_ENV] = "haproxy"
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--override-ini=addopts="]
    argv += ["-p", "anyio", "-p", "no:hypothesispytest"]  # not used there: ~0.5 CPU-s a run
    argv += ["tests/test_scale_smoke.py::test_the_template_is_valid_and_outlasts_the_longest_call"]
    failed = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1 and "1 error" in failed.stdout, failed.stdout + failed.stderr  # in its fixture
    assert "haproxy is required here" in failed.stdout


def test_without_the_requirement_a_missing_haproxy_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same check where no run requires haproxy (the other half of the run above, in this process: a second
    pytest run cost ~2-4 CPU-s; how a skip in a fixture ends a run is pytest's own)."""
    from tests.test_scale_smoke import need_haproxy

    monkeypatch.delenv(facilities.REQUIRE_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match="haproxy is missing: it is not installed"):
        need_haproxy()
