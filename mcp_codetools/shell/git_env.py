"""What git is told in a read-only command, so that it writes nothing there, not even a cache.

`git status` refreshes the index's stat cache unless `GIT_OPTIONAL_LOCKS=0`; `git diff` does the same
whatever that variable says, unless `diff.autoRefreshIndex` is false (git 2.39 rewrote `.git/index` in a
copied repository). Read-only commands may run side by side, and plan mode promises they change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping


def read_only_git(env: Mapping[str, str]) -> dict[str, str]:
    """The variables to add to `env` for a read-only command; `GIT_CONFIG_*` entries already there come first."""
    given = env.get("GIT_CONFIG_COUNT", "")
    count = int(given) if given.isdigit() else 0
    return {
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": "diff.autoRefreshIndex",
        f"GIT_CONFIG_VALUE_{count}": "false",
    }
