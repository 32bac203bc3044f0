"""Running shell commands for the Bash tools.

The read-only classifier (`parsing`, `classify`, `read_only`, `words`, `sed`), one command in its own
process group (`spawning`, `running`, `reaping`, `exit_watcher`, `capture`, `procs`) and background jobs
(`background`).

Nothing here imports `mcp`; the tools in `mcp_codetools.tools.bash` and `.jobs` turn results into text.
"""
