"""The edit checks skip what they would say nothing about: a file surely over their size limit is not decoded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.files import syntax
from mcp_codetools.tools import edit_checks
from tests.conftest import Caller

pytestmark = pytest.mark.anyio


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of each new text the syntax check was given."""
    lengths: list[int] = []
    real = edit_checks.syntax_check

    def spy(settings: Any, path: Path, old: str | None, new: str, *args: Any) -> Any:
        lengths.append(len(new))
        return real(settings, path, old, new, *args)

    monkeypatch.setattr(edit_checks, "syntax_check", spy)
    monkeypatch.setattr(syntax, "MAX_CHECK_CHARS", 1000)  # so the files stay small
    return lengths


@pytest.mark.parametrize("tool", ["Edit", "MultiEdit", "Write"])
async def test_a_python_file_surely_over_the_limit_is_not_decoded_for_the_checks(
    call: Caller, root: Path, asked: list[int], tool: str
) -> None:
    for name, lines in (("small.py", 10), ("large.py", 600)):  # ~70 and ~6,400 bytes: under 1,000 and over 4x
        path = root / name
        path.write_text("".join(f"x{i} = {i}\n" for i in range(lines)), encoding="utf-8")
        await call.ok("Read", {"file_path": str(path)})
        change = {"old_string": "x1 = 1\n", "new_string": "x1 = 2\n"}
        args: dict[str, Any] = {
            "Edit": {"file_path": str(path), **change},
            "MultiEdit": {"file_path": str(path), "edits": [change]},
            "Write": {"file_path": str(path), "content": path.read_text(encoding="utf-8").replace("x1 = 1", "x1 = 2")},
        }[tool]
        await call.ok(tool, args)
        assert "x1 = 2\n" in path.read_text(encoding="utf-8")
    assert len(asked) == 1 and asked[0] < 1000, "checked the small file only"


def test_only_lengths_beyond_four_bytes_a_character_are_sure() -> None:
    limit = syntax.MAX_CHECK_CHARS
    assert not syntax.surely_too_large("x" * limit) and syntax.surely_too_large("x" * (limit + 1))
    assert not syntax.surely_too_large(b"x" * (4 * limit)) and syntax.surely_too_large(bytearray(4 * limit + 1))
