"""Which confined open is used: openat2 (Linux), O_NOFOLLOW_ANY (macOS 11+, probed), else the walk.

The race tests themselves (test_confinement.py) run with each method this system has; these check that
a flag is trusted only when it really refuses a link in the middle of a path, so a system that ignores
an unknown open flag (as Linux's openat does) can never be taken for one that refuses links.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from mcp_codetools.files import opening
from mcp_codetools.files.paths import Workspace

DARWIN = sys.platform == "darwin"


def test_a_flag_that_refuses_only_the_last_link_is_not_trusted() -> None:
    assert not opening._refuses_links_anywhere(os.O_NOFOLLOW)
    assert not opening._refuses_links_anywhere(0)


@pytest.mark.skipif(DARWIN, reason="macOS knows O_NOFOLLOW_ANY")
def test_a_flag_the_kernel_ignores_is_not_trusted() -> None:
    # Linux's openat ignores unknown flags: with macOS's value it follows links like a plain open.
    assert not opening._refuses_links_anywhere(opening._DARWIN_O_NOFOLLOW_ANY)
    assert opening._nofollow_any() is None


def test_the_walk_is_reported_when_the_one_call_open_is_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opening, "use_one_call", False)
    assert opening.method() == "walk"


def test_the_method_is_the_one_this_system_has(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opening, "use_one_call", True)
    expected = "openat2" if opening._syscall is not None else "O_NOFOLLOW_ANY" if DARWIN else "walk"
    if DARWIN and opening._nofollow_any() is None:
        pytest.skip("a macOS before 11: no O_NOFOLLOW_ANY")
    assert opening.method() == expected


@pytest.mark.skipif(not DARWIN, reason="O_NOFOLLOW_ANY is macOS's (11+)")
def test_o_nofollow_any_refuses_a_link_in_the_middle_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if opening._nofollow_any() is None:
        pytest.skip("a macOS before 11: no O_NOFOLLOW_ANY")
    monkeypatch.setattr(opening, "use_one_call", True)
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("inside\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("secret\n", encoding="utf-8")
    (root / "l").symlink_to(outside)
    workspace = Workspace([root.resolve()])
    opened: list[int] = []
    real_walk = opening._walk
    monkeypatch.setattr(opening, "_walk", lambda *args: opened.append(1) or real_walk(*args))
    fd = opening.open_beneath(root.resolve() / "d" / "f.txt", workspace, os.O_RDONLY)
    os.close(fd)
    with pytest.raises(OSError) as caught:
        opening.open_beneath(root.resolve() / "l" / "f.txt", workspace, os.O_RDONLY)
    assert caught.value.errno == errno.ELOOP
    assert opened == [], "the walk ran: the one-call open was not used"


def test_the_path_below_a_root_is_what_relative_to_gives() -> None:
    for path, root in [("/", "/"), ("/a", "/"), ("/a/b c/d", "/a"), ("/a/b", "/a/b"), ("/ab/c", "/ab")]:
        expected = "." if Path(path) == Path(root) else str(Path(path).relative_to(root))
        assert opening._below(path, root) == expected
