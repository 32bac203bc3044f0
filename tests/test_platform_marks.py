"""The tests that read /proc are found from their sources, helpers shared between modules included."""

from __future__ import annotations

from pathlib import Path

from tests.platform_marks import proc_names, reads_proc

TESTS = Path(__file__).resolve().parent
CONFTESTS = [TESTS / "conftest.py"]


def test_helpers_that_read_proc_are_found_directly_and_through_other_helpers() -> None:
    # tests/processes.py reads /proc only where it is mounted (WORKS_WITHOUT_PROC): its users are not marked.
    assert proc_names(TESTS / "processes.py") == frozenset()
    assert "children_of_this_process" not in proc_names(TESTS / "tools" / "test_bash.py")
    # tests/cmdlines.py reads /proc: a name imported from it marks the importing module's users.
    assert "processes_with" in proc_names(TESTS / "cmdlines.py")
    assert "processes_with" in proc_names(TESTS / "tools" / "test_bash_sandbox.py")
    assert "processes_with" in proc_names(TESTS / "shell" / "test_sandbox.py")


def test_names_imported_from_a_module_that_reads_proc_count() -> None:
    disconnect = proc_names(TESTS / "reliability" / "test_disconnect.py")
    assert disconnect, "test_disconnect reads the process table itself and through the harness"
    harness = proc_names(TESTS / "reliability" / "harness.py")
    assert "procfs" in harness and "no_live_children" in harness


def test_a_test_is_marked_by_its_own_source_or_its_fixtures() -> None:
    sandbox = TESTS / "shell" / "test_sandbox.py"
    assert reads_proc(sandbox, "test_bwrap_leaves_no_process_behind", ["tmp_path"], CONFTESTS)
    assert not reads_proc(sandbox, "test_bwrap_has_a_private_tmp", ["tmp_path"], CONFTESTS)
    seatbelt = TESTS / "shell" / "test_seatbelt.py"
    assert not reads_proc(seatbelt, "test_masked_paths_are_unreadable_and_what_is_around_them_readable",
                          ["layout", "tmp_path"], CONFTESTS)  # fmt: skip
    reliability = TESTS / "reliability" / "conftest.py"
    fixtures = [name for name in proc_names(reliability) if not name.startswith("test_")]
    assert fixtures, "the reliability fixtures wait for the server children through the process table"
