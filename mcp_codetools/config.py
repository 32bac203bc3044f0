"""Transition only: the settings moved to `mcp_codetools.settings`; delete this once nothing imports it.

Kept for the two modules another change is editing at the same time (`protocol/state_handles.py`,
`shell/container.py`); everything else imports `mcp_codetools.settings`.
"""

from mcp_codetools.settings import SandboxSettings, Settings

__all__ = ["SandboxSettings", "Settings"]
