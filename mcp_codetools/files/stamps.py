"""What a file looked like at one moment, to tell later whether it changed (by content, not just by mtime)."""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass


def digest_bytes(data: bytes) -> str:
    """A content fingerprint to tell a touched file from a changed one (with the size beside it in the stamp).

    CRC-32 runs at several GB/s, three times sha256 here; it guards against false "modified" alarms, not
    against an adversary, and an Edit still matches old_string against the file's current bytes.
    """
    return f"{zlib.crc32(data):08x}"


@dataclass(frozen=True, slots=True)
class FileStamp:
    """What a file looked like at one moment: enough to tell later whether it changed."""

    mtime_ns: int
    size: int
    digest: str | None
    ctime_ns: int = 0
    """No call can set ctime back (utime moves it too), so it catches a change whose mtime was restored."""

    def same_metadata(self, st: os.stat_result) -> bool:
        """Whether `st` still has this stamp's mtime, size and ctime (a cheap check before a digest)."""
        return (self.mtime_ns, self.size, self.ctime_ns) == (st.st_mtime_ns, st.st_size, st.st_ctime_ns)

    def same_file_state(self, other: FileStamp) -> bool:
        """Unchanged, judged by content when both digests are known, else by mtime and size."""
        if self.digest is not None and other.digest is not None:
            return self.digest == other.digest
        return self.mtime_ns == other.mtime_ns and self.size == other.size
