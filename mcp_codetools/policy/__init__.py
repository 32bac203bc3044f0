"""The permission step: may this call run, ask the user first, or be refused.

Rules in Claude Code's syntax (`rules`), the decision (`engine`, over what `mcp_codetools.commands` finds in a
Bash command), where the policy comes from (`config`) and hooks (`hooks`).
"""
