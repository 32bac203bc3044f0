"""Searching with ripgrep, for Grep and Glob.

Its arguments (`args`), its process (`process`), what reads its output (`sinks`, `path_order`), and where
its binary is (`locate`).
"""
