"""Which reader a file needs (judged by its bytes; a notebook by its name) and the bounds each works within.

Text goes to `view`; images, PDFs and notebooks come here and return a `RichView`. The readers (and
Pillow, PDFium, nbformat behind them) are imported on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mcp_codetools.files.kinds import (
    IMAGE_SUFFIXES,
    NOTEBOOK_MAX_BYTES,
    ImageBounds,
    NotebookLimits,
    PdfLimits,
    image_kind,
    not_an_image_error,
    notebook_too_large,
)
from mcp_codetools.files.richview import RichView
from mcp_codetools.files.stamps import digest_bytes
from mcp_codetools.settings import Settings

HEAD_BYTES = 1024
"""A PDF header may come after up to 1,024 bytes of junk; image signatures sit at the start."""

Kind = Literal["image", "pdf", "notebook"]


@dataclass(frozen=True, slots=True)
class RichLimits:
    """The bounds for images, PDFs and notebooks, from the settings."""

    images: ImageBounds
    pdf: PdfLimits
    notebook: NotebookLimits

    @classmethod
    def from_settings(cls, settings: Settings) -> RichLimits:
        """The bounds the settings give."""
        return cls(
            ImageBounds(settings.image_max_side, settings.image_max_pixels, settings.image_max_bytes),
            PdfLimits(settings.pdf_max_pages, settings.pdf_pages_without_range, settings.result_max_images),
            NotebookLimits(settings.notebook_output_chars, settings.result_max_images),
        )


def rich_kind(path: Path, head: bytes) -> Kind | None:
    """The reader a file needs, or None for text.

    Raises:
        BinaryFileError: the name says image but the bytes are something else.
    """
    if image_kind(head) is not None:
        return "image"
    suffix = path.suffix.lower()
    # Readers accept a PDF header anywhere in the first KiB, but only a file named .pdf gets that benefit:
    # a source file or a test that mentions the header near its top is text.
    if head.startswith(b"%PDF-") or (suffix == ".pdf" and b"%PDF-" in head[:HEAD_BYTES]):
        return "pdf"
    if suffix == ".ipynb":
        return "notebook"
    if suffix in IMAGE_SUFFIXES:
        raise not_an_image_error(str(path), head)
    return None


def read_rich(
    kind: Kind,
    fd: int,
    st: os.stat_result,
    path: Path,
    head: bytes,
    *,
    pages: str | None,
    first: int,
    max_cells: int | None,
    limits: RichLimits,
    budget: int,
) -> RichView:
    """Read one image, PDF or notebook from its open descriptor (blocking: run it off the event loop)."""
    # Imported here: each library costs 40-700 ms to import, paid only by a session that meets such a file.
    if kind == "image":
        from mcp_codetools.files.images import load_image, open_image_fd

        image_format = image_kind(head) or "png"
        with open_image_fd(fd) as handle:
            image = load_image(handle, st.st_size, image_format, limits.images, str(path))
        view = RichView(meta={"type": "image", "path": str(path)})
        view.add(f"Image {path}: {image.describe()}.")
        view.add(image)
        view.meta.update(
            {
                "mimeType": image.mime_type,
                "originalSize": st.st_size,
                "dimensions": {
                    "originalWidth": image.original_size[0],
                    "originalHeight": image.original_size[1],
                    "displayWidth": image.shown_size[0],
                    "displayHeight": image.shown_size[1],
                },
            }
        )
        return view
    if kind == "pdf":
        from mcp_codetools.files.pdf import read_pdf

        return read_pdf(fd, path, pages, limits=limits.pdf, bounds=limits.images, budget=budget)
    if st.st_size > NOTEBOOK_MAX_BYTES:  # refused before it is read into memory
        raise notebook_too_large(path, st.st_size)
    from mcp_codetools.files.notebook import read_notebook

    data = read_all(fd)
    view = read_notebook(
        data, path, first=first, max_cells=max_cells, limits=limits.notebook, bounds=limits.images, budget=budget
    )
    view.digest = digest_bytes(data)
    return view


def read_all(fd: int) -> bytes:
    """The whole file behind `fd`, read by offset (the descriptor's position is left alone)."""
    parts: list[bytes] = []
    offset = 0
    while block := os.pread(fd, 1 << 20, offset):
        parts.append(block)
        offset += len(block)
    return b"".join(parts)
