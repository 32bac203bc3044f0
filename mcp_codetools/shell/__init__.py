"""Running shell commands for the Bash tools.

One command in its own process group (`spawning`, `running`, `reaping`, `exit_watcher`, `capture`, `procs`)
and background jobs (`background`). What a command is (read-only or not, what it runs) is `mcp_codetools.commands`.

Nothing here imports `mcp`; the tools in `mcp_codetools.tools.bash` and `.jobs` turn results into text.
"""
