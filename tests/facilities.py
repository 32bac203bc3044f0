"""Facilities that some tests need: where one is missing, those tests skip with the reason, unless it is required.

A machine that must have a facility names it in MCP_CODETOOLS_CI_REQUIRE (comma-separated; .ci/run and the
CI workflow set it), and then a test that finds it missing fails, saying what is missing and why, instead of
skipping: a backend whose probe fails, or a daemon that did not start, cannot pass CI as a row of skips.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NoReturn

import pytest

REQUIRE_ENV = "MCP_CODETOOLS_CI_REQUIRE"
FACILITIES = {
    "bwrap": "bubblewrap, the Linux sandbox backend (user namespaces)",
    "landlock": "Landlock, the Linux sandbox backend without namespaces",
    "seatbelt": "Seatbelt (sandbox-exec), the macOS sandbox backend",
    "docker": "Docker's daemon and a local mcp-codetools-ci image (.ci/container-lane)",
    "podman": "Podman and a local mcp-codetools-ci image",
    "haproxy": "HAProxy, for the scale benchmark's smoke test (Debian: haproxy)",
    "jedi": "jedi-language-server, the built-in Python language server",
    "node-tools": "Node 22.19+ with the pinned Inspector, conformance suite and mcpb (.ci/node-tools)",
}
"""Every facility a test may ask for, and what it is."""


def required(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The facilities this machine must have; ValueError names an unknown one (a typo would require nothing)."""
    names = frozenset(name.strip() for name in environ.get(REQUIRE_ENV, "").split(",") if name.strip())
    unknown = sorted(names - FACILITIES.keys())
    if unknown:
        raise ValueError(f"{REQUIRE_ENV} names unknown facilities {unknown}; known: {', '.join(FACILITIES)}")
    return names


def missing(facility: str, reason: str) -> NoReturn:
    """The test cannot run because `facility` is missing: it skips with the reason, or fails where it is required."""
    assert facility in FACILITIES, facility
    if facility in required():
        pytest.fail(f"{facility} is required here ({REQUIRE_ENV}) but missing: {reason}", pytrace=False)
    pytest.skip(f"{facility} is missing: {reason}")
