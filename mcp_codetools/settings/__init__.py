"""Settings: one model (`model.py`), fed by several sources (`sources.py`), later wins (`merge.py`).

Nothing here can be changed by the model. `printing.py` shows them for `mcp-codetools config`;
`tightening.py` says how a project file may move the settings that confine the model.
"""

from mcp_codetools.settings.merge import DEFAULT_SOURCE, check_file, load_settings, settings_from_env
from mcp_codetools.settings.model import (
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_QUEUE_TIMEOUT_S,
    DEFAULT_SESSION_IDLE_TIMEOUT_S,
    DEFAULT_SPILL_BUDGET_BYTES,
    ENV_PREFIX,
    MAX_RESULT_TOKENS,
    PLACES,
    SANDBOX_BACKENDS,
    SECTIONS,
    LanguageServerEntry,
    LoadedSettings,
    Place,
    SandboxSettings,
    Settings,
    default_settings,
    fill,
    fill_all,
    setting_default,
    setting_value,
)
from mcp_codetools.settings.printing import describe, markdown_reference
from mcp_codetools.settings.sources import (
    POLICY_SECTIONS,
    PROJECT_FILE,
    ConfigError,
    ConfigFile,
    config_files,
    read_toml,
    user_config_file,
)
from mcp_codetools.settings.tightening import TIGHTENING

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "DEFAULT_QUEUE_TIMEOUT_S",
    "DEFAULT_SESSION_IDLE_TIMEOUT_S",
    "DEFAULT_SOURCE",
    "DEFAULT_SPILL_BUDGET_BYTES",
    "ENV_PREFIX",
    "MAX_RESULT_TOKENS",
    "PLACES",
    "POLICY_SECTIONS",
    "PROJECT_FILE",
    "SANDBOX_BACKENDS",
    "SECTIONS",
    "TIGHTENING",
    "ConfigError",
    "ConfigFile",
    "LanguageServerEntry",
    "LoadedSettings",
    "Place",
    "SandboxSettings",
    "Settings",
    "check_file",
    "default_settings",
    "config_files",
    "describe",
    "fill",
    "fill_all",
    "load_settings",
    "markdown_reference",
    "read_toml",
    "setting_default",
    "setting_value",
    "settings_from_env",
    "user_config_file",
]
