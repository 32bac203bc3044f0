"""Images the model can see: recognised by their bytes, scaled down to a bound, encoded compactly.

The bound keeps one image well inside a result's budget. Claude's vision models read an image of
w×h pixels as about w·h/750 tokens and gain nothing past ~1.15 megapixels or 1,568 px a side, so an
image within both is shown as it is (its own bytes when they are small enough), and a larger one is
scaled down with its aspect ratio kept. PNG/GIF/WebP sources with few colours (diagrams, most
screenshots) or transparency stay PNG; photos, and anything over the byte bound, become JPEG.
"""

from __future__ import annotations

import io
import math
import os
import warnings
from dataclasses import dataclass
from typing import IO

from PIL import Image, ImageSequence, UnidentifiedImageError

from mcp_codetools.errors import BinaryFileError
from mcp_codetools.files.kinds import ImageBounds

MIME_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
TOKEN_PIXELS = 750
"""Pixels per token in Claude's vision cost estimate (w·h/750)."""
_JPEG_QUALITIES = (85, 70, 50)
_PNG_MAX_COLOURS = 4096
_EXIF_ORIENTATION = 0x0112
_ORIENTATION = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
_SWAPS_SIDES = {
    Image.Transpose.TRANSPOSE,
    Image.Transpose.ROTATE_270,
    Image.Transpose.TRANSVERSE,
    Image.Transpose.ROTATE_90,
}
_MAX_DECODED_PIXELS = 64_000_000
"""PNG, GIF and WebP are decoded whole before scaling (64 MP of RGBA is 256 MB), so larger ones are refused.
JPEG decodes at 1/2 to 1/8 scale when shrinking, so it is bounded only by Pillow's own bomb check (~179 MP)."""


@dataclass(frozen=True, slots=True)
class ShownImage:
    """An image ready to send, with the facts the text part reports."""

    data: bytes
    mime_type: str
    source_format: str
    original_size: tuple[int, int]
    shown_size: tuple[int, int]
    frames: int = 1

    @property
    def tokens(self) -> int:
        """About how many tokens the image costs the model, by its shown size."""
        return image_tokens(*self.shown_size)

    def describe(self) -> str:
        """The image in words: format, sizes (original and shown), encoding and cost."""
        (ow, oh), (sw, sh) = self.original_size, self.shown_size
        text = f"{self.source_format.upper()} image, {ow}×{oh} px"
        if (ow, oh) != (sw, sh):
            text += f", shown scaled down to {sw}×{sh} px"
        text += f" ({self.encoding()})"
        if self.frames > 1:
            text += f"; animated, {self.frames} frames, the first is shown"
        return text

    def encoding(self) -> str:
        """The MIME type, byte count and token estimate of what is sent."""
        tokens = f"about {self.tokens:,} token{'s' if self.tokens != 1 else ''}"
        return f"{self.mime_type}, {len(self.data):,} bytes, {tokens}"


def image_tokens(width: int, height: int) -> int:
    """The token estimate for an image of this size (one token per TOKEN_PIXELS, rounded up)."""
    return (width * height + TOKEN_PIXELS - 1) // TOKEN_PIXELS


def fit_size(width: int, height: int, bounds: ImageBounds) -> tuple[int, int]:
    """The largest size within both bounds with the same aspect ratio (never larger than the original)."""
    scale = min(1.0, bounds.max_side / max(width, height, 1), math.sqrt(bounds.max_pixels / max(width * height, 1)))
    if scale >= 1.0:
        return width, height
    return max(1, int(width * scale)), max(1, int(height * scale))


def load_image(handle: IO[bytes], size: int, kind: str, bounds: ImageBounds, shown: str) -> ShownImage:
    """Decode an image file (open at its start) and make it fit `bounds`.

    Raises:
        BinaryFileError: the bytes announce an image that cannot be decoded, or it is too large to decode.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(handle, formats=[kind.upper()])
            width, height = image.size
            if kind != "jpeg" and width * height > _MAX_DECODED_PIXELS:
                raise _too_large(shown, f"{width}×{height} px")
            frames = getattr(image, "n_frames", 1)
            target = fit_size(width, height, bounds)
            turn = _ORIENTATION.get(image.getexif().get(_EXIF_ORIENTATION, 1))
            if target == (width, height) and size <= bounds.max_bytes and frames == 1 and turn is None:
                # Sent as it is only if every pixel decodes and any model API can take it: a truncated
                # file or a CMYK JPEG in a conversation can make every later request of it fail.
                image.load()
                if kind != "jpeg" or image.mode in ("RGB", "L"):
                    handle.seek(0)
                    return ShownImage(handle.read(), MIME_TYPES[kind], kind, (width, height), target)
            if frames > 1:
                image = next(iter(ImageSequence.Iterator(image))).copy()
            return fit_image(image, bounds, source_format=kind, frames=frames, turn=turn)
    except BinaryFileError:
        raise
    except Image.DecompressionBombError:
        raise _too_large(shown, "more pixels than Pillow will decode") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise BinaryFileError(
            f"Cannot show {shown}: its bytes start like a {kind.upper()} image, but it does not decode ({exc}). "
            "The file may be truncated or damaged; `file` and `xxd | head` in Bash show what it holds."
        ) from None


def _too_large(shown: str, what: str) -> BinaryFileError:
    return BinaryFileError(
        f"Cannot show {shown}: the image is too large to decode safely ({what}). Make a smaller copy with "
        "Bash first (e.g. `convert in.png -resize 1568x1568 out.png`, or Python's Pillow), then Read that."
    )


def fit_image(
    image: Image.Image,
    bounds: ImageBounds,
    *,
    source_format: str,
    frames: int = 1,
    turn: Image.Transpose | None = None,
) -> ShownImage:
    """Scale a decoded image into `bounds` and encode it compactly (`turn`: the camera's EXIF orientation)."""
    original = image.size
    target = fit_size(*original, bounds)
    if target != original:
        image.thumbnail(target, Image.Resampling.BICUBIC, reducing_gap=2.0)
    if turn is not None:
        # Re-encoding drops EXIF, so the orientation a viewer would apply is applied to the pixels.
        image = image.transpose(turn)
        original = original[::-1] if turn in _SWAPS_SIDES else original
    data, mime = _encode(image, lossless=source_format in ("png", "gif", "webp") and _few_colours(image))
    while len(data) > bounds.max_bytes:
        data, mime = _smaller(image, bounds.max_bytes)
        if len(data) <= bounds.max_bytes or min(image.size) <= 64:
            break
        image = image.resize((max(1, image.width * 3 // 4), max(1, image.height * 3 // 4)))
    return ShownImage(data, mime, source_format, original, image.size, frames)


def _few_colours(image: Image.Image) -> bool:
    """Palette, grey or flat-coloured images (diagrams, most screenshots) stay PNG; photos do better as JPEG."""
    if image.mode in ("1", "L", "LA", "P", "PA") or _has_alpha(image):
        return True
    return image.getcolors(_PNG_MAX_COLOURS) is not None


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)


def _encode(image: Image.Image, *, lossless: bool) -> tuple[bytes, str]:
    out = io.BytesIO()
    if lossless or _has_alpha(image):
        if image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA"):
            image = image.convert("RGBA" if _has_alpha(image) else "RGB")
        image.save(out, "PNG", compress_level=6)
        return out.getvalue(), "image/png"
    _rgb(image).save(out, "JPEG", quality=_JPEG_QUALITIES[0], optimize=False)
    return out.getvalue(), "image/jpeg"


def _smaller(image: Image.Image, max_bytes: int) -> tuple[bytes, str]:
    rgb = _rgb(image)
    data = b""
    for quality in _JPEG_QUALITIES:
        out = io.BytesIO()
        rgb.save(out, "JPEG", quality=quality)
        data = out.getvalue()
        if len(data) <= max_bytes:
            break
    return data, "image/jpeg"


def _rgb(image: Image.Image) -> Image.Image:
    if image.mode == "RGB":
        return image
    if _has_alpha(image):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return image.convert("RGB")


def open_image_fd(fd: int) -> IO[bytes]:
    """A buffered reader over a duplicate of `fd`, from its start (the caller keeps and closes `fd`)."""
    handle = os.fdopen(os.dup(fd), "rb")
    handle.seek(0)
    return handle
