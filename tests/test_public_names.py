"""The packages' public names are pinned: a name added to or dropped from `__all__` is a deliberate change here.

`mcp_codetools` exports only its version: the entry points (`mcp_codetools.settings.Settings`,
`mcp_codetools.protocol.server.CodeToolsServer`, the `mcp-codetools` command) are imported from their modules, so
`import mcp_codetools` stays cheap and does not load the MCP SDK.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from types import ModuleType

import pytest

import mcp_codetools
import mcp_codetools.tools

PINNED: dict[ModuleType, list[str]] = {
    mcp_codetools: ["__version__"],
    mcp_codetools.tools: ["Tool", "default_tools", "every_tool", "tools_named"],
}


@pytest.mark.parametrize("module", list(PINNED), ids=lambda module: module.__name__)
def test_all_is_the_pinned_list_and_every_name_resolves(module: ModuleType) -> None:
    assert module.__all__ == PINNED[module]
    for name in module.__all__:
        assert getattr(module, name, None) is not None, f"{module.__name__}.{name} is exported but missing"
    namespace: dict[str, object] = {}
    exec(f"from {module.__name__} import *", namespace)  # the star import is what __all__ governs
    assert sorted(name for name in namespace if name != "__builtins__") == sorted(PINNED[module])


def test_version_is_the_installed_distribution_version() -> None:
    assert mcp_codetools.__version__ == metadata.version("mcp-codetools")


def test_importing_the_package_loads_neither_its_modules_nor_the_sdk() -> None:
    probe = "import sys, mcp_codetools; print(sorted(m for m in sys.modules if m.startswith(('mcp', 'pydantic'))))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['mcp_codetools']"
