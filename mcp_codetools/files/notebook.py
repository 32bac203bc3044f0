"""Jupyter notebooks as the model reads them.

Cells in order with id, type, execution count and source, then their outputs, each kind shown the way
that is useful and bounded.

Text outputs are cut to a bound with a note; images become image content (a bounded number per
result); errors show their traceback without terminal colours; HTML and widgets are summarised. The
cells are paged like lines: `offset`/`limit` count cells, and a result that would outgrow the budget
stops at a cell boundary and says where to go on.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gc
import io
import json
import json.scanner
import re
import shlex
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat

from mcp_codetools.errors import BinaryFileError, ToolError
from mcp_codetools.files.images import image_tokens, load_image
from mcp_codetools.files.kinds import (
    NOTEBOOK_MAX_BYTES,
    NOTEBOOK_MAX_CELLS,
    ImageBounds,
    NotebookLimits,
    image_kind,
    notebook_too_large,
)
from mcp_codetools.files.richview import RichView

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_TAGS = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_WIDGET = "application/vnd.jupyter.widget-view+json"


class _YieldingDecoder(json.JSONDecoder):
    """JSON whose structure is parsed in Python (strings still in C).

    The C parser holds the GIL for the whole document (150 ms for 20 MB), which stalls the event loop even
    from a worker thread; this one lets the loop run between tokens, at about 3 times the cost.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scan_once = json.scanner.py_make_scanner(self)  # type: ignore[attr-defined]


class _CollectorPause:
    """Pauses the cyclic garbage collector while any thread builds a notebook's objects.

    A full pass of the collector walks every tracked object while holding the GIL: over the million
    objects of a 20 MB notebook one pass takes 70-230 ms, and the event loop (every other session) waits
    that long. A notebook's objects are trees (JSON), freed by reference counting, so no pass is needed for
    them; it resumes once the last thread is done, when their objects are gone.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._resume = False

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Paused for the duration of the block (and any other thread's block overlapping it)."""
        with self._lock:
            if self._holders == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0 and self._resume:
                    gc.enable()


collector_paused = _CollectorPause().held
"""Wrap the whole of a notebook call (its objects freed inside): `with collector_paused(): ...`."""


def parse_notebook(
    data: bytes,
    path: Path,
    *,
    yielding: bool = True,
    max_bytes: int | None = None,
    max_cells: int | None = None,
) -> Any:
    """The notebook in nbformat 4 (older versions are converted). Blocking and heavy: run it off the event loop.

    `yielding` parses the JSON structure in Python, which lets other threads run between tokens; a worker
    process has no one to let run and uses the C parser. The bounds default to the module's.

    Raises:
        BinaryFileError: it is not valid JSON (nested too deeply included) or not a notebook.
        FileTooLargeError: it is over the size or cell bound.
    """
    max_bytes = NOTEBOOK_MAX_BYTES if max_bytes is None else max_bytes
    max_cells = NOTEBOOK_MAX_CELLS if max_cells is None else max_cells
    if len(data) > max_bytes:
        raise notebook_too_large(path, len(data))
    try:
        text = data.decode("utf-8-sig")
        # The cell count is checked on the plain JSON first: nbformat's objects and validation cost far more.
        raw = json.loads(text, cls=_YieldingDecoder) if yielding else json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("the file's JSON is not an object")
        cells = raw.get("cells")
        if isinstance(cells, list) and len(cells) > max_cells:
            raise notebook_too_large(path, len(data), len(cells))
        # As nbformat.reads, from the dict already parsed (its validation there only logs, so it is skipped).
        major, minor = nbformat.reader.get_version(raw)  # type: ignore[no-untyped-call]
        if major not in nbformat.versions:
            raise ValueError(f"unsupported nbformat version {major}")
        notebook = nbformat.versions[major].to_notebook_json(raw, minor=minor)
        if notebook.nbformat < 4:
            notebook = nbformat.convert(notebook, 4)  # type: ignore[no-untyped-call]
            # The conversion gives each cell a random id, a new one at every Read, so NotebookEdit could
            # never find the id Read showed; ids from the position stay the same until the file changes.
            for index, cell in enumerate(notebook.cells):
                cell["id"] = f"cell-{index}"
        return notebook
    except RecursionError:
        raise BinaryFileError(
            f"Cannot read {path} as a Jupyter notebook: it is not valid JSON: nested too deeply (arrays or objects "
            "inside each other beyond what the parser allows). Look at its raw JSON with Bash (`head -c 2000`)."
        ) from None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BinaryFileError(
            f"Cannot read {path} as a Jupyter notebook: {str(exc)[:300]}. "
            "Look at its raw JSON with Bash (`head -c 2000`)."
        ) from None


def cell_id(cell: Any, index: int) -> str:
    """A cell's id; cells of notebooks before nbformat 4.5 have none and are named `cell-<index>`."""
    value = cell.get("id")
    return str(value) if value else f"cell-{index}"


def read_notebook(
    data: bytes,
    path: Path,
    *,
    first: int,
    max_cells: int | None,
    limits: NotebookLimits,
    bounds: ImageBounds,
    budget: int,
) -> RichView:
    """Cells `first`.. (1-based) of a notebook, as many as `max_cells` and the budget allow."""
    with collector_paused():
        return _read_notebook(data, path, first=first, max_cells=max_cells, limits=limits, bounds=bounds, budget=budget)


def _read_notebook(
    data: bytes,
    path: Path,
    *,
    first: int,
    max_cells: int | None,
    limits: NotebookLimits,
    bounds: ImageBounds,
    budget: int,
) -> RichView:
    notebook = parse_notebook(data, path)
    cells = notebook.cells
    total = len(cells)
    language = _language(notebook)
    view = RichView(meta={"type": "notebook", "path": str(path), "totalCells": total, "language": language})
    version = f"{notebook.nbformat}.{notebook.nbformat_minor}"
    view.add(f"Notebook {path}: {total} cell{'s' if total != 1 else ''}, {language}, nbformat {version}.")
    if total == 0:
        view.add("\n(The notebook has no cells.)")
        return view
    if first > total:
        view.add(f"\n(offset {first} is past the last cell; use an offset from 1 to {total}.)")
        view.complete = False
        return view
    last_wanted = total if max_cells is None else min(total, first - 1 + max_cells)
    images = 0
    cut = False
    shown_last = first - 1
    for index in range(first - 1, last_wanted):
        cell = cells[index]
        blocks, images_used = _cell_blocks(cell, index, total, limits, bounds, limits.max_images - images)
        cost = sum(len(b) if isinstance(b, str) else 4 * image_tokens(*b.shown_size) for b in blocks)
        if view.cost_chars() + cost > budget:
            if index >= first:
                break
            # A single cell larger than a whole result: its start, and how to see all of it.
            room = max(0, budget - view.cost_chars() - 400)
            blocks, images_used, cut = [blocks[0][:room]], 0, True
            blocks.append(
                f"\n[Cell {index + 1} is cut here: with its outputs it does not fit in one result. See its source "
                f'with Bash, e.g. `jq -r \'.cells[{index}].source | if type == "array" then join("") else . end\' '
                f"{shlex.quote(str(path))}`.]"
            )
        for block in blocks:
            view.add(block)
        images += images_used
        shown_last = index + 1
    if shown_last < total:
        reason = "the result budget was reached" if shown_last < last_wanted else "as asked"
        view.add(
            f"\n\n[Showing cells {first}-{shown_last} of {total} ({reason}). "
            f"Call Read with offset={shown_last + 1} for the next cells.]"
        )
    view.complete = first == 1 and shown_last == total and not cut
    view.meta.update({"firstCell": first, "lastCell": shown_last})
    return view


def _language(notebook: Any) -> str:
    meta = notebook.get("metadata", {})
    return str(meta.get("kernelspec", {}).get("language") or meta.get("language_info", {}).get("name") or "python")


def _cell_blocks(
    cell: Any, index: int, total: int, limits: NotebookLimits, bounds: ImageBounds, images_left: int
) -> tuple[list[Any], int]:
    kind = cell.get("cell_type", "code")
    head = f"\n\n### Cell {index + 1} of {total} · id={cell_id(cell, index)} · {kind}"
    if kind == "code":
        count = cell.get("execution_count")
        head += f" · execution_count={count if count is not None else 'none'}"
    source = cell.get("source", "")
    blocks: list[Any] = [head + "\n" + (source if source else "(empty)")]
    used = 0
    for n, output in enumerate(cell.get("outputs", []) if kind == "code" else [], start=1):
        text, image_data = _output(output, limits)
        blocks.append(f"\n--- output {n}: {text}")
        if image_data is None:
            continue
        mime, raw = image_data
        if used >= images_left:
            blocks.append(f"\n({mime} image not shown: a result carries at most {limits.max_images} images.)")
            continue
        kind_of = image_kind(raw[:16])
        try:
            if kind_of is None:
                raise BinaryFileError("not an image")
            image = load_image(io.BytesIO(raw), len(raw), kind_of, bounds, f"output {n} of cell {index + 1}")
        except ToolError:
            blocks.append(f"\n({mime} output could not be decoded as an image.)")
            continue
        blocks.append(f"\n({image.describe()})\n")
        blocks.append(image)
        used += 1
    return blocks, used


def _output(output: Any, limits: NotebookLimits) -> tuple[str, tuple[str, bytes] | None]:
    """One output as text, plus the image it carries (mime, bytes) if any."""
    kind = output.get("output_type")
    if kind == "stream":
        return f"{output.get('name', 'stream')}\n" + _cut(_ANSI.sub("", output.get("text", "")), limits), None
    if kind == "error":
        trace = "\n".join(_ANSI.sub("", line) for line in output.get("traceback", []))
        body = trace or f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
        return f"error {output.get('ename', '')}\n" + _cut(body, limits, keep_end=True), None
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {})
        label = "result" if kind == "execute_result" else "display"
        parts: list[str] = []
        image: tuple[str, bytes] | None = None
        for mime in _IMAGE_TYPES:
            if mime in data:
                try:
                    image = (mime, base64.b64decode(_joined(data[mime]), validate=False))
                except (binascii.Error, ValueError):
                    parts.append(f"({mime} data that is not valid base64)")
                break
        if "text/plain" in data and image is None:
            parts.append(_cut(_ANSI.sub("", _joined(data["text/plain"])), limits))
        if _WIDGET in data:
            model = data[_WIDGET].get("model_id", "?") if isinstance(data[_WIDGET], dict) else "?"
            parts.append(f"(an interactive Jupyter widget, model {model}; its live state is not saved in the file)")
        if "text/html" in data:
            html = _joined(data["text/html"])
            words = _SPACE.sub(" ", _TAGS.sub(" ", html)).strip()
            what = "a table" if "<table" in html else "HTML"
            text = f"({what} output, {len(html):,} characters of HTML"
            parts.append(text + (f'; its text begins: "{words[:300]}")' if words and "text/plain" not in data else ")"))
        others = sorted(set(data) - {"text/plain", "text/html", _WIDGET, *_IMAGE_TYPES})
        if others:
            parts.append("(also as " + ", ".join(others) + ", not shown)")
        return label + "\n" + "\n".join(parts), image
    return f"{kind} (not shown)", None


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _cut(text: str, limits: NotebookLimits, *, keep_end: bool = False) -> str:
    bound = limits.output_chars
    if len(text) <= bound:
        return text
    hidden = len(text) - bound
    if keep_end:
        # A traceback's end names the error; keep a little of its start for the call site.
        head = bound // 4
        return f"{text[:head]}\n[… {hidden:,} characters cut …]\n{text[len(text) - (bound - head) :]}"
    return f"{text[:bound]}\n[output cut: {hidden:,} of {len(text):,} characters not shown]"
