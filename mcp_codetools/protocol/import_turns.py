"""The SDK's import at a start from the snapshot, paused between modules while early calls want the interpreter.

The import (~0.6 s of CPU in one thread) shares the interpreter lock with the event loop that answers the
early calls: a call that comes meanwhile gets it in 5 ms turns at best, and not at all while pydantic-core
builds a model. Here the importing thread waits, before each module it imports and after each pydantic
model it builds, while `calm` is clear (a call runs or a line waits). Modules alone are too coarse: the
SDK's type modules build hundreds of models each, 270–380 ms of CPU apiece without an import between; with
the models, the longest stretch without a turn is ~50 ms and 95% of the import's CPU lies in stretches under
20 ms. Each wait and their sum are bounded, so the import always goes on, and the caller keeps `calm` set
once a line needs the SDK, which is then never kept waiting by early calls.

A paused import holds the import locks of the modules it is inside; a call that imports one of those
waits for the pause's bound, no longer.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

PAUSE_S = 0.05
"""The longest one wait before a module: a call longer than that shares the interpreter again."""
BUDGET_S = 1.0
"""The longest all the waits of one import together."""


class TurnTaking:
    """A finder first on `sys.meta_path` that finds nothing: it only makes one thread wait for `calm`."""

    def __init__(self, calm: threading.Event, pause_s: float = PAUSE_S, budget_s: float = BUDGET_S) -> None:
        self._calm = calm
        self._thread = threading.get_ident()
        self._pause_s = pause_s
        self._left_s = budget_s
        self.pauses = 0
        """How many times the import waited (for the log and the tests)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """Nothing found, after the watched thread's turn was given away (`turn`)."""
        self.turn()
        return None

    def turn(self) -> None:
        """In the watched thread: wait for `calm` (bounded); in any other, nothing."""
        if threading.get_ident() != self._thread or self._calm.is_set() or self._left_s <= 0:
            return
        began = time.monotonic()
        self._calm.wait(min(self._pause_s, self._left_s))
        self._left_s -= time.monotonic() - began
        self.pauses += 1


def _after_each_model(turns: TurnTaking) -> Callable[[], None]:
    """`turns.turn()` after each pydantic model is built (where pydantic is loaded); returns the undoing.

    `BaseModel.__pydantic_init_subclass__` is pydantic's hook for this, a no-op classmethod that every model
    class calls once built; ours calls it on, so a model class that relies on it sees no difference.
    """
    pydantic = sys.modules.get("pydantic")
    base: Any = getattr(pydantic, "BaseModel", None) if pydantic is not None else None
    before = base.__dict__.get("__pydantic_init_subclass__") if base is not None else None
    if not isinstance(before, classmethod):
        return lambda: None  # a pydantic without the hook: the module boundaries only

    def hook(cls: type, /, **kwargs: Any) -> None:
        turns.turn()
        before.__func__(cls, **kwargs)

    base.__pydantic_init_subclass__ = classmethod(hook)

    def undo() -> None:
        base.__pydantic_init_subclass__ = before

    return undo


@contextmanager
def taking_turns(calm: threading.Event, pause_s: float = PAUSE_S, budget_s: float = BUDGET_S) -> Iterator[TurnTaking]:
    """This thread's imports wait for `calm` before each module and after each model, within the bounds."""
    finder = TurnTaking(calm, pause_s, budget_s)
    sys.meta_path.insert(0, finder)
    undo = _after_each_model(finder)
    try:
        yield finder
    finally:
        undo()
        sys.meta_path.remove(finder)
