"""Output capture with bounded memory, whatever a command prints.

Up to `cap` characters everything is kept. Past it, only the first and last `cap/2` (less room for the
marker) stay in memory, and the whole stream goes to a spill file in the session's scratch folder, so
the model can read the middle later. The file is capped too (1 GiB by default); past that the stream
is still read (the command must not block on a full pipe) but no longer stored.

Bytes are decoded incrementally as UTF-8 with replacement, so a character split across two reads is
decoded whole, and invalid bytes become U+FFFD instead of an error.
"""

from __future__ import annotations

import codecs
import os
import re
import tempfile
from collections import deque
from pathlib import Path
from typing import BinaryIO

DEFAULT_CAP = 30_000
MARKER_RESERVE = 600
"""Characters kept free for the omission marker, so head + marker + tail stays within the cap."""
FILE_CAP_BYTES = 1 << 30
LINE_ALIGN = 2_000
"""A cut moves to a line boundary when one is this close, so the model sees whole lines."""
_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n])")
_CR_AT_END = re.compile(r"\r+(?=\n|\Z)")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t\f\v]*\n)+")


class OutputCapture:
    """Feed it bytes; ask it for the text to show and where the full stream went."""

    def __init__(
        self,
        cap: int = DEFAULT_CAP,
        *,
        spill_dir: Path | None = None,
        spill_prefix: str = "bash-",
        file_cap: int | None = None,
    ) -> None:
        self.cap = cap
        self.head_cap = self.tail_cap = max(1, (cap - MARKER_RESERVE) // 2)
        self.total_chars = 0
        self.spill_path: Path | None = None
        self.spilled_bytes = 0
        self.file_truncated = False
        self.file_error: str | None = None
        self._spill_dir = spill_dir
        self._spill_prefix = spill_prefix
        self._file_cap = FILE_CAP_BYTES if file_cap is None else file_cap
        self._spill: BinaryIO | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0

    @property
    def truncated(self) -> bool:
        """Whether more arrived than the cap, so the middle is left out of the text."""
        return self.total_chars > self.cap

    def feed(self, data: bytes) -> None:
        """Add raw output; a character split across reads is decoded once it is whole."""
        self.add_text(self._decoder.decode(data))

    def close(self) -> None:
        """Flush a trailing partial character and close the spill file."""
        self.add_text(self._decoder.decode(b"", final=True))
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def add_text(self, text: str) -> None:
        """Add decoded output: kept in the head until it fills, then in a tail bounded to the cap."""
        if not text:
            return
        self.total_chars += len(text)
        if self._spill is not None:
            self._write(text)
        room = self.head_cap - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
        if self.truncated:
            if self._spill is None and self._spill_dir is not None and self.spill_path is None:
                self._start_spill()
            self._trim_tail()

    def _start_spill(self) -> None:
        assert self._spill_dir is not None
        fd, name = tempfile.mkstemp(prefix=self._spill_prefix, suffix=".log", dir=self._spill_dir)
        self._spill = os.fdopen(fd, "wb")
        self.spill_path = Path(name)
        # Nothing was dropped yet (trimming starts only past the cap), so head + tail is the whole stream.
        self._write("".join(self._head) + "".join(self._tail))

    def _write(self, text: str) -> None:
        assert self._spill is not None
        if self.file_truncated:
            return
        data = text.encode("utf-8", "surrogatepass")
        room = self._file_cap - self.spilled_bytes
        if len(data) > room:
            data = data[:room]
            self.file_truncated = True
        try:
            self._spill.write(data)
        except OSError as exc:  # a full disk must not break the call: the output just stops being saved
            self.file_error = exc.strerror or type(exc).__name__
            self.file_truncated = True
            return
        self.spilled_bytes += len(data)

    def _trim_tail(self) -> None:
        while self._tail and self._tail_len - len(self._tail[0]) >= self.tail_cap:
            self._tail_len -= len(self._tail.popleft())
        if self._tail_len > 4 * self.tail_cap:  # one huge chunk: keep only its end
            kept = "".join(self._tail)[-self.tail_cap :]
            self._tail = deque([kept])
            self._tail_len = len(kept)

    def last_line(self, limit: int = 200) -> str:
        """The latest non-empty line printed so far (for progress messages)."""
        recent = (self._tail[-1] if self._tail else "") or "".join(self._head[-2:])
        lines = [line for line in tidy(recent[-4 * limit :]).split("\n") if line.strip()]
        return lines[-1][-limit:] if lines else ""

    def render(self, where: str) -> str:
        """The text to show: all of it, or head + marker + tail. `where` says how to reach the full output."""
        if not self.truncated:
            return tidy("".join(self._head) + "".join(self._tail))
        head = "".join(self._head)[: self.head_cap]
        tail = "".join(self._tail)[-self.tail_cap :]
        cut = head.rfind("\n", len(head) - LINE_ALIGN)
        if cut > 0:
            head = head[: cut + 1]
        start = tail.find("\n", 0, LINE_ALIGN)
        if 0 <= start < len(tail) - 1:
            tail = tail[start + 1 :]
        omitted = self.total_chars - len(head) - len(tail)
        marker = f"[... {omitted:,} characters omitted ({self.total_chars:,} in total). {where} ...]"
        return f"{tidy(head)}\n\n{marker}\n\n{tidy(tail, leading=False)}"


def tidy(text: str, *, leading: bool = True) -> str:
    r"""Claude Code's clean-up: trailing whitespace and leading blank lines go; `\r` redraws show their final state."""
    if "\r" in text:
        text = _CR_AT_END.sub("", _OVERWRITTEN.sub("", text.replace("\r\n", "\n")))
    text = text.rstrip()
    return _LEADING_BLANK_LINES.sub("", text) if leading else text
