"""Searching with ripgrep, for Grep and Glob.

Its arguments (`rg_args`, Grep's `grep_args`), the pinned search path (`targets`), its process (`process`),
what reads its output (`sinks`, `path_order`, `hidden_names`, `paging`), its complaints (`rg_errors`), and
where its binary is (`locate`).
"""
