"""Text as files hold it, and as the model reads it.

Which encoding, BOM and line ending a file uses, decoding that keeps every byte, and the numbered,
size-capped views the model reads.
"""

from __future__ import annotations

import codecs
import re
import shlex
from dataclasses import dataclass

SAMPLE_BYTES = 8192
MAX_LINE_CHARS = 2000
CUT_MARK = "… [line cut: "
"""Starts the note on a line cut at MAX_LINE_CHARS; Read counts these to explain how to see the rest."""

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\x1f\x8b", "gzip archive"),
)
_BOM_PREFIXES = tuple(bom for bom, _ in _BOMS)
_MAGIC_PREFIXES = tuple(magic for magic, _ in _MAGIC)
_CONTROL = bytes(c for c in range(32) if c not in (9, 10, 12, 13, 27))
_SURROGATES = re.compile("[\ud800-\udfff]")
_CUT_TAIL = re.compile(r"… \[line cut: (?:about )?(\d+) of its (?:about )?\d+ characters hidden\]$")


class BinaryContentError(Exception):
    """The bytes are not text; `kind` names what they look like."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class TextFormat:
    """How a file's text is stored, so a write can store it the same way."""

    encoding: str
    bom: bytes = b""
    newline: str = "\n"

    @property
    def ascii_compatible(self) -> bool:
        """Whether ASCII bytes mean ASCII characters here (every encoding but UTF-16), so bytes can be matched."""
        return not self.encoding.startswith("utf-16")

    @property
    def errors(self) -> str:
        """The codec error handler that gives back every byte on encode."""
        # surrogateescape carries undecodable bytes through a decode/encode round trip unchanged.
        return "surrogateescape" if self.encoding == "utf-8" else "strict"

    def describe(self) -> str:
        """The format in words (`UTF-8 with BOM, CRLF line endings`), for messages."""
        parts = [self.encoding.upper() + (" with BOM" if self.bom else "")]
        if self.newline == "\r\n":
            parts.append("CRLF line endings")
        return ", ".join(parts)


def sniff(sample: bytes, *, whole: bool) -> TextFormat:
    """Decide a file's format from its first bytes.

    Raises:
        BinaryContentError: the bytes look like binary data.
    """
    # One startswith per table first: most files start with neither, and this runs on every Read.
    if sample.startswith(_BOM_PREFIXES):
        for bom, encoding in _BOMS:
            if sample.startswith(bom):
                newline = _sniff_newline(sample[len(bom) :].decode(encoding, "ignore"))
                return TextFormat(encoding, bom, newline)
    if sample.startswith(_MAGIC_PREFIXES):
        for magic, kind in _MAGIC:
            if sample.startswith(magic):
                raise BinaryContentError(kind)
    if b"\x00" in sample:
        raise BinaryContentError("binary data (it contains NUL bytes)")
    if sample and len(sample) - len(sample.translate(None, _CONTROL)) > len(sample) * 0.1:
        raise BinaryContentError("binary data (many control bytes)")
    encoding = "utf-8" if _is_utf8(sample, whole=whole) else "latin-1"
    if b"\r" not in sample:  # most files: no CR at all, nothing to count
        return TextFormat(encoding, b"", "\n")
    # Counted in the bytes: in UTF-8 and latin-1 a CR or LF byte is always that character, never part of one.
    crlf = sample.count(b"\r\n")
    return TextFormat(encoding, b"", "\r\n" if crlf > sample.count(b"\n") - crlf else "\n")


def _is_utf8(sample: bytes, *, whole: bool) -> bool:
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the sample's end is not an error.
        return not whole and exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data"
    return True


def _sniff_newline(text: str) -> str:
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def detect(data: bytes) -> TextFormat:
    """The format of a whole file: its first bytes decide, the line-ending count covers all of it.

    Raises:
        BinaryContentError: the bytes look like binary data.
    """
    fmt = sniff(data[:SAMPLE_BYTES], whole=len(data) <= SAMPLE_BYTES)
    if fmt.ascii_compatible and len(data) > SAMPLE_BYTES and b"\r" in data and b"\r\n" in data:
        crlf = data.count(b"\r\n")
        newline = "\r\n" if crlf > data.count(b"\n") - crlf else "\n"
        if newline != fmt.newline:
            fmt = TextFormat(fmt.encoding, fmt.bom, newline)
    return fmt


def for_display(text: str) -> str:
    """Text safe to send: bytes that did not decode show as U+FFFD."""
    if text.isascii():
        return text
    return _SURROGATES.sub("\ufffd", text)


def shows_as_is(text: str) -> bool:
    """Whether `for_display` leaves `text` unchanged (no byte that did not decode)."""
    return text.isascii() or _SURROGATES.search(text) is None


def clip_line(line: str) -> str:
    """`line` cut to MAX_LINE_CHARS, saying how long it was; a line cut earlier is left alone."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    if len(line) <= MAX_LINE_CHARS + 80 and _CUT_TAIL.search(line):
        return line  # already cut before it was decoded whole (matching.window), with the whole line's length
    return f"{line[:MAX_LINE_CHARS]}{CUT_MARK}{len(line) - MAX_LINE_CHARS} of its {len(line)} characters hidden]"


def long_line_note(path: object, numbered: list[str]) -> list[str]:
    """How to see the hidden part of lines cut at MAX_LINE_CHARS (minified code, one-line JSON), if any were."""
    cut = [(line, found) for line in numbered if CUT_MARK in line and (found := _CUT_TAIL.search(line))]
    if not cut:
        return []
    hidden = sum(int(found.group(1)) for _, found in cut)
    number = cut[0][0].split("\t", 1)[0]
    path = shlex.quote(str(path))
    lines = f"{len(cut)} line{'s' if len(cut) != 1 else ''} longer than {MAX_LINE_CHARS} characters"
    return [
        f"\n[{lines} cut; {hidden:,} characters hidden. To see more of line {number}, use Bash: "
        f"`sed -n '{number}p' {path} | cut -c{MAX_LINE_CHARS + 1}-{MAX_LINE_CHARS * 3}` for the next part, "
        f"`sed -n '{number}p' {path} | fold -w {MAX_LINE_CHARS}` for all of it in pieces, or "
        f"`grep -oE '.{{0,200}}NAME.{{0,200}}' {path}` for the text around NAME.]"
    ]


def number_line(number: int, line: str) -> str:
    """One line as Read shows it: its number, a tab, the text (no CR, made safe to send, clipped)."""
    return f"{number}\t{clip_line(for_display(line.rstrip(chr(13))))}"


def number_lines(lines: list[str], first: int) -> str:
    """`lines` numbered from `first`, one per output line."""
    return "\n".join(number_line(first + i, line) for i, line in enumerate(lines))
