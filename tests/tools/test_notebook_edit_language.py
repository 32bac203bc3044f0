"""NotebookEdit checks a code cell's syntax when the notebook's code is Python: its kernel's language, else Python."""

from __future__ import annotations

import json

import pytest

from mcp_codetools.tools.notebook_edit import _python_notebook


def notebook(metadata: dict[str, object]) -> bytes:
    return json.dumps({"cells": [], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode()


@pytest.mark.parametrize(
    ("metadata", "python"),
    [
        ({}, True),  # no language metadata: Read shows it as Python
        ({"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}, True),
        ({"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}}, False),
        ({"language_info": {"name": "julia"}}, False),
        ({"language_info": {"name": "python", "version": "3.11"}}, True),
    ],
)
def test_the_language_comes_from_the_kernel_then_python(metadata: dict[str, object], python: bool) -> None:
    assert _python_notebook(notebook(metadata)) is python
