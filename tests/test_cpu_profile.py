"""The opt-in CPU record's reports: files ranked by CPU, and the tail of a run by worker."""

from __future__ import annotations

import json
from pathlib import Path

from tests import cpu_profile


def _record(tmp_path: Path, entries: list[dict[str, object]]) -> Path:
    path = tmp_path / "cpu.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    return path


def test_files_are_ranked_by_their_tests_cpu(tmp_path: Path) -> None:
    path = _record(
        tmp_path,
        [
            {"test": "tests/a.py::x", "wall": 1.0, "self": 0.5, "children": 0.0},
            {"test": "tests/b.py::y", "wall": 1.0, "self": 0.5, "children": 2.0},
            {"test": "tests/a.py::z", "wall": 1.0, "self": 1.0, "children": 0.0},
        ],
    )
    lines = cpu_profile.rank(path).splitlines()
    assert "total 4 CPU s" in lines[0]
    assert lines[1].split()[-1] == "tests/b.py" and lines[2].split()[-1] == "tests/a.py"


def test_the_tail_names_each_workers_end_and_the_tests_that_ended_last(tmp_path: Path) -> None:
    base = {"self": 0.1, "children": 0.0}
    path = _record(
        tmp_path,
        [
            {"test": "tests/a.py::early", "worker": "gw0", "started": 100.0, "wall": 5.0, **base},
            {"test": "tests/a.py::long", "worker": "gw1", "started": 101.0, "wall": 30.0, **base},
            {"test": "tests/b.py::late", "worker": "gw0", "started": 106.0, "wall": 2.0, **base},
        ],
    )
    lines = cpu_profile.tail(path).splitlines()
    assert lines[0] == "worker ends (s after the first test): gw0 8, gw1 31"
    assert lines[1].endswith("tests/a.py::long") and lines[2].endswith("tests/b.py::late")


def test_a_record_without_start_times_says_so(tmp_path: Path) -> None:
    path = _record(tmp_path, [{"test": "tests/a.py::x", "wall": 1.0, "self": 0.5, "children": 0.0}])
    assert "no start times" in cpu_profile.tail(path)
