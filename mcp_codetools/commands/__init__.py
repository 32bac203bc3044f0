"""Understanding a Bash command: the one home of what the server knows about shell commands and programs.

`analysis` builds one `CommandAnalysis` per call from one parse (`parsing`, `words`): is it read-only
(`classify` over the allowlist in `read_only`, built from `checks`; sed's grammar in `sed`), what each part
runs through wrappers, shells and global options (`wrappers`, `readings`, the data in `wrapper_tables`), and
which files it reads and writes (`parts` over the operand table in `operands`, `archives`, `filesets`; diffs
in `diffnames`). Each program's facts are in one table: git's in `git` (read by `git_read_only`, `git_runs`
and `git_files`), xargs's and find's in `programs`. The policy and the Bash tool read this package; it
imports nothing of theirs.
"""
