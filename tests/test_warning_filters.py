"""The suite's warning filters: a resource left open fails the run instead of passing unnoticed."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_a_resource_warning_is_an_error_in_every_test() -> None:
    with pytest.raises(ResourceWarning):
        warnings.warn("unclosed socket", ResourceWarning, stacklevel=1)


def test_the_configuration_ignores_no_resource_warning() -> None:
    """Checked in the file too: an `ignore` added there would pass the test above when run with `-W error`."""
    filters = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]["filterwarnings"]
    assert "error::ResourceWarning" in filters
    assert not [f for f in filters if "ResourceWarning" in f and not f.startswith("error")], filters
