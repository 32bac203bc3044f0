"""`python -m scripts.bashlex_tables [--check]`: write (or check) `mcp_codetools/commands/bashlex_lr.py`.

A developer script, kept out of the wheel: it writes into the repository. It builds bashlex's LR tables as
bashlex's own import does, in this process, which must not have imported bashlex yet. Run it after
upgrading bashlex; `tests/test_bashlex_load.py` fails while the kept tables are not the built ones.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

TARGET = Path(__file__).resolve().parents[1] / "mcp_codetools" / "commands" / "bashlex_lr.py"


def built() -> tuple[str, str]:
    """The key and the tables of bashlex's parser, built by bashlex's own table builder."""
    if "bashlex" in sys.modules:
        raise RuntimeError("bashlex is already imported: its tables were built without this script")
    from mcp_codetools.commands.bashlex_load import import_with_builder, key, tables

    made: list[Any] = []

    def recording(builder: type) -> type:
        class Recorded(builder):  # type: ignore[misc, valid-type]
            def __init__(self, grammar: Any, log: Any = None) -> None:
                super().__init__(grammar, log)
                made.append(self)

        return Recorded

    import_with_builder(recording)
    (table,) = made
    return key(table.grammar), tables(table)


def render() -> str:
    """The module's text: the key and the tables' JSON as one string (mypy and ruff read it in no time)."""
    built_key, text = built()
    return (
        '"""bashlex\'s LR tables, written by `python -m scripts.bashlex_tables` (do not edit; see bashlex_load)."""\n'
        "\n"
        "# ruff: noqa: E501\n"
        f'KEY = "{built_key}"\n'
        f"TABLES = {text!r}\n"
    )


def main(argv: list[str]) -> int:
    """Write the module, or with `--check` say whether it holds what bashlex builds (exit 1 if not)."""
    text = render()
    if argv[:1] == ["--check"]:
        same = TARGET.is_file() and TARGET.read_text(encoding="utf-8") == text
        print("bashlex_lr.py is up to date" if same else "bashlex_lr.py is stale: run python -m scripts.bashlex_tables")
        return 0 if same else 1
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET} ({len(text):,} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
