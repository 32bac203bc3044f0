"""Deciding one call: deny rules, then the mode, then ask rules and protected paths, then allow rules.

Deny wins over ask, ask over allow. A `Read(...)` deny also blocks writing that path (there is no point
hiding a file that can be overwritten). Bash is matched per simple command: a compound command is
allowed only if every part is, and denied or asked about if any part is; files it redirects to, or that
a recognised file-writing command names, are checked as Edits of those paths.

Calls that no rule matches are allowed unless `ask_unmatched` is set: an MCP client already asks its
user before each tool call, so asking again for every edit would ask twice. With `ask_unmatched`, the
modes behave as Claude Code's: `default` asks for edits and commands that are not read-only,
`acceptEdits` only for those commands.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import itertools
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from mcp_codetools.commands.readings import Reading
from mcp_codetools.policy.rules import (
    Behaviour,
    Rule,
    RuleFamilies,
    command_regex,
    literal_prefix,
    path_regex,
    relative,
)

if TYPE_CHECKING:  # Bash's command analysis is imported by the first call that has a command, not by a Read
    from mcp_codetools.commands.analysis import CommandAnalysis
    from mcp_codetools.commands.parts import CommandParts, SimpleCommand

Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
MODES: tuple[Mode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions")

PROTECTED_PATHS: tuple[str, ...] = (
    ".git",
    ".claude",
    ".vscode",
    ".idea",
    ".mcp.json",
    "mcp-codetools.toml",
    ".envrc",
    ".husky",
    ".pre-commit-config.yaml",
    ".devcontainer",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".config/fish",
    ".gitconfig",
    ".config/git",
)
"""Writes here change how tools, editors or shells behave later: asked about by default (denied in plan mode).

Each is run or loaded by a program on its own, without the user asking for that file: direnv runs `.envrc`
on `cd`, git runs `.husky/` (its `core.hooksPath`) and what `.pre-commit-config.yaml` names at a commit,
an editor runs `.devcontainer/`'s `initializeCommand` on the host when the folder is opened.
"""

MAX_TREE_ENTRIES = 20_000
"""Entries looked at under a folder a command reads whole (`grep -r`) before it counts as reaching a denied path."""
MAX_GLOB_MATCHES = 2_000
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the policy needs to know about one call."""

    tool: str
    read_only: bool
    read_paths: tuple[Path, ...] = ()
    write_paths: tuple[Path, ...] = ()
    command: str | None = None
    cwd: Path | None = None
    analysis: CommandAnalysis | None = None
    """The command's analysis, which the engine reads instead of parsing the text: the Bash tool passes the one
    its `classify` built; given only `command` (a test, a benchmark), it is built here."""

    def __post_init__(self) -> None:
        if self.analysis is None:
            if self.command is not None:
                from mcp_codetools.commands.analysis import analyse

                object.__setattr__(self, "analysis", analyse(self.command))
        elif self.command is None:
            object.__setattr__(self, "command", self.analysis.command)
        elif self.command != self.analysis.command:
            raise ValueError("CallFacts: the analysis is of another command than `command`")


@dataclass(frozen=True, slots=True)
class Decision:
    """What the policy says about one call: allow, deny or ask, and why."""

    behaviour: Behaviour
    reason: str
    """Names the rule or mode that decided, and where it came from (for the model and the log)."""
    rule: Rule | None = None
    subject: str = ""
    """What the decision is about: the path or command, for a question to the user."""
    unmatched: bool = False
    """Asked only because no rule allows the call: the one question the Bash sandbox may answer itself."""
    protected: bool = False
    """Asked because the call writes a protected path: only a person answers it (never `unanswered_ask`)."""


@dataclass(slots=True)
class _BashView:
    """A Bash call's parts with its paths made absolute (in the call's working directory)."""

    parts: CommandParts
    reads: list[str]
    trees: list[str]
    visible_trees: list[str]
    unknown_reads: list[str | None]
    unknown_writes: list[str | None]


class _RuleIndex:
    """One behaviour's rules, grouped so a call is matched with a few combined regexes rather than rule by rule."""

    def __init__(self, rules: Sequence[Rule], roots: Sequence[str], families: RuleFamilies) -> None:
        self.families = families
        self.whole = [r for r in rules if r.specifier is None]
        bash = [r for r in rules if r.command_body is not None and r.tool == "Bash"]
        self.bash_rules = bash
        self.bash = command_regex([r.command_body for r in bash if r.command_body]) if bash else None
        self.bash_literals = [(r, _literal_words(r.specifier or "")) for r in bash]
        groups: dict[tuple[str, tuple[str, ...]], list[Rule]] = {}
        for rule in rules:
            if rule.path_body is not None:
                groups.setdefault((rule.tool, tuple(rule.bases(roots))), []).append(rule)
        self.paths = [
            (tool, bases, path_regex([r.path_body for r in group if r.path_body]), group)
            for (tool, bases), group in groups.items()
        ]
        self.prefixes = [(r, literal_prefix(r, roots)) for r in rules if r.path_body is not None]

    def hit(
        self,
        tool: str,
        reads: list[str],
        writes: list[str],
        commands: Sequence[SimpleCommand],
        raw: str | None,
        bash: _BashView | None = None,
    ) -> tuple[Rule, str] | None:
        """The first rule that matches some part of the call, with that part ("" for the whole call)."""
        for rule in self.whole:
            if rule.covers_tool(tool, self.families):
                return rule, ""
        if raw is not None and self.bash is not None:
            for command in commands:
                for reading in command.readings or (Reading(command.words),):
                    text = reading.text
                    if self.bash.match(text):
                        return next(r for r in self.bash_rules if r.matches_command(text)), text
            if raw and self.bash.match(raw):
                return next(r for r in self.bash_rules if r.matches_command(raw)), raw
        bash_reads = bash.reads if bash is not None else []
        for rule_tool, bases, pattern, group in self.paths:
            covers = self.families.covers(rule_tool, tool)
            # A Read or Edit rule also guards the files any other tool writes (Bash's redirections are Edits),
            # and a Read rule the files Bash's recognised commands read.
            candidates = (reads + writes) if covers else writes if rule_tool in ("Read", "Edit") else []
            if rule_tool == "Read" and bash_reads:
                candidates = [*candidates, *bash_reads]
            for path in candidates:
                for base in bases:
                    rel = relative(path, base)
                    if rel is not None and pattern.match(rel):
                        return next(r for r in group if _matches_under(r, path, base)), path
        if bash is not None and (bash.trees or bash.visible_trees):
            return self._tree_hit(bash.trees, hidden=True) or self._tree_hit(bash.visible_trees, hidden=False)
        return None

    def _tree_hit(self, trees: list[str], *, hidden: bool) -> tuple[Rule, str] | None:
        """A Read rule matching something under a folder the command reads whole (looked up on disk, bounded).

        `hidden`: whether the command reads hidden names too (`grep -r` does, `rg` does not unless told).
        """
        for tree in trees:
            reaching = [r for r, prefixes in self.prefixes if r.tool == "Read" and _overlaps(tree, prefixes)]
            if not reaching:
                continue
            inside = next((r for r in reaching if self._matches(r, tree)), None)
            if inside is not None:
                return inside, tree
            found = _first_under(tree, functools.partial(self._first_matching, reaching), hidden=hidden)
            if found is not None:
                return found[0] or reaching[0], found[1]
        return None

    def _first_matching(self, rules: list[Rule], path: str) -> Rule | None:
        return next((r for r in rules if self._matches(r, path)), None)

    def _matches(self, rule: Rule, path: str) -> bool:
        for _, bases, _, group in self.paths:
            if rule in group:
                return any(_matches_under(rule, path, base) for base in bases)
        return False

    def could_apply(self, bash: _BashView, writes_too: bool) -> tuple[Rule, str] | None:
        """A rule that could match what the command runs or touches where the text does not tell (then: ask)."""
        parts = bash.parts
        if self.bash_literals:
            if not parts.parsed:
                return self.bash_literals[0][0], "the command, which could not be parsed"
            for reading in parts.open_readings:
                for rule, literal in self.bash_literals:
                    if _agrees(literal, reading):
                        return rule, reading.text or "a command line whose text is not known"
        for folder in bash.unknown_reads:
            reaching = self._reaching(folder, ("Read",))
            if reaching is not None:
                return reaching, _folder_subject(folder, "reads")
        if writes_too:
            for folder in bash.unknown_writes:
                reaching = self._reaching(folder, ("Read", "Edit"))
                if reaching is not None:
                    return reaching, _folder_subject(folder, "writes")
            if parts.unseen_writes:  # a repository's top may lie above every folder the command names
                reaching = self._reaching(None, ("Read", "Edit"))
                if reaching is not None:
                    return reaching, f"files written by {parts.unseen_writes[0]}"
        return None

    def _reaching(self, folder: str | None, tools: tuple[str, ...]) -> Rule | None:
        for rule, prefixes in self.prefixes:
            if rule.tool in tools and (folder is None or _overlaps(folder, prefixes)):
                return rule
        return None

    def hit_path(self, tool: str, path: str) -> Rule | None:
        """The first path rule covering a read of `path` by `tool` (rules without a path are not asked)."""
        for rule_tool, bases, pattern, group in self.paths:
            if self.families.covers(rule_tool, tool):
                for base in bases:
                    rel = relative(path, base)
                    if rel is not None and pattern.match(rel):
                        return next(r for r in group if _matches_under(r, path, base))
        return None

    def allows_commands(self, commands: Sequence[SimpleCommand]) -> bool:
        return self.bash is not None and all(self.bash.match(c.text) for c in commands)

    def allows_path(self, tool: str, path: str) -> bool:
        if any(r.covers_tool(tool, self.families) for r in self.whole):
            return True
        for rule_tool, bases, pattern, _ in self.paths:
            if self.families.covers(rule_tool, tool):
                for base in bases:
                    rel = relative(path, base)
                    if rel is not None and pattern.match(rel):
                        return True
        return False


def _literal_words(spec: str) -> tuple[str, ...]:
    """A Bash pattern's words before the first `*`: a command must agree with them for the rule to match."""
    words: list[str] = []
    for word in spec.replace(":*", " *").split():
        if "*" in word:
            break
        words.append(word)
    return tuple(words)


def _agrees(literal: tuple[str, ...], reading: Reading) -> bool:
    """Whether a rule whose literal words are `literal` could match `reading` once its unknown words are known."""
    known = reading.open_from if reading.open_from is not None else len(reading.words)
    return all(i >= len(reading.words) or reading.words[i] == word for i, word in enumerate(literal[:known]))


def _overlaps(folder: str, prefixes: Iterable[str]) -> bool:
    """Whether a path under `folder` can lie under one of `prefixes`: one of the two holds the other."""
    return any(relative(folder, prefix) is not None or relative(prefix, folder) is not None for prefix in prefixes)


def _folder_subject(folder: str | None, verb: str) -> str:
    where = f"under {folder}" if folder is not None else "in a folder that is not known"
    return f"files the command {verb} {where} (their names are not in the command)"


def _first_under(
    tree: str, match: Callable[[str], Rule | None], *, hidden: bool = True
) -> tuple[Rule | None, str] | None:
    """Walk `tree` (no symlinks followed) for a path `match` gives a rule for; too many entries count as a hit.

    `hidden=False` leaves out names that start with a dot, and what is under them.
    """
    seen = 0
    stack = [tree]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if not hidden and entry.name.startswith("."):
                        continue
                    rule = match(entry.path)
                    if rule is not None:
                        return rule, entry.path
                    seen += 1
                    if seen > MAX_TREE_ENTRIES:
                        return None, f"{tree} (too many files to check for denied ones)"
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return None


def _matches_under(rule: Rule, path: str, base: str) -> bool:
    rel = relative(path, base)
    return rel is not None and rule.path_body is not None and path_regex([rule.path_body]).match(rel) is not None


@dataclass(frozen=True)
class Policy:
    """Rules from every source, the mode, and the protected paths. Nothing a tool call sends changes it."""

    roots: tuple[Path, ...]
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    mode: Mode = "default"
    mode_source: str = "built-in default"
    protected: tuple[str, ...] = PROTECTED_PATHS
    ask_unmatched: bool = False
    extra_protected_files: tuple[Path, ...] = field(default=())
    """Config files the policy was read from, the server's cache folder and its install folders: writing them (or
    in them) is asked about like a protected path."""
    families: RuleFamilies = RuleFamilies()
    """Which tools `Read(...)` and `Edit(...)` rules cover, as the tools declare it (`with_families`)."""

    def with_families(self, families: RuleFamilies) -> Policy:
        """The same policy judging the tools whose families are `families` (the pipeline's tools)."""
        return self if families == self.families else dataclasses.replace(self, families=families)

    def with_roots(self, roots: tuple[Path, ...]) -> Policy:
        """The same policy for a session serving `roots` (the configured ones and any the client added).

        Root-relative rules (`./path`, `src/**`, bare names such as `.env`) and the protected paths then
        hold in every folder the session serves, not only in the folders the server was started with.
        """
        return self if roots == self.roots else dataclasses.replace(self, roots=roots)

    @functools.cached_property
    def _index(self) -> tuple[_RuleIndex, _RuleIndex, _RuleIndex]:
        roots = [str(r) for r in self.roots]
        families = self.families
        return (
            _RuleIndex(self.deny, roots, families),
            _RuleIndex(self.ask, roots, families),
            _RuleIndex(self.allow, roots, families),
        )

    @functools.cached_property
    def _protected_pattern(self) -> re.Pattern[str]:
        home = os.path.expanduser("~")
        prefixes = [f"{root}/{p}" for root in self.roots for p in self.protected]
        prefixes += [f"{home}/{p}" for p in self.protected if p != ".git" and not p.startswith(".git/")]
        alternatives = "|".join(re.escape(p) for p in prefixes) or "(?!)"
        files = "|".join(re.escape(str(p)) for p in self.extra_protected_files) or "(?!)"
        return re.compile(f"^(?:{alternatives}|{files})(?:/.*)?$", re.S)

    def decide(self, facts: CallFacts) -> Decision:
        """Decide one call: deny rules first, then the mode, ask rules, protected paths, allow rules.

        A call no rule allows is asked about unless the mode lets it through.
        """
        writes = [str(p) for p in facts.write_paths]
        reads = [str(p) for p in facts.read_paths]
        commands: Sequence[SimpleCommand] = ()
        complete = True
        raw: str | None = None
        bash: _BashView | None = None
        if facts.command is not None and facts.analysis is not None:
            parts = facts.analysis.parts
            commands, complete = parts.commands, parts.complete
            # Unparsed: rules see the raw text too (a huge one as it is, not copied into words and back).
            raw = "" if complete else _normalized(facts.command)
            bash = self._bash_view(parts, facts.cwd)
            writes += _and_real(
                p
                for p in (
                    *(_bash_path(t, facts.cwd) for t in parts.write_targets),
                    *self._globbed(parts, facts, bash),
                    *_from_every_top(parts.top_writes, facts.cwd),
                )
                if p != "/dev/null"
            )
            bash.reads = _and_real(bash.reads)
        deny, ask, allow = self._index

        denied = deny.hit(facts.tool, reads, writes, commands, raw, bash)
        if denied is not None:
            rule, subject = denied
            return Decision("deny", f"denied by the rule `{rule}` in {rule.source}", rule, subject)
        if bash is not None:
            unsure = deny.could_apply(bash, writes_too=True)
            if unsure is not None:  # asked even in bypassPermissions mode: a deny rule may hold
                rule, subject = unsure
                return Decision(
                    "ask",
                    f"the rule `{rule}` in {rule.source} could apply, but the command does not say for sure "
                    f"({subject})",
                    rule,
                    subject,
                )
        if self.mode == "plan" and not facts.read_only:
            return Decision(
                "deny",
                f"the server is in plan mode ({self.mode_source}): only read-only calls run. "
                "Describe the change instead of making it.",
            )
        if self.mode == "bypassPermissions":
            return Decision("allow", f"bypassPermissions mode ({self.mode_source})")
        asked = ask.hit(facts.tool, reads, writes, commands, raw, bash)
        if asked is None and bash is not None:
            asked = ask.could_apply(bash, writes_too=True)
        if asked is not None and not self._accepted_edit(asked[0], facts.tool, writes):
            rule, subject = asked
            return Decision("ask", f"the rule `{rule}` in {rule.source} asks", rule, subject)
        protected = self._protected(writes)
        if protected is not None:
            return Decision(
                "ask",
                f"{protected} is a protected path (writes there are confirmed first)",
                None,
                protected,
                protected=True,
            )
        if bash is not None:
            reason = self._protected_by_command(bash)
            if reason is not None:
                return Decision("ask", f"{reason} (protected paths are confirmed first)", None, reason, protected=True)
        if facts.read_only or not self.ask_unmatched:
            return Decision("allow", "allowed")
        if facts.command is not None:
            if complete and commands and allow.allows_commands(commands):
                if all(allow.allows_path("Edit", p) for p in writes):
                    return Decision("allow", "allowed by rules")
        elif (reads or writes) and all(allow.allows_path(facts.tool, p) for p in reads + writes):
            return Decision("allow", "allowed by rules")
        elif any(r.covers_tool(facts.tool, self.families) for r in allow.whole):
            return Decision("allow", "allowed by rules")
        if self.mode == "acceptEdits" and facts.tool in self.families.edit and self._inside_roots(writes):
            return Decision("allow", f"acceptEdits mode ({self.mode_source})")
        subject = facts.command if facts.command is not None else ", ".join(writes)
        return Decision(
            "ask", f"no rule allows it ({self.mode} mode, {self.mode_source})", None, subject, unmatched=True
        )

    def _bash_view(self, parts: CommandParts, cwd: Path | None) -> _BashView:
        return _BashView(
            parts,
            [_bash_path(t, cwd) for t in parts.read_targets],  # made real in `decide`, with the globs' matches
            _and_real(_bash_path(t, cwd) for t in parts.tree_reads),
            _and_real(_bash_path(t, cwd) for t in parts.visible_tree_reads),
            _and_real(None if t is None else _bash_path(t, cwd) for t in parts.unknown_reads),
            _and_real(None if t is None else _bash_path(t, cwd) for t in parts.unknown_writes),
        )

    def _globbed(self, parts: CommandParts, facts: CallFacts, bash: _BashView) -> list[str]:
        """Paths a glob operand matches on disk, as bash would expand it: read, and written by writers.

        Only looked up when a path rule or a protected path could be involved; too many matches, or a
        folder that cannot be listed, make the glob's folder an unknown read (or write).
        """
        if not parts.glob_reads and not parts.glob_writes:
            return []
        written: list[str] = []
        for pattern, writes in (*((p, False) for p in parts.glob_reads), *((p, True) for p in parts.glob_writes)):
            matches = _expand(pattern, facts.cwd)
            if matches is None:
                folder = _literal_folder_of(pattern)
                target = bash.unknown_writes if writes else bash.unknown_reads
                target.append(None if folder is None else _bash_path(folder, facts.cwd))
                continue
            (written if writes else bash.reads).extend(matches)
        return written

    def _protected_by_command(self, bash: _BashView) -> str | None:
        """A git configuration change, or writes whose names are not known where protected paths lie."""
        if bash.parts.config_writes:
            return bash.parts.config_writes[0]
        prefixes = self._protected_prefixes
        for folder in bash.unknown_writes:
            if folder is None or _overlaps(folder, prefixes):
                return _folder_subject(folder, "writes") + ", where protected paths lie"
        return None

    @functools.cached_property
    def _protected_prefixes(self) -> list[str]:
        home = os.path.expanduser("~")
        prefixes = [f"{root}/{p}" for root in self.roots for p in self.protected]
        prefixes += [f"{home}/{p}" for p in self.protected if p != ".git" and not p.startswith(".git/")]
        return prefixes + [str(p) for p in self.extra_protected_files]

    def hides(self, tool: str, path: str) -> bool:
        """Whether a deny rule covers reading `path` (absolute, real) with `tool`: Grep and Glob leave it out."""
        deny = self._index[0]
        return deny.hit_path(tool, path) is not None

    def _accepted_edit(self, rule: Rule, tool: str, writes: list[str]) -> bool:
        """acceptEdits answers ask rules about file edits inside the roots (not protected paths)."""
        return (
            self.mode == "acceptEdits"
            and tool in self.families.edit
            and rule.tool != "Bash"
            and self._inside_roots(writes)
        )

    def _protected(self, writes: list[str]) -> str | None:
        pattern = self._protected_pattern
        return next((path for path in writes if pattern.match(path)), None)

    def _inside_roots(self, paths: list[str]) -> bool:
        roots = [str(r) for r in self.roots]
        return bool(paths) and all(any(relative(p, r) is not None for r in roots) for p in paths)


def _normalized(command: str) -> str:
    from mcp_codetools.commands.classify import MAX_PARSED_CHARS

    return command if len(command) > MAX_PARSED_CHARS else " ".join(command.split())


def _bash_path(target: str, cwd: Path | None) -> str:
    expanded = os.path.expanduser(target)
    base = str(cwd) if cwd is not None else os.getcwd()
    return os.path.normpath(os.path.join(base, expanded))


def _from_every_top(top_writes: Sequence[tuple[str, str]], cwd: Path | None) -> Iterable[str]:
    """Each name under the folder and under every folder above it: the repository's top is one of them.

    Not looked up on disk, where what makes a folder a repository's top could change before the command runs.
    """
    for folder, name in top_writes:
        base = _bash_path(folder or ".", cwd)
        while True:
            yield os.path.normpath(os.path.join(base, name))
            parent = os.path.dirname(base)
            if parent == base:
                break
            base = parent


_MaybePath = TypeVar("_MaybePath", str, str | None)


def _and_real(paths: Iterable[_MaybePath]) -> list[_MaybePath]:
    """Each path, and where its symbolic links lead when that differs (`s/a` with `s -> src` is `src/a` too).

    Rules match real paths for the other tools; a Bash path is as the command names it, so both are checked
    (a link made by the same command is not there yet: the sandbox is what holds then).
    """
    found: list[_MaybePath] = []
    for path in paths:
        found.append(path)
        if path is not None and path != "/dev/null":
            real = os.path.realpath(path)
            if real != path:
                found.append(real)
    return found


def _literal_folder_of(pattern: str) -> str | None:
    cut = _GLOB_CHARS.search(pattern)
    prefix = pattern[: cut.start()] if cut else pattern
    if "/" not in prefix:
        return ""
    return prefix.rsplit("/", 1)[0] or "/"


def _expand(pattern: str, cwd: Path | None) -> list[str] | None:
    """The paths a glob matches (hidden names only for a pattern that starts with a dot, as bash does)."""
    base = str(cwd) if cwd is not None else os.getcwd()
    expanded = os.path.expanduser(pattern)
    try:
        found = list(itertools.islice(glob.iglob(expanded, root_dir=base), MAX_GLOB_MATCHES + 1))
    except (OSError, ValueError):
        return None
    if len(found) > MAX_GLOB_MATCHES:
        return None
    return [os.path.normpath(os.path.join(base, match)) for match in found]
