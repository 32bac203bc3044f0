"""
A hostile workspace for fuzzing, and a snapshot of everything outside it.

`build(tmp)` fills `tmp/ws` (the root the tests' `root` fixture gives) with every kind of file the
attack list names (peers.md 4.7): text in several encodings, binary, empty, a long line, a read-only
file, a FIFO, a socket, symlinks that stay inside, leave the root, dangle out of it, chain and loop,
and a `pre.sh` that would leave a marker outside if a search tool ever ran it. Beside the root it
makes the siblings whose names start like the root's (`ws2`, `ws-old`, `ws"`, ...) and a fake HOME,
so `~` leads outside too. `Snapshot.of(tmp, exclude=root)` records names, types, link targets and bytes
of everything outside the root; comparing two snapshots shows any write that escaped.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CANARY = ".reliability-canary-5f1c"
TOP_NAMES = (
    "text.txt",
    "crlf.txt",
    "mixed.txt",
    "bom.txt",
    "latin1.txt",
    "utf16.txt",
    "binary.bin",
    "nul.txt",
    "empty.txt",
    "many.txt",
    "wide.txt",
    "dollar.txt",
    "unicode-\u00e9\u0301.txt",
    "sub",
    "node_modules",
    ".gitignore",
    "readonly.txt",
    "pre.sh",
    "fifo",
    "sock",
    "link_in",
    "link_dir_in",
    "link_out",
    "link_dir_out",
    "dangling_out",
    "dangling_dir_out",
    "chain",
    "loop_a",
    "loop_b",
    "link_etc",
    "link_home",
    "link_proc",
    "link_zero",
    "link_sibling",
)
NAMES = (
    *TOP_NAMES,
    "sub/inner.py",
    "sub/deeper/leaf.md",
    "link_dir_out/secret.txt",
    "link_dir_out/new.txt",
    "link_dir_in/inner.py",
    "node_modules/dep.js",
)
"""Names inside the root that the path strategies pick from."""
SIBLING_NAMES = ("ws2", "ws-old", "ws_sibling", 'ws"', "ws'", "ws ", "WS")
SECRET_MARKERS = ("top secret", "PRIVATE KEY", "sibling ws", "outside dir file", "root:x:0:0", "# bashrc")
"""Text found only in files outside the root: a result holding one leaked outside content."""
TEMP_NAME = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$")
"""The temporary files fileio's atomic write makes: `.<name>.<12 hex>.tmp`."""


@dataclass(frozen=True)
class Layout:
    tmp: Path
    root: Path
    outside: Path
    home: Path
    canary: Path

    def expand(self, value: Any) -> Any:
        """Replace the placeholders the strategies use ({ROOT}, {OUT}, {TMP}) in every string of `value`."""
        if isinstance(value, str):
            return (
                value.replace("{ROOT}", str(self.root))
                .replace("{OUT}", str(self.outside))
                .replace("{TMP}", str(self.tmp))
            )
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if isinstance(value, dict):
            return {self.expand(k): self.expand(v) for k, v in value.items()}
        return value


def build(tmp: Path, root: Path, outside: Path) -> Layout:
    """Fill `root` and its surroundings; `root` and `outside` already exist (the shared fixtures)."""
    home = tmp / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n", encoding="utf-8")
    (home / ".bashrc").write_text("# bashrc\n", encoding="utf-8")
    for name in SIBLING_NAMES:
        sibling = tmp / name
        sibling.mkdir(exist_ok=True)
        (sibling / "f.txt").write_text(f"sibling {name}\n", encoding="utf-8")
    (outside / "dir").mkdir()
    (outside / "dir" / "f.txt").write_text("outside dir file\n", encoding="utf-8")

    r = root
    (r / "text.txt").write_text("hello world\nsecond line\nthird line\n", encoding="utf-8")
    (r / "crlf.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    (r / "mixed.txt").write_bytes(b"one\r\ntwo\nthree")
    (r / "bom.txt").write_bytes(b"\xef\xbb\xbfwith bom\n")
    (r / "latin1.txt").write_bytes(b"caf\xe9 cr\xe8me\n")
    (r / "utf16.txt").write_bytes("utf sixteen\n".encode("utf-16"))
    (r / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (r / "nul.txt").write_bytes(b"text\x00with nul\n")
    (r / "empty.txt").write_bytes(b"")
    (r / "many.txt").write_text("".join(f"line {i}\n" for i in range(3000)), encoding="utf-8")
    (r / "wide.txt").write_text("w" * 150_000 + "\n", encoding="utf-8")
    (r / "dollar.txt").write_text("price = $1 and \\1 and \\g<0>\n", encoding="utf-8")
    (r / "unicode-\u00e9\u0301.txt").write_text("nfd name\n", encoding="utf-8")
    (r / "sub" / "deeper").mkdir(parents=True)
    (r / "sub" / "inner.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    (r / "sub" / "deeper" / "leaf.md").write_text("# leaf\n", encoding="utf-8")
    (r / "node_modules").mkdir()
    (r / "node_modules" / "dep.js").write_text("module.exports = 1\n", encoding="utf-8")
    (r / ".gitignore").write_text("node_modules/\n", encoding="utf-8")
    read_only = r / "readonly.txt"
    read_only.write_text("read only\n", encoding="utf-8")
    read_only.chmod(0o444)
    pre = r / "pre.sh"
    pre.write_text(f"#!/bin/sh\ntouch '{outside}/PWNED-by-pre'\ncat \"$1\"\n", encoding="utf-8")
    pre.chmod(0o755)
    os.mkfifo(r / "fifo")
    _make_socket(r / "sock")
    links = {
        "link_in": "sub/inner.py",
        "link_dir_in": "sub",
        "link_out": str(outside / "secret.txt"),
        "link_dir_out": str(outside),
        "dangling_out": str(outside / "new.txt"),
        "dangling_dir_out": str(outside / "newdir" / "f.txt"),
        "chain": "link_out",
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "link_etc": "/etc/passwd",
        "link_home": str(home / ".bashrc"),
        "link_proc": "/proc/self/environ",
        "link_zero": "/dev/zero",
        "link_sibling": str(tmp / "ws2" / "f.txt"),
    }
    for name, target in links.items():
        os.symlink(target, r / name)
    canary = r / CANARY
    canary.write_text("canary\n", encoding="utf-8")
    present = {p.name for p in r.iterdir()}
    assert set(TOP_NAMES) <= present, f"workspace names out of date: {sorted(present - set(TOP_NAMES))}"
    return Layout(tmp, root, outside, home, canary)


def _make_socket(path: Path) -> None:
    """A unix socket file at `path` (bound at a short name first: socket paths are limited to 107 bytes)."""
    short = Path(tempfile.mkdtemp(prefix="rs-")) / "s"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(short))
        os.rename(short, path)
    finally:
        sock.close()
        shutil.rmtree(short.parent, ignore_errors=True)


@dataclass(frozen=True)
class Entry:
    kind: str
    detail: bytes | str | int


class Snapshot:
    """Names, kinds, link targets, modes and bytes of a tree (FIFOs and sockets by kind only)."""

    def __init__(self, entries: dict[str, Entry]) -> None:
        self.entries = entries

    @classmethod
    def of(cls, top: Path, *, exclude: Path | None = None) -> Snapshot:
        entries: dict[str, Entry] = {}
        for folder, dirs, files in os.walk(top):
            here = Path(folder)
            if exclude is not None and here == exclude:
                dirs[:] = []
                continue
            for name in [*dirs, *files]:
                path = here / name
                if exclude is not None and path == exclude:
                    continue
                entries[str(path.relative_to(top))] = _entry(path)
        return cls(entries)

    def changes(self, other: Snapshot) -> list[str]:
        """What differs from `other`, as readable lines (empty: identical)."""
        lines = []
        for name in sorted(self.entries.keys() | other.entries.keys()):
            before, after = self.entries.get(name), other.entries.get(name)
            if before != after:
                lines.append(f"{name}: {_show(before)} -> {_show(after)}")
        return lines


def _entry(path: Path) -> Entry:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return Entry("link", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return Entry("dir", stat.S_IMODE(st.st_mode))
    if stat.S_ISREG(st.st_mode):
        return Entry("file", path.read_bytes() + f"|mode={stat.S_IMODE(st.st_mode):o}".encode())
    return Entry("special", stat.S_IFMT(st.st_mode))


def _show(entry: Entry | None) -> str:
    if entry is None:
        return "absent"
    detail = entry.detail
    if isinstance(detail, bytes) and len(detail) > 60:
        detail = detail[:60] + b"..."
    return f"{entry.kind}({detail!r})"


def temp_leftovers(top: Path) -> list[Path]:
    """Temporary files of the atomic write left anywhere under `top`."""
    found = []
    for folder, _dirs, files in os.walk(top):
        found += [Path(folder) / name for name in files if TEMP_NAME.match(name)]
    return found
