"""Language server answers as text for the model: `path:line:col` with the line, grouped by file, capped.

A location outside the workspace (the standard library, site-packages) is given by its path alone: its
content is not the workspace's to show. Lines are read through the caller's confined reader. A location in
a file the caller hides (a Read deny rule covers it) is left out before counting, without a word, as Grep
and Glob leave such files out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_codetools.files.text import clip_line
from mcp_codetools.lsp.workspace import uri_path

MAX_LOCATIONS = 100
MAX_SYMBOLS = 300
MAX_HOVER_CHARS = 4000

SYMBOL_KINDS = (
    "File Module Namespace Package Class Method Property Field Constructor Enum Interface Function Variable "
    "Constant String Number Boolean Array Object Key Null EnumMember Struct Event Operator TypeParameter"
).split()

LineReader = Callable[[Path], "list[str] | None"]
"""The lines of a file inside the roots (None outside them, or when it cannot be read)."""
Hidden = Callable[[Path], bool]
"""Whether a file (absolute, symlinks resolved) may not be shown at all."""


@dataclass(frozen=True, slots=True)
class Window:
    """Which part of a long answer to show: `limit` results from `offset` (0-based), in the answer's order."""

    offset: int = 0
    limit: int = MAX_LOCATIONS

    def cut(self, items: list[Any]) -> list[Any]:
        """The results to show."""
        return items[self.offset : self.offset + self.limit]

    def note(self, total: int, shown: int) -> str:
        """What the window left out and how to page on ("" when nothing was)."""
        end = self.offset + shown
        if self.offset == 0 and end >= total:
            return ""
        if shown == 0:
            return f" (none from offset {self.offset}: there are {total})"
        more = total - end
        return (
            f" ({self.offset + 1}-{end} shown; {more} more with offset={end})"
            if more
            else f" ({self.offset + 1}-{end} shown)"
        )


def kind_name(kind: Any) -> str:
    """A SymbolKind number as its name."""
    return SYMBOL_KINDS[kind - 1] if isinstance(kind, int) and 0 < kind <= len(SYMBOL_KINDS) else "Symbol"


class Renderer:
    """Turns positions into `path:line:col` text; converts columns from the server's units (UTF-16 or code points)."""

    def __init__(
        self, lines_of: LineReader, shown: Callable[[Path], str], utf16: bool, hidden: Hidden | None = None
    ) -> None:
        self._lines_of = lines_of
        self._shown = shown
        self._utf16 = utf16
        self._hidden = hidden
        self._cache: dict[Path, list[str] | None] = {}
        self._visible: dict[str, bool] = {}

    @property
    def hides_files(self) -> bool:
        """Whether some files may not be shown (else every location is)."""
        return self._hidden is not None

    def visible(self, uri: Any) -> bool:
        """Whether a location in the document at `uri` may be shown (not a file the caller hides)."""
        if self._hidden is None:
            return True
        key = str(uri or "")
        if key not in self._visible:
            path = uri_path(key)
            self._visible[key] = path is None or not self._hidden(Path(os.path.realpath(path)))
        return self._visible[key]

    def lines(self, path: Path) -> list[str] | None:
        """The file's lines, read once per answer."""
        if path not in self._cache:
            self._cache[path] = self._lines_of(path)
        return self._cache[path]

    def column(self, line: str | None, units: int) -> int:
        """A server column (0-based, in its units) as a 1-based column in characters."""
        if not self._utf16 or line is None:
            return units + 1
        count = 0
        for index, char in enumerate(line):
            if count >= units:
                return index + 1
            count += 2 if ord(char) > 0xFFFF else 1
        return len(line) + 1

    def place(self, uri: str, position: dict[str, Any]) -> tuple[Path | None, str, str | None]:
        """(path, `path:line:col`, the line's text or None outside the roots) of a position in a document."""
        path = uri_path(uri)
        line_no = int(position.get("line", 0))
        if path is None:
            return None, f"{uri}:{line_no + 1}", None
        lines = self.lines(path)
        text = lines[line_no] if lines is not None and 0 <= line_no < len(lines) else None
        col = self.column(text, int(position.get("character", 0)))
        return path, f"{self._shown(path)}:{line_no + 1}:{col}", text

    def locations(self, found: Any, noun: str, window: Window = Window()) -> str:
        """Definitions, references or implementations, grouped by file in the order the server gave files."""
        items = [found] if isinstance(found, dict) else list(found or [])
        spots = []
        for item in items:
            uri = item.get("targetUri") or item.get("uri")
            where = item.get("targetSelectionRange") or item.get("targetRange") or item.get("range") or {}
            if uri and self.visible(uri):
                spots.append((uri, where.get("start") or {}))
        if not spots:
            return f"No {noun} found."
        order: dict[str, list[dict[str, Any]]] = {}
        for uri, start in spots:
            order.setdefault(uri, []).append(start)
        ordered = [
            (uri, start)
            for uri, starts in order.items()
            for start in sorted(starts, key=lambda s: (s.get("line", 0), s.get("character", 0)))
        ]
        page = window.cut(ordered)
        lines: list[str] = []
        for index, (uri, start) in enumerate(page):
            if index and page[index - 1][0] != uri:
                lines.append("")
            path, place, text = self.place(uri, start)
            lines.append(
                f"{place}: {clip_line(text.strip())}" if text is not None else f"{place} (outside the workspace)"
            )
        files = f"{len(order)} file{'s' if len(order) != 1 else ''}"
        counted = noun if len(spots) != 1 else noun.removesuffix("s")  # "1 definition", not "1 definitions"
        head = f"{len(spots)} {counted} in {files}{window.note(len(spots), len(page))}:"
        return "\n".join([head, *lines])

    def hover(self, result: Any) -> str:
        """Hover contents as plain text, capped."""
        contents = (result or {}).get("contents") if isinstance(result, dict) else None
        parts: list[str] = []
        for piece in contents if isinstance(contents, list) else [contents]:
            if isinstance(piece, str):
                parts.append(piece)
            elif isinstance(piece, dict) and piece.get("value"):
                parts.append(str(piece["value"]))
        text = "\n\n".join(p.strip() for p in parts if p and p.strip())
        if not text:
            return "No hover information at this position."
        if len(text) > MAX_HOVER_CHARS:
            text = text[:MAX_HOVER_CHARS] + f"\n[… {len(text) - MAX_HOVER_CHARS} more characters cut]"
        return text

    def document_symbols(self, result: Any, path: Path) -> str:
        """The file's outline: `line:col Kind name`, nested by indentation."""
        rows: list[str] = []

        def walk(symbols: list[dict[str, Any]], depth: int) -> None:
            for symbol in symbols:
                if len(rows) >= MAX_SYMBOLS:
                    return
                if "location" in symbol and not self.visible((symbol.get("location") or {}).get("uri")):
                    continue
                where = (symbol.get("selectionRange") or symbol.get("range") or {}).get("start")
                if where is None:
                    where = ((symbol.get("location") or {}).get("range") or {}).get("start") or {}
                lines = self.lines(path)
                line_no = int(where.get("line", 0))
                text = lines[line_no] if lines is not None and 0 <= line_no < len(lines) else None
                col = self.column(text, int(where.get("character", 0)))
                rows.append(f"{'  ' * depth}{line_no + 1}:{col} {kind_name(symbol.get('kind'))} {symbol.get('name')}")
                walk(list(symbol.get("children") or []), depth + 1)

        walk(list(result or []), 0)
        if not rows:
            return f"No symbols found in {self._shown(path)}."
        more = (
            " (cut: the outline is long; Read the file or ask for a narrower workspaceSymbol)"
            if len(rows) >= MAX_SYMBOLS
            else ""
        )
        return f"Symbols in {self._shown(path)}{more}:\n" + "\n".join(rows)

    def workspace_symbols(self, result: Any, query: str, window: Window = Window()) -> str:
        """Symbols matching a query: `path:line:col Kind name (in container)`."""
        items = [s for s in result or [] if self.visible((s.get("location") or {}).get("uri"))]
        if not items:
            return f"No symbols match {query!r}."
        rows = []
        for symbol in window.cut(items):
            location = symbol.get("location") or {}
            start = (location.get("range") or {}).get("start") or {}
            _, place, _ = self.place(str(location.get("uri", "")), start)
            container = f" (in {symbol['containerName']})" if symbol.get("containerName") else ""
            rows.append(f"{place} {kind_name(symbol.get('kind'))} {symbol.get('name')}{container}")
        matching = "symbols match" if len(items) != 1 else "symbol matches"
        head = f"{len(items)} {matching} {query!r}{window.note(len(items), len(rows))}:"
        return "\n".join([head, *rows])

    def call_items(self, items: Any) -> str:
        """Call hierarchy items: `Kind name at path:line:col`."""
        rows = []
        for item in [i for i in items or [] if self.visible(i.get("uri"))][:MAX_LOCATIONS]:
            start = (item.get("selectionRange") or item.get("range") or {}).get("start") or {}
            _, place, _ = self.place(str(item.get("uri", "")), start)
            rows.append(f"{kind_name(item.get('kind'))} {item.get('name')} at {place}")
        return "\n".join(rows) if rows else "No call hierarchy item at this position."

    def calls(self, result: Any, direction: str) -> str:
        """Incoming (`from`) or outgoing (`to`) calls, each with where the calls are made."""
        key = "from" if direction == "incoming" else "to"
        result = [e for e in result or [] if self.visible((e.get(key) or {}).get("uri"))]
        rows = []
        for entry in result[:MAX_LOCATIONS]:
            item = entry.get(key) or {}
            start = (item.get("selectionRange") or item.get("range") or {}).get("start") or {}
            _, place, _ = self.place(str(item.get("uri", "")), start)
            at = sorted({int((r.get("start") or {}).get("line", 0)) + 1 for r in entry.get("fromRanges") or []})
            lines = f" (calls at line{'s' if len(at) != 1 else ''} {', '.join(map(str, at))})" if at else ""
            rows.append(f"{kind_name(item.get('kind'))} {item.get('name')} at {place}{lines}")
        if not rows:
            return f"No {direction} calls found."
        return f"{len(result)} {direction} call{'s' if len(result) != 1 else ''}:\n" + "\n".join(rows)

    def diagnostics(self, items: list[dict[str, Any]], path: Path, limit: int = 10) -> list[str]:
        """Diagnostics as `path:line:col: severity: message` lines, at most `limit`."""
        names = {1: "error", 2: "warning", 3: "info", 4: "hint"}
        rows = []
        lines = self.lines(path)
        for item in sorted(items, key=_diagnostic_key)[:limit]:
            start = (item.get("range") or {}).get("start") or {}
            line_no = int(start.get("line", 0))
            text = lines[line_no] if lines is not None and 0 <= line_no < len(lines) else None
            col = self.column(text, int(start.get("character", 0)))
            message = " ".join(str(item.get("message", "")).split())
            rows.append(
                f"{self._shown(path)}:{line_no + 1}:{col}: {names.get(item.get('severity') or 1, 'error')}: {message}"
            )
        return rows


def _diagnostic_key(item: dict[str, Any]) -> tuple[int, int, int]:
    start = (item.get("range") or {}).get("start") or {}
    return (int(item.get("severity") or 1), int(start.get("line", 0)), int(start.get("character", 0)))


def diagnostic_identity(item: dict[str, Any]) -> tuple[str, str, str]:
    """What makes two diagnostics the same, whichever line they moved to: message, code and source."""
    return (" ".join(str(item.get("message", "")).split()), str(item.get("code", "")), str(item.get("source", "")))
