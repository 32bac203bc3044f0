"""How LSP answers read: counts agree with their nouns."""

from __future__ import annotations

from pathlib import Path

from mcp_codetools.lsp.render import Renderer


def test_one_location_is_counted_in_the_singular(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\n", encoding="utf-8")
    renderer = Renderer(lambda path: path.read_text(encoding="utf-8").splitlines(), lambda path: path.name, False)
    one = {"uri": source.as_uri(), "range": {"start": {"line": 0, "character": 0}}}
    assert renderer.locations([one], "definitions").splitlines()[0] == "1 definition in 1 file:"
    two = [one, {**one, "range": {"start": {"line": 0, "character": 4}}}]
    assert renderer.locations(two, "references").splitlines()[0] == "2 references in 1 file:"
