"""Which files deny rules hide from one tool's listings (Grep, Glob), asked once per listed file.

`Hider` answers as `Policy.hides` does, faster: each rule's longest literal run (`.env`, `secrets/`) is
looked for in the path first, and only a path holding one of them is matched against the rules'
regexes; most listed files hold none. It also turns the rules it can into rg exclusion globs, so rg
does not read what would be left out anyway; those are a saving, the per-file test stays the judge.
"""

from __future__ import annotations

import re

from mcp_codetools.policy.engine import Policy
from mcp_codetools.policy.rules import _anchor_of, path_regex, relative


def _literal(pattern: str) -> str:
    """The longest run of plain characters in a rule's path glob ("" when it has none).

    Only the part before a character class or an escape is looked at, which is plain as written.
    """
    head = re.split(r"[\[\\]", pattern, maxsplit=1)[0]
    return max(re.split(r"[*?/]", head), key=len)


_BUILT_MAX = 64
_BUILT: dict[tuple[int, str], tuple[Policy, Hider | None]] = {}
"""Hiders by (policy, tool): policies are few and live long (one per server, reloaded rarely)."""


class Hider:
    """A test for absolute real paths: whether a deny rule hides that file from `tool`. See the module doc."""

    def __init__(self, policy: Policy, tool: str) -> None:
        roots = [str(root) for root in policy.roots]
        self.rules = [rule for rule in policy.deny if rule.is_path_rule and rule.covers_tool(tool, policy.families)]
        self.roots = roots
        by_base: dict[str, list[str]] = {}
        literals: set[str] = set()
        for rule in self.rules:
            assert rule.specifier is not None and rule.path_body is not None
            literals.add(_literal(_anchor_of(rule.specifier)[1]))
            for base in rule.bases(roots):
                by_base.setdefault(base, []).append(rule.path_body)
        self._bases = [(base, path_regex(bodies)) for base, bodies in by_base.items()]
        # A rule with no literal (`*/*`) could match any path: then every path is matched.
        self.literals: tuple[str, ...] | None = None if "" in literals else tuple(literals)

    @classmethod
    def for_tool(cls, policy: Policy, tool: str) -> Hider | None:
        """A hider, or None when no deny rule with a path covers `tool` (then nothing is ever hidden).

        Asked on every call: built once per policy and tool, so a call pays a dictionary lookup.
        """
        key = (id(policy), tool)
        known = _BUILT.get(key)
        if known is not None and known[0] is policy:
            return known[1]
        hider = cls(policy, tool)
        if len(_BUILT) >= _BUILT_MAX:
            _BUILT.clear()
        _BUILT[key] = (policy, hider if hider.rules else None)  # the policy is kept, so its id is not reused
        return _BUILT[key][1]

    def __call__(self, path: str) -> bool:
        """Whether a deny rule hides `path` from this tool; the literal pre-check skips most paths."""
        literals = self.literals
        if literals is not None and not any(literal in path for literal in literals):
            return False
        for base, pattern in self._bases:
            rel = relative(path, base)
            if rel is not None and pattern.match(rel):
                return True
        return False

    def rg_globs(self, folder: str) -> list[str]:
        """rg exclusion globs for rg listing `folder` (absolute, real): each excludes only hidden files.

        A rule anchored to a base becomes an anchored glob when `folder` is that base; a rule starting
        with `**/` holds at any depth, so it applies below its base as written. Globs with braces or
        escapes (read differently by rg) and other rules give none: the per-file test catches those.
        """
        globs: list[str] = []
        for rule in self.rules:
            assert rule.specifier is not None
            pattern = _anchor_of(rule.specifier)[1]
            parts = [part for part in pattern.strip("/").split("/") if part not in ("", ".")]
            if not parts or any(c in pattern for c in "{}\\^!,"):
                continue
            glob = "/".join(parts)
            for base in rule.bases(self.roots):
                rel = relative(folder, base)
                if rel == "" and parts[0] != "**":
                    globs.append(f"--glob=!/{glob}")
                elif rel is not None and parts[0] == "**":
                    globs.append(f"--glob=!{glob}")
        return list(dict.fromkeys(globs))
