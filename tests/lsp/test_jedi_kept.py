"""jedi's analysis kept between requests (lsp/jedi_kept.py): kept while nothing changed, dropped when anything did."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_codetools.lsp import jedi_kept
from mcp_codetools.lsp.jedi_kept import Documents, KeptState, project_fingerprint
from mcp_codetools.lsp.servers import KEPT_ENTRY, python_server
from tests.conftest import Caller


class _Made:
    """Stands for an InferenceState: which project it was made for."""

    def __init__(self, project: Any, environment: Any = None, script_path: Any = None) -> None:
        self.project = project


class _Document:
    def __init__(self, path: Path, source: str, version: int) -> None:
        self.path, self.source, self.version = str(path), source, version


def test_the_same_key_gets_the_same_state_and_a_new_key_a_new_one() -> None:
    kept, project = KeptState(_Made), object()
    kept.wanted = ("root", (), ())
    first = kept.factory(project)
    kept.wanted = ("root", (), ())
    assert kept.factory(project) is first
    kept.wanted = ("root", (("a.py", 1, 2),), ())
    assert kept.factory(project) is not first


def test_a_script_made_without_a_key_gets_a_state_nobody_keeps() -> None:
    kept, project = KeptState(_Made), object()
    kept.wanted = ("root", (), ())
    first = kept.factory(project)
    loose = kept.factory(project)  # the key is used once: a walk that went past its bounds gives none
    assert loose is not first
    kept.wanted = ("root", (), ())
    assert kept.factory(project) is first


def test_a_script_made_on_another_thread_never_shares_the_state() -> None:
    kept, project, made = KeptState(_Made), object(), []
    kept.wanted = ("root", (), ())
    first = kept.factory(project)
    kept.wanted = ("root", (), ())
    worker = threading.Thread(target=lambda: made.append(kept.factory(project)))
    worker.start()
    worker.join(timeout=10)
    assert made and made[0] is not first
    assert kept.factory(project) is first  # the main thread's key was left for it


def test_a_state_is_dropped_after_its_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jedi_kept, "MAX_USES", 2)
    kept, project = KeptState(_Made), object()
    states = []
    for _ in range(3):
        kept.wanted = ("root", (), ())
        states.append(kept.factory(project))
    assert states[0] is states[1] and states[2] is not states[0]


def test_the_fingerprint_changes_with_a_file_and_a_new_one(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "mod.py"
    module.write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not Python\n", encoding="utf-8")
    first = project_fingerprint(str(tmp_path))
    assert first is not None and [Path(path).name for path, _, _ in first] == ["mod.py"]
    (tmp_path / "notes.txt").write_text("still not Python\n", encoding="utf-8")
    assert project_fingerprint(str(tmp_path)) == first
    module.write_text("x = 22\n", encoding="utf-8")
    changed = project_fingerprint(str(tmp_path))
    assert changed != first
    (tmp_path / "pkg" / "new.py").write_text("", encoding="utf-8")
    assert project_fingerprint(str(tmp_path)) not in (first, changed)


def test_a_project_too_big_to_walk_has_no_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jedi_kept, "MAX_WALK_FILES", 2)
    for n in range(4):
        (tmp_path / f"m{n}.py").write_text("", encoding="utf-8")
    assert project_fingerprint(str(tmp_path)) is None


def test_only_documents_that_differ_from_their_files_count(tmp_path: Path) -> None:
    path = tmp_path / "mod.py"
    path.write_text("x = 1\n", encoding="utf-8")
    documents, disk = Documents(), project_fingerprint(str(tmp_path))
    opened = {path.as_uri(): _Document(path, "x = 1\n", 1)}
    assert documents.key(opened, disk) == ()  # opening a file as it is changes nothing jedi read
    edited = {path.as_uri(): _Document(path, "x = 2\n", 2)}
    assert documents.key(edited, disk) == ((path.as_uri(), 2),)
    path.write_text("x = 3\n", encoding="utf-8")  # the document that matched its file no longer does
    os.utime(path, ns=(1, 1))
    assert documents.key(opened, project_fingerprint(str(tmp_path))) == ((path.as_uri(), 1),)


def test_the_built_in_server_is_started_through_the_kept_entry() -> None:
    spec = python_server()
    assert spec is not None and str(KEPT_ENTRY) in spec.command[-1]
    assert KEPT_ENTRY.is_file()
    # Edits do not wait for its diagnostics (the syntax check says the same): it is not asked to make them.
    assert spec.initialization_options == {"diagnostics": {"enable": False}}


@pytest.mark.anyio
async def test_references_follow_files_changed_on_disk_and_documents_edited(call: Caller, root: Path) -> None:
    pkg = root / "shapes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "geometry.py").write_text("def area(w, h):\n    return w * h\n", encoding="utf-8")
    use = pkg / "use.py"
    use.write_text("from shapes.geometry import area\n\n\ndef room():\n    return area(3, 4)\n", encoding="utf-8")
    geometry = pkg / "geometry.py"
    ask = {"operation": "findReferences", "file_path": str(use), "line": 5, "character": 12}
    with anyio.fail_after(90):
        first = await call.ok("LSP", ask)
        # Rewritten behind the server's back (as a Bash command would): the kept analysis read the old text.
        geometry.write_text("import math\n\n\ndef area(w, h):\n    return w * h\n", encoding="utf-8")
        second = await call.ok("LSP", ask)
        await call.ok("Read", {"file_path": str(use)})
        await call.ok(
            "Edit", {"file_path": str(use), "old_string": "area(3, 4)", "new_string": "area(3, 4) + area(1, 1)"}
        )
        third = await call.ok("LSP", ask)
    assert "shapes/geometry.py:1:5" in first
    assert "shapes/geometry.py:4:5" in second and "shapes/geometry.py:1:5" not in second
    assert "shapes/use.py:5:25" not in second and "shapes/use.py:5:25" in third
