"""Read of images, PDFs and notebooks: judged by bytes, bounded, recorded in the ledger."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from mcp_codetools.files.images import ImageBounds, fit_size
from mcp_codetools.files.pdf import parse_pages
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from mcp_codetools.tools.base import ToolOutput
from tests.conftest import Caller
from tests.tools.samples import write_image, write_notebook, write_pdf

pytestmark = pytest.mark.anyio


def budget_chars(output: ToolOutput) -> int:
    """What a result costs: its text, plus each image at w·h/750 tokens (4 characters a token)."""
    images = 0
    for part in output.images:
        with Image.open(io.BytesIO(part.data)) as image:
            images += 4 * ((image.width * image.height + 749) // 750)
    return len(output.text) + sum(len(t) for t in output.trailing.values()) + images


@pytest.mark.parametrize(
    ("fmt", "suffix", "mime"),
    [("PNG", "png", "png"), ("JPEG", "jpg", "jpeg"), ("GIF", "gif", "gif"), ("WEBP", "webp", "webp")],
)
async def test_each_image_format_is_returned_as_image_content(
    call: Caller, root: Path, fmt: str, suffix: str, mime: str
) -> None:
    f = write_image(root / f"small.{suffix}", fmt, 40, 30)
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert [part.mime_type for part in out.images] == [f"image/{mime}"]
    assert out.images[0].data == f.read_bytes()  # small and within bounds: sent as it is
    assert "40×30 px" in out.text
    assert out.meta["dimensions"]["displayWidth"] == 40


async def test_an_image_is_judged_by_its_bytes_not_its_name(call: Caller, root: Path) -> None:
    f = write_image(root / "picture.dat", "PNG", 10, 10)
    out = await call("Read", {"file_path": str(f)})
    assert [part.mime_type for part in out.images] == ["image/png"]


async def test_a_huge_image_is_scaled_down_within_both_bounds_keeping_its_aspect(call: Caller, root: Path) -> None:
    f = write_image(root / "huge.png", "PNG", 2400, 1800)  # over both bounds; 4000×3000 cost ~1.1 CPU-s, this ~0.4
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    with Image.open(io.BytesIO(out.images[0].data)) as shown:
        width, height = shown.size
    assert max(width, height) <= 1568 and width * height <= 1_150_000
    assert abs(width / height - 4 / 3) < 0.01
    assert "2400×1800 px" in out.text and f"{width}×{height} px" in out.text
    assert len(out.images[0].data) <= 512 * 1024
    assert budget_chars(out) < 100_000


def test_fit_size_keeps_small_images_and_bounds_long_thin_ones() -> None:
    bounds = ImageBounds()
    assert fit_size(800, 600, bounds) == (800, 600)
    width, height = fit_size(10_000, 100, bounds)
    assert width == 1568 and height == 15


async def test_a_png_holding_html_is_an_error_that_says_what_it_looks_like(call: Caller, root: Path) -> None:
    f = root / "fake.png"
    f.write_text("<html><body>Login required</body></html>", encoding="utf-8")
    out = await call.fails("Read", {"file_path": str(f)})
    assert out.meta["errorCode"] == "binary_file"
    assert "HTML document" in out.text and "<html><body>Login" in out.text
    assert "file " in out.text


async def test_a_truncated_png_is_an_error_not_a_crash(call: Caller, root: Path) -> None:
    data = (write_image(root / "whole.png", "PNG", 300, 300)).read_bytes()
    f = root / "cut.png"
    f.write_bytes(data[: len(data) // 2])
    out = await call.fails("Read", {"file_path": str(f)})
    assert out.meta["errorCode"] == "binary_file"
    assert "does not decode" in out.text


async def test_a_truncated_small_jpeg_is_an_error_not_sent_on(call: Caller, root: Path) -> None:
    """Within the bounds an image is sent as it is, so it must decode whole first: a model API that cannot
    decode an image in a conversation refuses every later request of it."""
    data = write_image(root / "whole.jpg", "JPEG", 300, 200).read_bytes()
    f = root / "cut.jpg"
    f.write_bytes(data[: len(data) // 2])
    out = await call.fails("Read", {"file_path": str(f)})
    assert out.meta["errorCode"] == "binary_file" and "truncated" in out.text


async def test_a_cmyk_jpeg_is_sent_as_rgb(call: Caller, root: Path) -> None:
    f = root / "print.jpg"
    Image.new("CMYK", (64, 48), (0, 120, 200, 10)).save(f, "JPEG")
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert out.images[0].data != f.read_bytes()
    with Image.open(io.BytesIO(out.images[0].data)) as shown:
        assert shown.mode == "RGB" and shown.size == (64, 48)


async def test_a_small_rotated_photo_is_turned_too(call: Caller, root: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6
    f = root / "small-phone.jpg"
    Image.new("RGB", (80, 40), (200, 30, 30)).save(f, "JPEG", exif=exif)
    out = await call("Read", {"file_path": str(f)})
    with Image.open(io.BytesIO(out.images[0].data)) as shown:
        assert shown.size == (40, 80)


# PDFs


def test_page_lists_parse_and_are_bounded() -> None:
    assert parse_pages("3", 20) == [3]
    assert parse_pages("1-5", 20) == [1, 2, 3, 4, 5]
    assert parse_pages("2, 4-6", 20) == [2, 4, 5, 6]
    for bad in ("", "a", "5-2", "0", "1-21", "1-10,11-30", "1-1000000000"):
        with pytest.raises(Exception, match="page"):
            parse_pages(bad, 20)


async def test_pdf_pages_come_in_order_with_markers(call: Caller, root: Path) -> None:
    f = write_pdf(root / "doc.pdf", ["first page text", "second (page) text", "third page text"])
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert "--- Page 1 of 3 ---\nfirst page text" in out.text
    assert out.text.index("second (page) text") < out.text.index("third page text")
    two = await call.ok("Read", {"file_path": str(f), "pages": "2"})
    assert "second (page) text" in two and "first page text" not in two


async def test_a_pdf_page_without_text_is_rendered_as_an_image(call: Caller, root: Path) -> None:
    f = write_pdf(root / "scan.pdf", ["text before", None, "text after"])
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert len(out.images) == 1
    assert "page 2 has no text layer" in out.text
    assert "text after" in out.trailing[0]
    assert out.meta["renderedPages"] == [2]
    assert budget_chars(out) < 100_000


async def test_a_long_pdf_without_pages_answers_with_an_overview(call: Caller, root: Path) -> None:
    f = write_pdf(
        root / "long.pdf",
        [f"body of page {n}" for n in range(1, 31)],
        title="The Long Report",
        outline=[("Introduction", 1), ("Results", 12)],
    )
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert "30 pages" in out.text and "The Long Report" in out.text
    assert "1: Introduction" in out.text and "12: Results" in out.text
    assert "pages=" in out.text and "body of page" not in out.text
    some = await call.ok("Read", {"file_path": str(f), "pages": "12-13"})
    assert "body of page 12" in some and "body of page 13" in some


async def test_pdf_page_errors_say_what_to_do(call: Caller, root: Path) -> None:
    f = write_pdf(root / "doc.pdf", ["only page"])
    out = await call.fails("Read", {"file_path": str(f), "pages": "4"})
    assert out.meta["errorCode"] == "invalid_input" and "1 page" in out.text
    out = await call.fails("Read", {"file_path": str(f), "pages": "1-30"})
    assert "at most 20" in out.text
    text = root / "t.txt"
    text.write_text("x\n", encoding="utf-8")
    out = await call.fails("Read", {"file_path": str(text), "pages": "1"})
    assert "PDF files only" in out.text


async def test_encrypted_and_broken_pdfs_are_clear_errors(call: Caller, root: Path) -> None:
    locked = write_pdf(root / "locked.pdf", ["secret"], encrypted=True)
    out = await call.fails("Read", {"file_path": str(locked)})
    assert out.meta["errorCode"] == "binary_file" and "password" in out.text
    broken = root / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage")
    out = await call.fails("Read", {"file_path": str(broken)})
    assert out.meta["errorCode"] == "binary_file" and "PDF" in out.text


async def test_pdf_text_beyond_the_budget_is_cut_with_the_pages_to_read_next(root: Path) -> None:
    call = Caller(Pipeline(default_tools()), CodeSession(Settings(roots=(root,), max_result_tokens=1000)))
    page = "\n".join(f"line {i} " + "w" * 60 for i in range(40))
    f = write_pdf(root / "dense.pdf", [page] * 5)
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert len(out.text) <= 4000
    assert "Not shown: pages" in out.text and 'pages="' in out.text


# Notebooks


async def test_notebook_cells_show_id_type_count_source_and_outputs(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    text = out.text + "".join(out.trailing.values())
    assert "Cell 1 of 5" in text and "markdown" in text and "# Title" in text
    assert "execution_count=1" in text and "print('hi')" in text and "stdout\nhi" in text
    assert len(out.images) == 1 and out.images[0].mime_type == "image/png"
    assert "table output" in text and "widget" in text
    assert "ZeroDivisionError: division by zero" in text and "\x1b[" not in text
    assert out.meta["totalCells"] == 5


async def test_long_notebook_output_is_cut_with_a_note(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb", long_output=50_000)
    out = await call("Read", {"file_path": str(f)})
    assert "output cut:" in out.text
    assert budget_chars(out) < 100_000


async def test_notebook_cells_page_with_offset_and_limit(call: Caller, root: Path) -> None:
    f = write_notebook(root / "nb.ipynb")
    out = await call("Read", {"file_path": str(f), "offset": 2, "limit": 1})
    assert "Cell 2 of 5" in out.text and "Cell 1 of" not in out.text and "Cell 3 of" not in out.text
    assert "offset=3" in out.text


async def test_a_broken_notebook_is_a_clear_error(call: Caller, root: Path) -> None:
    f = root / "bad.ipynb"
    f.write_text('{"cells": [', encoding="utf-8")
    out = await call.fails("Read", {"file_path": str(f)})
    assert "Jupyter notebook" in out.text


async def test_a_rich_read_is_recorded_in_the_ledger(call: Caller, root: Path, session: CodeSession) -> None:
    f = write_notebook(root / "nb.ipynb")
    await call.ok("Read", {"file_path": str(f)})
    record = session.ledger.get(f)
    assert record is not None and record.stamp.digest is not None


# Long lines


async def test_a_minified_line_says_how_much_is_hidden_and_how_to_see_it(call: Caller, root: Path) -> None:
    f = root / "app.min.js"
    f.write_text("var a=1;" * 1000, encoding="utf-8")  # 8,000 characters, no newline
    text = await call.ok("Read", {"file_path": str(f)})
    assert "6000 of its 8000 characters hidden" in text
    assert "6,000 characters hidden" in text
    assert "cut -c2001-" in text and "fold -w 2000" in text and "grep -oE" in text


async def test_a_long_line_in_a_large_file_is_explained_too(call: Caller, root: Path) -> None:
    f = root / "big.json"
    f.write_bytes(b"x\n" * 2_200_000 + b'{"k": "' + b"v" * 9000 + b'"}\n')  # over the whole-file threshold
    text = await call.ok("Read", {"file_path": str(f), "offset": 2_200_001})
    assert "about 7009 of its about 9009 characters hidden" in text
    assert "To see more of line 2200001" in text


async def test_a_notebook_cell_larger_than_a_result_is_cut_with_a_way_to_see_it(root: Path) -> None:
    import nbformat
    from nbformat import v4

    call = Caller(Pipeline(default_tools()), CodeSession(Settings(roots=(root,), max_result_tokens=1000)))
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("x = 1\n" * 2000), v4.new_markdown_cell("after")]
    f = root / "huge.ipynb"
    f.write_text(nbformat.writes(nb), encoding="utf-8")
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert len(out.text) <= 4000
    assert "Cell 1 is cut here" in out.text and "jq -r" in out.text and "Cell 2 of 2" in out.text


async def test_a_rotated_camera_photo_is_shown_upright_when_re_encoded(call: Caller, root: Path) -> None:
    from tests.tools.samples import photo

    image = photo(2400, 1200)  # stored landscape, EXIF says: turn 90° to view
    exif = Image.Exif()
    exif[0x0112] = 6
    f = root / "phone.jpg"
    image.save(f, "JPEG", exif=exif, quality=95)
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    with Image.open(io.BytesIO(out.images[0].data)) as shown:
        assert shown.height > shown.width
    assert "1200×2400 px" in out.text


def test_the_rich_format_libraries_are_not_imported_at_start_up() -> None:
    """Pillow, PDFium and nbformat cost 40-700 ms to import; a server that never meets such a file skips that."""
    import subprocess
    import sys

    heavy = "{'PIL', 'pypdfium2', 'nbformat'}"
    code = f"import sys, mcp_codetools.protocol.server; print(sorted({heavy} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


async def test_notebook_images_are_bounded_in_number(call: Caller, root: Path) -> None:
    import base64

    import nbformat
    from nbformat import v4

    from tests.tools.samples import png_bytes

    png = base64.b64encode(png_bytes()).decode("ascii")
    nb = v4.new_notebook()
    nb.cells = [
        v4.new_code_cell(
            f"show({i})", execution_count=i, outputs=[v4.new_output("display_data", data={"image/png": png})]
        )
        for i in range(1, 11)
    ]
    f = root / "many.ipynb"
    f.write_text(nbformat.writes(nb), encoding="utf-8")
    out = await call("Read", {"file_path": str(f)})
    assert len(out.images) == 8
    assert "at most 8 images" in "".join(out.trailing.values())


async def test_an_animated_gif_shows_its_first_frame_and_says_so(call: Caller, root: Path) -> None:
    from tests.tools.samples import photo

    frames = [photo(40, 30), photo(40, 30).rotate(90)]
    f = root / "anim.gif"
    frames[0].save(f, "GIF", save_all=True, append_images=frames[1:], duration=100)
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error, out.text
    assert len(out.images) == 1 and "animated, 2 frames" in out.text


async def test_an_image_too_large_to_decode_is_refused_without_decoding(call: Caller, root: Path) -> None:
    f = root / "vast.png"
    Image.new("1", (9000, 8000)).save(f, "PNG")  # 72 MP, a few KB on disk
    out = await call.fails("Read", {"file_path": str(f)})
    assert out.meta["errorCode"] == "binary_file" and "too large to decode" in out.text


async def test_a_text_file_that_mentions_the_pdf_header_is_read_as_text(call: Caller, root: Path) -> None:
    """Found by the edit-miss corpus: a test file writing `b"%PDF-1.4..."` near its top was read as a broken PDF."""
    f = root / "test_pdf.py"
    f.write_text('import x\n\nbroken = b"%PDF-1.4\\n1 0 obj << >> garbage"\n', encoding="utf-8")
    text = await call.ok("Read", {"file_path": str(f)})
    assert "3\tbroken = b" in text
    named = root / "prefixed.pdf"
    named.write_bytes(b"junk before the header\n" + b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage")
    out = await call.fails("Read", {"file_path": str(named)})
    assert "PDF" in out.text
