"""The permission step: may this call run, ask the user first, or be refused.

Rules in Claude Code's syntax (`rules`), what a Bash command runs (`commands`), the decision (`engine`),
where the policy comes from (`config`) and hooks (`hooks`).
"""
