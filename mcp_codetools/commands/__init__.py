"""Understanding a Bash command: the one home of what the server knows about shell commands and programs.

Parse once (`parsing`, `words`), is it read-only (`classify` over the allowlist in `read_only`, sed's grammar in
`sed`), what each part runs through wrappers, shells and global options (`wrappers`), and which files it reads
and writes (`parts` over the table in `operands`, diffs in `diffnames`). Program facts live in tables
(`git_table`). The policy and the Bash tool read this package; it imports nothing of theirs.
"""
