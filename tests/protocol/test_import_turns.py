"""The SDK's import waits, between modules, while early calls want the interpreter; bounded, and only its own."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_codetools.protocol.import_turns import TurnTaking, taking_turns

BOUND_S = 10.0


class _Calm(threading.Event):
    """An event that says when someone waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        return super().wait(timeout)


@pytest.fixture
def module_name(tmp_path: Path) -> Iterator[str]:
    """A module no one imported yet, importable from tmp_path while the test runs."""
    name = f"turns_probe_{abs(hash(tmp_path))}"
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    try:
        yield name
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def _import_in_thread(name: str, calm: threading.Event, **bounds: float) -> tuple[threading.Thread, list[int]]:
    pauses: list[int] = []

    def run() -> None:
        with taking_turns(calm, **bounds) as turns:
            importlib.import_module(name)
        pauses.append(turns.pauses)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, pauses


def test_the_import_waits_while_calm_is_clear_and_goes_on_when_set(module_name: str) -> None:
    calm = _Calm()
    thread, pauses = _import_in_thread(module_name, calm, pause_s=BOUND_S * 6, budget_s=BOUND_S * 6)
    try:
        assert calm.waited.wait(BOUND_S)
        assert module_name not in sys.modules, "parked before the module was found"
    finally:
        calm.set()
        thread.join(BOUND_S)
    assert not thread.is_alive() and module_name in sys.modules
    assert pauses == [1]
    assert not any(isinstance(finder, TurnTaking) for finder in sys.meta_path), "the finder is gone after"


def test_a_calm_that_never_comes_does_not_stop_the_import(module_name: str) -> None:
    thread, pauses = _import_in_thread(module_name, threading.Event(), pause_s=0.001, budget_s=0.002)
    thread.join(BOUND_S)
    assert not thread.is_alive() and module_name in sys.modules
    assert pauses and pauses[0] >= 1


def test_other_threads_import_without_waiting(module_name: str) -> None:
    calm = _Calm()
    made: list[TurnTaking] = []
    maker = threading.Thread(target=lambda: made.append(TurnTaking(calm, BOUND_S * 6, BOUND_S * 6)))
    maker.start()
    maker.join(BOUND_S)
    assert made[0].find_spec(module_name) is None
    assert not calm.waited.is_set() and made[0].pauses == 0


def test_a_model_built_by_the_import_gives_way_too_and_pydantic_is_put_back() -> None:
    import pydantic

    hook = pydantic.BaseModel.__dict__["__pydantic_init_subclass__"]
    calm = _Calm()
    built: list[type] = []

    def run() -> None:
        with taking_turns(calm, pause_s=BOUND_S * 6, budget_s=BOUND_S * 6):

            class Probe(pydantic.BaseModel):
                value: int

            built.append(Probe)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert calm.waited.wait(BOUND_S), "a class statement imports nothing: the model's hook waited"
        assert not built
    finally:
        calm.set()
        thread.join(BOUND_S)
    assert built and built[0](value=1).value == 1
    assert pydantic.BaseModel.__dict__["__pydantic_init_subclass__"] is hook
