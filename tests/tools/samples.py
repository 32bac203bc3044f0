"""Sample rich files made on the spot: images with Pillow, PDFs written by hand, notebooks with nbformat."""

from __future__ import annotations

import base64
import io
import zlib
from pathlib import Path

import nbformat
from nbformat import v4
from PIL import Image


def photo(width: int, height: int) -> Image.Image:
    """A smooth colour gradient (compresses like a photo, not like noise)."""
    x = Image.linear_gradient("L").resize((width, height))
    y = x.transpose(Image.Transpose.ROTATE_90).resize((width, height))
    return Image.merge("RGB", (x, y, Image.new("L", (width, height), 128)))


def write_image(path: Path, fmt: str, width: int = 40, height: int = 30) -> Path:
    photo(width, height).save(path, fmt)
    return path


def png_bytes(width: int = 12, height: int = 8) -> bytes:
    out = io.BytesIO()
    photo(width, height).save(out, "PNG")
    return out.getvalue()


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def write_pdf(
    path: Path,
    pages: list[str | None],
    *,
    title: str | None = None,
    outline: list[tuple[str, int]] | None = None,
    encrypted: bool = False,
) -> Path:
    """A PDF with one page per entry: its lines of text, or None for a page holding only an image (a "scan")."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    pixels = bytes((x * 8 + y * 4) % 256 for y in range(32) for x in range(32))
    packed = zlib.compress(pixels)
    image = add(
        b"<< /Type /XObject /Subtype /Image /Width 32 /Height 32 /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Filter /FlateDecode /Length %d >>\nstream\n" % len(packed) + packed + b"\nendstream"
    )
    page_ids: list[int] = []
    for text in pages:
        if text is None:
            content = b"q 400 0 0 400 100 300 cm /Im0 Do Q"
        else:
            lines = [
                f"BT /F1 12 Tf 72 {740 - 16 * i} Td {_pdf_string(line)} Tj ET"
                for i, line in enumerate(text.split("\n"))
            ]
            content = "\n".join(lines).encode("latin-1")
        stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        page_ids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> /XObject << /Im0 %d 0 R >> >> >>"
                % (pages_obj, stream, font, image)
            )
        )
    kids = b" ".join(b"%d 0 R" % p for p in page_ids)
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(page_ids))
    catalog_body = b"<< /Type /Catalog /Pages %d 0 R" % pages_obj
    if outline:
        root = add(b"")
        items = []
        for title_text, page in outline:
            items.append(
                add(
                    b"<< /Title %s /Parent %d 0 R /Dest [%d 0 R /Fit] >>"
                    % (_pdf_string(title_text).encode("latin-1"), root, page_ids[page - 1])
                )
            )
        for i, item in enumerate(items):
            links = b""
            if i > 0:
                links += b" /Prev %d 0 R" % items[i - 1]
            if i < len(items) - 1:
                links += b" /Next %d 0 R" % items[i + 1]
            objects[item - 1] = objects[item - 1][:-2] + links + b" >>"
        objects[root - 1] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
            items[0],
            items[-1],
            len(items),
        )
        catalog_body += b" /Outlines %d 0 R" % root
    objects[catalog - 1] = catalog_body + b" >>"
    info = add(b"<< /Title %s >>" % _pdf_string(title).encode("latin-1")) if title else None
    encrypt = (
        add(b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P -4 >>" % (b"ab" * 32, b"cd" * 32))
        if encrypted
        else None
    )
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info:
        trailer += b" /Info %d 0 R" % info
    if encrypt:
        trailer += b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (encrypt, b"01" * 16, b"01" * 16)
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    path.write_bytes(bytes(out))
    return path


def write_notebook(path: Path, *, long_output: int = 0) -> Path:
    """A notebook with markdown, a stream output, an image output, an HTML table, a widget and an error."""
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    png = base64.b64encode(png_bytes()).decode("ascii")
    nb.cells = [
        v4.new_markdown_cell("# Title\nSome notes."),
        v4.new_code_cell(
            "print('hi')",
            execution_count=1,
            outputs=[v4.new_output("stream", name="stdout", text="hi\n" + "x" * long_output)],
        ),
        v4.new_code_cell(
            "plot()",
            execution_count=2,
            outputs=[v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})],
        ),
        v4.new_code_cell(
            "df",
            execution_count=3,
            outputs=[
                v4.new_output(
                    "execute_result",
                    data={"text/html": "<table><tr><td>cell</td></tr></table>"},
                    execution_count=3,
                ),
                v4.new_output(
                    "display_data",
                    data={"application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2}},
                ),
            ],
        ),
        v4.new_code_cell(
            "1/0",
            execution_count=4,
            outputs=[
                v4.new_output(
                    "error",
                    ename="ZeroDivisionError",
                    evalue="division by zero",
                    traceback=[
                        "\x1b[0;31mZeroDivisionError\x1b[0m Traceback",
                        "----> 1 1/0",
                        "ZeroDivisionError: division by zero",
                    ],
                )
            ],
        ),
    ]
    nbformat.validate(nb)
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path
