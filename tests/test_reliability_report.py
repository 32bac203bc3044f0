"""Running the tests writes no reliability report unless asked: a plain run never rewrites a tracked file."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from tests.reliability.report import REPORT_ENV, WRITE_COMMAND, Figures, requested_path, write_report


def test_by_default_no_report_is_written(tmp_path: Path) -> None:
    assert requested_path(None, {}, tmp_path) is None
    assert inspect.signature(write_report).parameters["path"].default is inspect.Parameter.empty


@pytest.mark.parametrize("off", ["", "0", "off", "false", " no "])
def test_switching_the_variable_off_writes_nothing(off: str, tmp_path: Path) -> None:
    assert requested_path(None, {REPORT_ENV: off}, tmp_path) is None


def test_the_option_or_the_variable_names_the_file_relative_to_the_start_folder(tmp_path: Path) -> None:
    assert requested_path("docs/r.md", {}, tmp_path) == tmp_path / "docs/r.md"
    assert requested_path(None, {REPORT_ENV: "/abs/r.md"}, tmp_path) == Path("/abs/r.md")
    assert requested_path("mine.md", {REPORT_ENV: "theirs.md"}, tmp_path) == tmp_path / "mine.md"


@pytest.mark.parametrize("switch", ["1", "force", "yes"])
def test_a_switch_of_the_old_kind_is_refused_rather_than_taken_for_a_file_name(switch: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="names the file to write"):
        requested_path(None, {REPORT_ENV: switch}, tmp_path)


def test_the_report_says_which_command_writes_it(tmp_path: Path) -> None:
    path = write_report(Figures(), wall_s=1.0, path=tmp_path / "r.md")
    text = path.read_text(encoding="utf-8")
    assert WRITE_COMMAND in text.splitlines()[2]
    assert "--reliability-report docs/reliability.md" in text


def test_a_rewrite_keeps_the_hand_kept_section(tmp_path: Path) -> None:
    from tests.reliability.report import KEPT_END, KEPT_START

    path = tmp_path / "r.md"
    path.write_text(f"old figures\n\n{KEPT_START}\n## Attack runs\n\n45 tried, 0 leaked\n{KEPT_END}\n")
    text = write_report(Figures(), wall_s=1.0, path=path).read_text(encoding="utf-8")
    assert "old figures" not in text
    assert text.endswith(f"{KEPT_START}\n## Attack runs\n\n45 tried, 0 leaked\n{KEPT_END}\n")
    assert write_report(Figures(), wall_s=1.0, path=path).read_text(encoding="utf-8").count(KEPT_START) == 1
