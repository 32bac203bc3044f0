"""Read: numbering, paging, caps, encodings, special files and the re-read notice."""

from __future__ import annotations

import errno
import os
import socket
import sys
from pathlib import Path

import anyio
import pytest

from mcp_codetools.files import view as fileview
from mcp_codetools.files.paths import is_within
from mcp_codetools.files.text import SAMPLE_BYTES, number_line
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools
from tests.conftest import Caller

pytestmark = pytest.mark.anyio


def lines_file(path: Path, count: int, width: int = 10) -> Path:
    path.write_text("".join(f"line {i:0{width}d}\n" for i in range(1, count + 1)), encoding="utf-8")
    return path


async def test_lines_are_numbered_from_the_real_line_number(call: Caller, root: Path) -> None:
    f = lines_file(root / "f.txt", 10)
    text = await call.ok("Read", {"file_path": str(f), "offset": 4, "limit": 2})
    assert text == "4\tline 0000000004\n5\tline 0000000005"


async def test_relative_path_resolves_against_the_working_directory(call: Caller, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "a.py").write_text("x = 1\n", encoding="utf-8")
    assert await call.ok("Read", {"file_path": "sub/a.py"}) == "1\tx = 1"


async def test_default_view_is_2000_lines_and_says_how_to_continue(call: Caller, root: Path) -> None:
    f = lines_file(root / "big.txt", 2500, width=4)
    out = await call("Read", {"file_path": str(f)})
    body = out.text.split("\n")
    assert body[1999] == "2000\tline 2000"
    assert "2001\t" not in out.text
    assert "Call Read with offset=2001" in out.text
    assert out.meta["totalLines"] == 2500
    assert out.meta["nextOffset"] == 2001


async def test_long_lines_are_cut_with_a_marker(call: Caller, root: Path) -> None:
    f = root / "long.txt"
    f.write_text("x" * 5000 + "\nshort\n", encoding="utf-8")
    text = await call.ok("Read", {"file_path": str(f)})
    first, second = text.split("\n")[:2]
    assert first.startswith("1\t" + "x" * 2000 + "…")
    assert "5000 characters" in first
    assert second == "2\tshort"
    assert "[1 line longer than 2000 characters cut; 3,000 characters hidden." in text, text[-400:]


async def test_a_view_larger_than_the_token_budget_is_cut_with_the_next_offset(
    session: CodeSession, root: Path
) -> None:
    small = Settings(roots=(root,), max_result_tokens=1000)
    call = Caller(Pipeline(default_tools()), CodeSession(small))
    f = lines_file(root / "f.txt", 1000, width=40)
    out = await call("Read", {"file_path": str(f)})
    assert not out.is_error
    assert len(out.text) <= 4000
    last_shown = out.meta["startLine"] + out.meta["numLines"] - 1
    assert f"offset={last_shown + 1} limit={out.meta['numLines']}" in out.text
    assert out.meta["truncated"] is True
    # The next page starts exactly where this one stopped.
    nxt = await call.ok("Read", {"file_path": str(f), "offset": last_shown + 1, "limit": out.meta["numLines"]})
    assert nxt.startswith(f"{last_shown + 1}\t")


async def test_pages_join_back_into_the_file(call: Caller, root: Path) -> None:
    f = lines_file(root / "f.txt", 95)
    seen: list[str] = []
    offset = 1
    while offset <= 95:
        out = await call("Read", {"file_path": str(f), "offset": offset, "limit": 10})
        seen += [line.split("\t", 1)[1] for line in out.text.split("\n")]
        offset += 10
    assert "\n".join(seen) + "\n" == f.read_text(encoding="utf-8")


async def test_end_of_a_large_file_is_read_without_loading_it(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = root / "large.log"
    f.write_bytes(b"".join(b"entry %d\n" % i for i in range(1, 500_001)))
    assert f.stat().st_size > fileview.WHOLE_FILE_BYTES

    def refuse(fd: int, size: int) -> bytes:
        raise AssertionError("a large file must not be read whole")

    monkeypatch.setattr(fileview, "_read_all", refuse)
    text = await call.ok("Read", {"file_path": str(f), "offset": 499_901, "limit": 100})
    lines = text.split("\n")
    assert lines[0] == "499901\tentry 499901"
    assert lines[-1] == "500000\tentry 500000"
    # A second, deeper view uses the cached index and agrees.
    again = await call.ok("Read", {"file_path": str(f), "offset": 150_000, "limit": 2})
    assert again == "150000\tentry 150000\n150001\tentry 150001"


async def test_large_file_without_final_newline_counts_its_last_line(call: Caller, root: Path) -> None:
    f = root / "large.txt"
    f.write_bytes(b"".join(b"row %d\n" % i for i in range(1, 700_001)) + b"tail")
    assert f.stat().st_size > fileview.WHOLE_FILE_BYTES
    out = await call("Read", {"file_path": str(f), "offset": 700_001})
    assert out.text == "700001\ttail"
    assert out.meta["totalLines"] == 700_001


async def test_empty_file_and_offset_past_the_end_are_notices(call: Caller, root: Path) -> None:
    empty = root / "empty.txt"
    empty.write_bytes(b"")
    assert "empty" in await call.ok("Read", {"file_path": str(empty)})
    f = lines_file(root / "f.txt", 3)
    text = await call.ok("Read", {"file_path": str(f), "offset": 10})
    assert "3 lines" in text and "past its end" in text


async def test_missing_file_names_the_cwd_and_a_similar_file(call: Caller, root: Path) -> None:
    (root / "one.ts").write_text("x\n", encoding="utf-8")
    out = await call.fails("Read", {"file_path": str(root / "one.tsx")})
    assert out.meta["errorCode"] == "file_not_found"
    assert f"current working directory is {root}" in out.text
    assert "Did you mean" in out.text and "one.ts" in out.text


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems match either spelling of a name")
async def test_missing_file_whose_name_exists_in_another_unicode_spelling_says_so(call: Caller, root: Path) -> None:
    decomposed = root / "cafe\u0301.txt"  # NFD, as macOS once stored names
    decomposed.write_text("x\n", encoding="utf-8")
    out = await call.fails("Read", {"file_path": str(root / "caf\u00e9.txt")})
    assert out.meta["errorCode"] == "file_not_found"
    assert f"A file {decomposed} exists whose name looks the same" in out.text, out.text
    assert "Did you mean" not in out.text


async def test_directory_is_refused(call: Caller, root: Path) -> None:
    out = await call.fails("Read", {"file_path": str(root)})
    assert "is a directory" in out.text


async def test_fifo_is_refused_without_blocking(call: Caller, root: Path) -> None:
    fifo = root / "pipe"
    os.mkfifo(fifo)
    with anyio.fail_after(5):
        out = await call.fails("Read", {"file_path": str(fifo)})
    assert "FIFO" in out.text


async def test_socket_is_refused(call: Caller, root: Path, tmp_path: Path) -> None:
    path = root / "s.sock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        out = await call.fails("Read", {"file_path": str(path)})
        assert "socket" in out.text
    finally:
        sock.close()


async def test_binary_is_detected_from_bytes_not_the_name(call: Caller, root: Path) -> None:
    binary = root / "notes.txt"
    binary.write_bytes(b"\x00\x01\x02binary\x00data" * 10)
    out = await call.fails("Read", {"file_path": str(binary)})
    assert out.meta["errorCode"] == "binary_file"
    text_named_bin = root / "data.bin"
    text_named_bin.write_text("plain text\n", encoding="utf-8")
    assert await call.ok("Read", {"file_path": str(text_named_bin)}) == "1\tplain text"
    png = root / "img.txt"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    assert "PNG" in (await call.fails("Read", {"file_path": str(png)})).text


@pytest.mark.parametrize(
    ("raw", "expected", "note"),
    [
        ("héllo\n".encode(), "1\théllo", None),
        (b"\xef\xbb\xbfbom text\n", "1\tbom text", "BOM"),
        ("utf16 ✓\n".encode("utf-16"), "1\tutf16 ✓", "UTF-16"),
        (b"caf\xe9 latin\n", "1\tcafé latin", "latin-1"),
        (b"a\r\nb\r\n", "1\ta\n2\tb", None),
    ],
)
async def test_encodings_decode_and_are_named(
    call: Caller, root: Path, raw: bytes, expected: str, note: str | None
) -> None:
    f = root / "enc.txt"
    f.write_bytes(raw)
    text = await call.ok("Read", {"file_path": str(f)})
    assert text.endswith(expected)
    if note:
        assert note in text.split("\n")[0]


async def test_rereading_an_unchanged_range_returns_a_notice_once(call: Caller, root: Path) -> None:
    f = lines_file(root / "f.txt", 5)
    first = await call.ok("Read", {"file_path": str(f)})
    second = await call("Read", {"file_path": str(f)})
    assert "unchanged since your last Read" in second.text
    assert second.meta["unchanged"] is True
    # Asking again means the earlier result is gone: the content comes back.
    assert await call.ok("Read", {"file_path": str(f)}) == first


async def test_a_changed_file_or_another_range_is_read_again(call: Caller, root: Path) -> None:
    f = lines_file(root / "f.txt", 5)
    await call.ok("Read", {"file_path": str(f)})
    assert (await call.ok("Read", {"file_path": str(f), "limit": 2})).startswith("1\t")
    f.write_text("new\n", encoding="utf-8")
    os.utime(f, ns=(1, 1))
    assert await call.ok("Read", {"file_path": str(f), "limit": 2}) == "1\tnew"


async def test_paths_outside_the_roots_are_refused(call: Caller, root: Path, outside: Path) -> None:
    secret = outside / "secret.txt"
    for raw in (str(secret), f"{root}/../outside/secret.txt", "../outside/secret.txt"):
        out = await call.fails("Read", {"file_path": raw})
        assert out.meta["errorCode"] == "permission_denied", raw
        assert "top secret" not in out.text


async def test_sibling_with_the_roots_name_as_prefix_is_outside(call: Caller, root: Path) -> None:
    sibling = root.parent / (root.name + "2")
    sibling.mkdir()
    (sibling / "f.txt").write_text("nope\n", encoding="utf-8")
    out = await call.fails("Read", {"file_path": str(sibling / "f.txt")})
    assert out.meta["errorCode"] == "permission_denied"


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("/ws/proj", "/ws/proj"),
        ("/ws/proj/a/b", "/ws/proj"),
        ("/ws/proj2", "/ws/proj"),
        ("/ws/proj2/a", "/ws/proj"),
        ("/ws", "/ws/proj"),
        ("/ws/pro", "/ws/proj"),
        ("/anything", "/"),
        ("/", "/"),
    ],
)
def test_containment_goes_by_whole_components(path: str, root: str) -> None:
    expected = Path(path) == Path(root) or Path(path).is_relative_to(Path(root))
    assert is_within(Path(path), Path(root)) is expected


async def test_symlink_inside_the_root_pointing_outside_is_refused(call: Caller, root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dirlink").symlink_to(outside)
    for raw in (root / "link.txt", root / "dirlink" / "secret.txt"):
        out = await call.fails("Read", {"file_path": str(raw)})
        assert out.meta["errorCode"] == "permission_denied"
        assert "top secret" not in out.text


async def test_symlink_inside_the_root_to_inside_is_allowed(call: Caller, root: Path) -> None:
    (root / "real.txt").write_text("ok\n", encoding="utf-8")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert await call.ok("Read", {"file_path": str(root / "alias.txt")}) == "1\tok"


async def test_symlink_loop_is_an_error_not_a_hang(call: Caller, root: Path) -> None:
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    with anyio.fail_after(5):
        out = await call.fails("Read", {"file_path": str(root / "a")})
    assert out.is_error


async def test_nul_byte_and_empty_paths_are_input_errors(call: Caller, root: Path) -> None:
    assert (await call.fails("Read", {"file_path": f"{root}/a\x00b"})).meta["errorCode"] == "invalid_input"
    assert (await call.fails("Read", {"file_path": ""})).meta["errorCode"] == "invalid_input"


async def test_the_sessions_own_scratch_folder_is_readable_but_not_writable(call: Caller) -> None:
    saved = call.session.scratch_dir / "output.log"
    saved.write_text("full output\n", encoding="utf-8")
    assert await call.ok("Read", {"file_path": str(saved)}) == "1\tfull output"
    out = await call.fails("Write", {"file_path": str(saved), "content": "x"})
    assert out.meta["errorCode"] == "permission_denied"
    out = await call.fails("Edit", {"file_path": str(saved), "old_string": "full", "new_string": "x"})
    assert out.meta["errorCode"] == "permission_denied"
    assert saved.read_text(encoding="utf-8") == "full output\n"


@pytest.mark.parametrize("small", [True, False], ids=["sample", "large view"])
async def test_an_io_error_while_reading_is_an_error_result_that_says_so(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch, small: bool
) -> None:
    f = lines_file(root / "f.txt", 10 if small else 600_000)
    real_pread = os.pread
    calls = 0

    def failing_pread(fd: int, size: int, offset: int) -> bytes:
        nonlocal calls
        calls += 1
        if small or calls > 1:  # the large file: the sample read works, the view's read fails
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", failing_pread)
    out = await call.fails("Read", {"file_path": str(f)})
    assert out.meta["errorCode"] == "execution_failed"
    assert out.text == f"Cannot read {f}: {os.strerror(errno.EIO)}"


def test_numbering_in_one_pass_shows_every_line_as_line_by_line_numbering_does() -> None:
    # Plain lines take a one-pass path; CR, undecodable bytes, over-long lines and the budget must come out
    # exactly as `number_line` shows them one at a time.
    pieces = ["a", "b ", "\r", "é", "\udcff", "x" * (fileview.MAX_LINE_CHARS + 5), "\t", ""]
    cases = [[pieces[(i * 7 + j * 3) % len(pieces)] * (1 + j % 2) for j in range(i % 9)] for i in range(400)]
    cases.append(["plain line"] * 50)
    for n, lines in enumerate(cases):
        first, max_lines, budget = 1 + n % 3, n % 11, (n * 37) % 400
        expected: list[str] = []
        used, cut = 0, False
        for i, line in enumerate(lines[first - 1 : first - 1 + max_lines]):
            rendered = number_line(first + i, line)
            used += len(rendered) + 1
            if used > budget and expected:
                cut = True
                break
            expected.append(rendered)
        assert fileview._take(lines, first, max_lines, budget) == (expected, cut), (lines, first, max_lines, budget)


@pytest.mark.parametrize("size", [0, 50, SAMPLE_BYTES - 1, SAMPLE_BYTES, SAMPLE_BYTES + 1])
async def test_a_short_file_is_read_once_and_every_size_reads_whole(
    call: Caller, root: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """The first read of a file shorter than the sample reached its end: no second read of the same bytes."""
    body = ("abcdefg\n" * (size // 8 + 1))[:size]
    (root / "f.txt").write_text(body, encoding="utf-8")
    reads: list[int] = []
    real_pread = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        reads.append(offset)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", counting)
    text = await call.ok("Read", {"file_path": "f.txt", "limit": 5000})
    assert len(reads) == (1 if size < SAMPLE_BYTES else 3), reads
    expected = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    assert (f"{expected}\t" in text) if expected else "is empty" in text, text[-200:]


async def test_line_endings_are_told_by_the_bytes(call: Caller, root: Path) -> None:
    (root / "crlf.txt").write_bytes("é one\r\ntwo\r\nthree\n".encode())
    (root / "latin.txt").write_bytes(b"\xe9\r\nb\r\n")
    out = await call("Read", {"file_path": "crlf.txt"})
    assert out.meta["newline"] == "crlf" and out.meta["encoding"] == "utf-8", out.meta
    out = await call("Read", {"file_path": "latin.txt"})
    assert out.meta["newline"] == "crlf" and out.meta["encoding"] == "latin-1", out.meta


@pytest.mark.parametrize(("head", "kind"), [(b"\x7fELF\x02\x01", "ELF executable"), (b"\x1f\x8b\x08", "gzip archive")])
async def test_a_known_binary_header_is_named(call: Caller, root: Path, head: bytes, kind: str) -> None:
    (root / "notes.txt").write_bytes(head + b"text after the header\n" * 4)
    out = await call.fails("Read", {"file_path": "notes.txt"})
    assert out.meta["errorCode"] == "binary_file" and kind in out.text, out.text
