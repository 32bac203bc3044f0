"""PDF pages as the model reads them.

The text of each page in reading order under a page marker, and a page without a text layer (a scan)
rendered as an image.

PDFium (through pypdfium2) opens the file by its descriptor and parses only the cross-reference table
and the pages asked for, so page 190 of a 200-page file costs about what page 1 does; nothing builds
Python objects for the whole document. PDFium is not thread-safe, so all its work holds one lock.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from mcp_codetools.errors import BinaryFileError, InvalidInputError
from mcp_codetools.files.images import ShownImage, fit_image, image_tokens
from mcp_codetools.files.kinds import ImageBounds, PdfLimits
from mcp_codetools.files.richview import RichView

_LOCK = threading.Lock()
_PAGE_SPEC = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
_OUTLINE_MAX = 60
_RENDER_MAX_DPI = 200


def parse_pages(spec: str, max_pages: int) -> list[int]:
    """Page numbers (1-based, ascending, no repeats) from "3", "1-5" or "2,4-6".

    Raises:
        InvalidInputError: the text is not a page list, a range runs backwards, or it names too many pages.
    """
    pages: set[int] = set()
    for part in spec.split(","):
        found = _PAGE_SPEC.match(part)
        if found is None:
            raise InvalidInputError(
                f'pages "{spec}" is not a page list. Use a page ("3"), a range ("1-5") or both ("2,4-6").'
            )
        first = int(found.group(1))
        last = int(found.group(2) or first)
        if first < 1 or last < first:
            raise InvalidInputError(f'pages "{spec}": pages count from 1 and a range goes from low to high.')
        if last - first + 1 > max_pages or len(pages) > max_pages:
            break
        pages.update(range(first, last + 1))
    if len(pages) > max_pages or not pages:
        raise InvalidInputError(
            f'pages "{spec}" asks for more than {max_pages} pages; one Read returns at most {max_pages}. '
            "Ask for a smaller range and read the rest in further calls."
        )
    return sorted(pages)


_OPEN_ERRORS = {
    pdfium_c.FPDF_ERR_PASSWORD: "it is encrypted with a password. Read cannot open it; ask the user for a "
    "decrypted copy (e.g. `qpdf --decrypt --password=... in.pdf out.pdf`)",
    pdfium_c.FPDF_ERR_SECURITY: "its security handler is not supported, so it cannot be decrypted",
    pdfium_c.FPDF_ERR_FORMAT: "it is damaged or not a PDF (its structure cannot be parsed)",
    pdfium_c.FPDF_ERR_FILE: "the file cannot be opened",
}


@contextmanager
def open_pdf(fd: int, path: Path) -> Iterator[pdfium.PdfDocument]:
    """The document behind an open descriptor (so the file checked is the file parsed), closed afterwards.

    Raises:
        BinaryFileError: encrypted, damaged, or not a PDF; the message says which.
    """
    proc = f"/proc/self/fd/{fd}"
    source = proc if os.path.exists(proc) else str(path)
    raw = pdfium_c.FPDF_LoadDocument((source + "\x00").encode("utf-8", "surrogateescape"), None)
    if not raw or pdfium_c.FPDF_GetPageCount(raw) < 1:
        code = pdfium_c.FPDF_GetLastError()
        if raw:
            pdfium_c.FPDF_CloseDocument(raw)
            reason = "it has no pages"
        else:
            reason = _OPEN_ERRORS.get(code, f"PDFium could not load it (error {code})")
        raise BinaryFileError(f"Cannot read the PDF {path}: {reason}.")
    document = pdfium.PdfDocument(raw)
    try:
        yield document
    finally:
        document.close()


def read_pdf(
    fd: int, path: Path, pages: str | None, *, limits: PdfLimits, bounds: ImageBounds, budget: int
) -> RichView:
    """The pages asked for (all of a short PDF), or an overview of a long one read without `pages`."""
    with _LOCK, open_pdf(fd, path) as document:
        count = len(document)
        if pages is None and count > limits.pages_without_range:
            return _overview(document, path, count, limits)
        wanted = parse_pages(pages, limits.max_pages) if pages is not None else list(range(1, count + 1))
        beyond = [n for n in wanted if n > count]
        if beyond:
            raise InvalidInputError(
                f"{path} has {count} page{'s' if count != 1 else ''}; page {beyond[0]} does not exist. "
                f"Ask for pages between 1 and {count}."
            )
        return _pages(document, path, count, wanted, limits, bounds, budget)


def _pages(
    document: pdfium.PdfDocument,
    path: Path,
    count: int,
    wanted: list[int],
    limits: PdfLimits,
    bounds: ImageBounds,
    budget: int,
) -> RichView:
    view = RichView(meta={"type": "pdf", "path": str(path), "pageCount": count})
    view.add(f"PDF {path}: {count} page{'s' if count != 1 else ''}; showing {_ranges(wanted)}.")
    used = view.cost_chars()
    images = 0
    shown: list[int] = []
    rendered: list[int] = []
    for number in wanted:
        marker = f"\n\n--- Page {number} of {count} ---\n"
        page = document[number - 1]
        try:
            text = _page_text(page)
            if not text.strip() and pdfium_c.FPDFPage_CountObjects(page) > 0:
                cost = 4 * image_tokens(*_render_size(page, bounds)) + len(marker) + 200
                if images >= limits.max_images or used + cost > budget:
                    break
                image = _render(page, bounds)
                width, height = image.shown_size
                note = f"(page {number} has no text layer; shown as an image, {width}×{height} px, {image.encoding()})"
                view.add(marker + note)
                view.add(image)
                images += 1
                used += len(marker) + len(note) + 4 * image.tokens
                rendered.append(number)
                shown.append(number)
                continue
        finally:
            page.close()
        body = text if text.strip() else "(this page is blank)"
        if used + len(marker) + len(body) > budget:
            room = budget - used - len(marker) - 200
            if room > 500 and not shown:
                view.add(marker + body[:room] + f"\n[Page {number} cut after {room} characters.]")
                shown.append(number)
            break
        view.add(marker + body)
        used += len(marker) + len(body)
        shown.append(number)
    rest = [n for n in wanted if n not in shown]
    if rest:
        view.add(
            f"\n\n[Not shown: pages {_ranges(rest)}; the result budget was reached. "
            f'Call Read with pages="{_ranges(rest[: limits.max_pages]).replace(" ", "")}" for them.]',
        )
    view.complete = not rest and len(wanted) == count
    view.meta.update({"pages": shown, "renderedPages": rendered})
    return view


def _page_text(page: pdfium.PdfPage) -> str:
    textpage = page.get_textpage()
    try:
        text = textpage.get_text_range()
    finally:
        textpage.close()
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")).strip("\n")


def _render_scale(page: pdfium.PdfPage, bounds: ImageBounds) -> float:
    width, height = page.get_size()
    return float(
        min(
            _RENDER_MAX_DPI / 72,
            bounds.max_side / max(width, height, 1.0),
            (bounds.max_pixels / max(width * height, 1.0)) ** 0.5,
        )
    )


def _render_size(page: pdfium.PdfPage, bounds: ImageBounds) -> tuple[int, int]:
    scale = _render_scale(page, bounds)
    width, height = page.get_size()
    return max(1, int(width * scale)), max(1, int(height * scale))


def _render(page: pdfium.PdfPage, bounds: ImageBounds) -> ShownImage:
    bitmap = page.render(scale=_render_scale(page, bounds), grayscale=False)
    try:
        image = bitmap.to_pil()
    finally:
        bitmap.close()
    return fit_image(image, bounds, source_format="jpeg")


def _overview(document: pdfium.PdfDocument, path: Path, count: int, limits: PdfLimits) -> RichView:
    metadata = {k: v for k, v in document.get_metadata_dict(skip_empty=True).items() if k in ("Title", "Author")}
    lines = [f"PDF {path}: {count} pages. That is more than {limits.pages_without_range}, so no text is shown yet."]
    for key, value in metadata.items():
        lines.append(f"{key}: {value}")
    outline = _outline(document)
    if outline:
        lines.append("Outline (page: title):")
        lines.extend(outline)
    lines.append(
        f'Call Read again with pages, e.g. pages="1-{min(limits.max_pages, count)}" (at most {limits.max_pages} '
        'pages a call; "3", "1-5" and "2,4-6" work).'
    )
    meta: dict[str, object] = {"type": "pdf", "path": str(path), "pageCount": count, "overview": True}
    meta.update({k.lower(): v for k, v in metadata.items()})
    return RichView(["\n".join(lines)], meta=meta, complete=False)


def _outline(document: pdfium.PdfDocument) -> list[str]:
    lines: list[str] = []
    for mark in document.get_toc(max_depth=4):
        if len(lines) >= _OUTLINE_MAX:
            lines.append(f"  … (outline cut after {_OUTLINE_MAX} entries)")
            break
        dest = mark.get_dest()
        index = dest.get_index() if dest is not None else None
        where = str(index + 1) if index is not None else "?"
        lines.append(f"{'  ' * (mark.level + 1)}{where}: {mark.get_title()}")
    return lines


def _ranges(numbers: list[int]) -> str:
    spans: list[str] = []
    start = prev = numbers[0] if numbers else 0
    for n in numbers[1:] + [-1]:
        if n == prev + 1:
            prev = n
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ", ".join(spans)
