"""The README documents the whole command line: every flag and command `mcp-codetools --help` lists."""

from __future__ import annotations

import re
import subprocess

from tests.ecosystem.support import REPO, installed_server


def help_text() -> str:
    result = subprocess.run([installed_server(), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_flag_in_help_is_in_the_readme() -> None:
    text = help_text()
    flags = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", text))
    assert {"--root", "--transport", "-h"} <= flags, "the help format changed: fix the pattern"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = sorted(flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", readme))
    assert not missing, f"flags in --help that the README does not mention: {missing}"


def test_every_command_in_help_is_in_the_readme() -> None:
    match = re.search(r"positional arguments:\s*\{([a-z,]+)\}", help_text())
    assert match, "the help no longer lists commands as {a,b}: fix the pattern"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [command for command in match[1].split(",") if f"`{command}`" not in readme]
    assert not missing
