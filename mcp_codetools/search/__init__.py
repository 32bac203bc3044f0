"""Searching with ripgrep: its arguments (`args`), its process (`process`), what reads its output (`sinks`,
`path_order`), and where its binary is (`locate`)."""
