"""What kind of file a Read faces, judged by its first bytes (and a notebook by its name).

Also the bounds each rich reader works within. Light on purpose: Pillow, PDFium and nbformat are imported
only when a file needs them, so they add nothing to the server's start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcp_codetools.errors import BinaryFileError, FileTooLargeError

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


@dataclass(frozen=True, slots=True)
class ImageBounds:
    """How large an image may be sent: longest side, pixels and bytes."""

    max_side: int = 1568
    max_pixels: int = 1_150_000
    max_bytes: int = 512 * 1024


@dataclass(frozen=True, slots=True)
class PdfLimits:
    """How many PDF pages (and rendered page images) one Read may show."""

    max_pages: int = 20
    pages_without_range: int = 10
    max_images: int = 8


@dataclass(frozen=True, slots=True)
class NotebookLimits:
    """How much of a notebook's outputs one Read shows: characters per output, images in all."""

    output_chars: int = 4000
    max_images: int = 8


NOTEBOOK_MAX_BYTES = 20 * 1024 * 1024
"""The largest notebook Read and NotebookEdit parse. nbformat's parse and validation take about 25 times the
file in memory (a 42 MB notebook of 200,000 cells peaked at 1.0 GB and took 20 s): this keeps one call's
peak near 0.5 GB at worst, and a notebook of large outputs well below."""
NOTEBOOK_MAX_CELLS = 20_000
"""The most cells parsed: the cost follows the cell count (20,000 small cells: 1.7 s and 130 MB)."""


def notebook_too_large(path: object, size: int, cells: int | None = None) -> FileTooLargeError:
    """The refusal for a notebook over the bounds, with how to look at it instead."""
    what = (
        f"{cells:,} cells; the most parsed is {NOTEBOOK_MAX_CELLS:,}"
        if cells is not None
        else (f"{size:,} bytes; the largest parsed is {NOTEBOOK_MAX_BYTES // (1024 * 1024)} MiB")
    )
    return FileTooLargeError(
        f"Notebook {path} is too large to parse here ({what}). Nothing was changed. Look at its JSON with Bash "
        "instead, e.g. `jq '.cells | length'` or `jq -r '.cells[3].source | join(\"\")'`, and change it with a "
        "script (keep it valid nbformat)."
    )


def image_kind(head: bytes) -> str | None:
    """The image format the first bytes announce (png, jpeg, gif, webp), or None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


_LOOKS_LIKE: tuple[tuple[Callable[[bytes], bool], str], ...] = (
    (lambda h: h.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")), "an HTML document"),
    (lambda h: h.lstrip().startswith(b"<?xml") or b"<svg" in h[:512], "XML or SVG text"),
    (lambda h: h.lstrip()[:1] in (b"{", b"["), "JSON text"),
    (lambda h: h.startswith(b"%PDF"), "a PDF document"),
    (lambda h: h.startswith(b"PK\x03\x04"), "a ZIP archive"),
    (lambda h: h.startswith(b"\x1f\x8b"), "gzip data"),
    (lambda h: h.startswith(b"BM"), "a BMP image (not shown: only PNG, JPEG, GIF and WebP are)"),
    (lambda h: h.startswith((b"II*\x00", b"MM\x00*")), "a TIFF image (not shown: only PNG, JPEG, GIF and WebP are)"),
)


def describe_bytes(head: bytes) -> str:
    """What a file's first bytes look like, in words, for a refusal."""
    if not head:
        return "an empty file"
    for test, kind in _LOOKS_LIKE:
        if test(head):
            return kind
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:
            return f"binary data (starts with bytes {head[:8].hex(' ')})"
    return "plain text"


def not_an_image_error(shown: str, head: bytes) -> BinaryFileError:
    """A file named like an image whose bytes are not one, saying what it looks like."""
    kind = describe_bytes(head)
    preview = head[:40].decode("utf-8", "replace").replace("\n", " ").strip()
    starts = f' (it starts with "{preview}")' if kind != "an empty file" and preview.isprintable() else ""
    return BinaryFileError(
        f"{shown} has an image extension, but its bytes are not a PNG, JPEG, GIF or WebP image: it looks like "
        f"{kind}{starts}. A download may have saved an error or login page instead of the image. Check with "
        f'Bash `file "{shown}"`, or look at it as text with `head -c 500`.'
    )
