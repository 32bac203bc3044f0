"""The empty-/proc lane (.ci/no-proc) runs the portable code path: this checks that it really does.

Outside the lane (MCP_CODETOOLS_TEST_NO_PROC unset) there is nothing to check, and the test says so.
"""

from __future__ import annotations

import os

import pytest

from mcp_codetools import doctor
from mcp_codetools.files import fdpaths, opening, realpaths
from mcp_codetools.search import sandbox
from mcp_codetools.shell import procs

IN_LANE = os.environ.get("MCP_CODETOOLS_TEST_NO_PROC") == "1"
WORKS_WITHOUT_PROC = True  # tests/platform_marks.py: these check /proc's absence, they must run without it


@pytest.mark.skipif(not IN_LANE, reason="only in the empty-/proc lane (.ci/no-proc)")
def test_the_lane_takes_every_portable_path() -> None:
    assert not os.path.exists("/proc/self"), "/proc is mounted: the lane would test the Linux path"
    assert not fdpaths.usable(), "rg would start through /proc/self/fd"
    assert realpaths.pin("/") is None, "Read would resolve and open through /proc/self/fd"
    assert procs.table() == "none" and procs.fork_count() is None
    assert opening.method() == "walk", "the confined opens would use a one-call open, not the walk"
    assert not sandbox.available(), "rg would run under Landlock"


@pytest.mark.skipif(not IN_LANE, reason="only in the empty-/proc lane (.ci/no-proc)")
def test_doctor_reports_the_portable_paths_in_the_lane() -> None:
    facts = dict(doctor.facilities())
    assert facts["confined opens"].startswith("walk")
    assert facts["rg start"].startswith("fchdir")
    assert facts["process table"].startswith("none readable: orphans of commands are adopted")
    assert facts["rg sandbox"] == "none"
