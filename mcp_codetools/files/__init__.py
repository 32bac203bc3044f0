"""The file layer under Read, Edit and Write.

Resolving and confining paths (`paths`, `opening`), decoding (`text`), paged views (`view`), stamps and
the read ledger, Edit's matching, the read-check-write logic (`editing`) and crash-safe writes.
"""
