"""The SDK's server modules without the parts a server never runs: `prepare()`, before the first `mcp` import.

A start without a snapshot spent most of its CPU importing the SDK, and much of that on code a server does
not run. `mcp/__init__.py` imports the client (`mcp.Client`, its sessions, the stdio and HTTP clients,
httpx, cryptography) and `mcp/server/__init__.py` the high-level `MCPServer` (resources, prompts, URI
templates); we use neither. And `mcp_types.methods` imports the wire models of both protocol eras, each
model's validator built at import, though a connection validates against one era's few models.

So `prepare()`, run once before the server's modules import, does two things:

- The packages `mcp` and `mcp.server` are put in `sys.modules` with their `__init__` not yet run, so their
  submodules import on their own. The first attribute asked of either (`from mcp import Client`, doctor's
  client, a test, a plug-in) runs its `__init__` then, in the same module object: everything it exports is
  there, only later.
- The eras' shared base (`mcp_types._wire_base.WireModel`) gets pydantic's `defer_build`, so each wire model
  builds its validator when first used; what it validates and its JSON schema do not change.

Both are guarded: each runs only when the installed releases are the ones it was measured with (the SDK's
range in pyproject, pydantic 2.10+ where `defer_build` covers models) and nothing has imported those modules
yet, and any surprise leaves the plain import in place. Measured in `benchmarks/start_cpu.py`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
import threading
import types
from typing import Any

logger = logging.getLogger(__name__)

DEFERRED_PACKAGES = ("mcp", "mcp.server")
"""The packages whose `__init__` waits for its first attribute, parents first."""
ERA_MODULES = ("mcp_types._v2025_11_25", "mcp_types._v2026_07_28")
SDK_RANGE = ((2, 3), (3, 0))
"""The `mcp` releases this was written against (pyproject: mcp>=2.3,<3)."""
PYDANTIC_FROM = (2, 10)
"""The first pydantic whose `defer_build` covers models without the experimental switch."""


def _release(text: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", text)
    return (int(found[1]), int(found[2])) if found else None


def installed_sdk_release() -> tuple[int, int] | None:
    """The `mcp` release from the `mcp-X.Y.Z.dist-info` beside the package; None where there is none.

    Read from the folder rather than with `importlib.metadata`, which a start does not import otherwise
    (~20 ms of CPU, and a scan of every distribution).
    """
    spec = importlib.util.find_spec("mcp")
    if spec is None or not spec.submodule_search_locations:
        return None
    site = os.path.dirname(next(iter(spec.submodule_search_locations)))
    try:
        names = os.listdir(site)
    except OSError:
        return None
    found = [name[4:] for name in names if name.startswith("mcp-") and name.endswith(".dist-info")]
    return _release(found[0]) if len(found) == 1 else None


def sdk_supported() -> bool:
    """The installed `mcp` is in the range the deferred packages were checked against."""
    release = installed_sdk_release()
    return release is not None and SDK_RANGE[0] <= release < SDK_RANGE[1]


def pydantic_supported() -> bool:
    """The installed pydantic builds a model with `defer_build` on first use."""
    from pydantic.version import VERSION

    release = _release(VERSION)
    return release is not None and release >= PYDANTIC_FROM


def prepare(eras_on_use: bool = True) -> list[str]:
    """Install what the module docstring describes; returns what took effect (for the log and the tests).

    `eras_on_use`: False leaves the eras' wire models built at import, as the SDK has them.
    """
    done: list[str] = []
    try:
        if sdk_supported():
            done += [name for name in DEFERRED_PACKAGES if defer_package_init(name)]
        if eras_on_use and pydantic_supported() and defer_era_models():
            done.append("era models")
    except Exception:  # a release laid out otherwise: the plain import works, only slower
        logger.debug("the SDK's plain import is used", exc_info=True)
    return done


def defer_package_init(name: str) -> bool:
    """Put package `name` in `sys.modules` with its `__init__` left for its first attribute; False if not done.

    Done only where nothing imported it yet and its parent, if any, is such a package or imported.
    """
    if name in sys.modules:
        return False
    parent_name, _, child = name.rpartition(".")
    parent = sys.modules.get(parent_name) if parent_name else None
    if parent_name and parent is None:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    module.__getattr__ = _InitOnFirstUse(module, spec.loader)  # type: ignore[method-assign]
    sys.modules[name] = module
    if parent is not None:
        setattr(parent, child, module)  # as the import system binds a submodule on its parent
    return True


class _InitOnFirstUse:
    """A deferred package's module `__getattr__`: runs the package's `__init__` once, then answers from it."""

    def __init__(self, module: types.ModuleType, loader: Any) -> None:
        self._module = module
        self._loader = loader
        self._lock = threading.RLock()
        self._state = "waiting"

    def __call__(self, name: str) -> Any:
        if name.startswith("__") and name != "__all__":  # the import system's and tools' probes
            raise AttributeError(name)
        if self._state == "waiting" and _is_submodule(self._module, name):  # `from mcp.server import lowlevel`
            return importlib.import_module(f"{self._module.__name__}.{name}")
        with self._lock:  # another thread asking meanwhile waits for the whole `__init__`
            if self._state == "waiting":
                self._state = "running"
                try:
                    self._loader.exec_module(self._module)
                finally:
                    self._state = "done"
        try:
            return self._module.__dict__[name]
        except KeyError:  # also while `__init__` runs in this thread: its own `hasattr` probes
            raise AttributeError(f"module {self._module.__name__!r} has no attribute {name!r}") from None


def _is_submodule(package: types.ModuleType, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"{package.__name__}.{name}") is not None
    except (ImportError, ValueError):
        return False


def defer_era_models() -> bool:
    """pydantic's `defer_build` on the base of both eras' wire models, before they are defined; False if not done."""
    if any(name in sys.modules for name in ERA_MODULES):
        return False
    from mcp_types._wire_base import WireModel
    from pydantic import BaseModel

    config = WireModel.__dict__.get("model_config")
    if not (isinstance(WireModel, type) and issubclass(WireModel, BaseModel) and isinstance(config, dict)):
        return False
    config["defer_build"] = True
    return True
