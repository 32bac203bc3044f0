"""The rule-matching table: Claude Code's rule syntax, anchors, families, compound commands and modes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcp_codetools.policy.engine import CallFacts, Mode, Policy
from mcp_codetools.policy.rules import RuleSyntaxError, parse_rule
from tests.declared import FAMILIES

ROOT = Path("/ws/proj")
OTHER_ROOT = Path("/ws/other")
HOME = Path("/home/dev")
SETTINGS_BASE = Path("/ws/proj/cfgbase")


@dataclass
class Case:
    name: str
    facts: CallFacts
    expected: str
    allow: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    mode: Mode = "default"
    ask_unmatched: bool = False


def read(path: str, tool: str = "Read") -> CallFacts:
    return CallFacts(tool, read_only=True, read_paths=(Path(path),))


def edit(path: str, tool: str = "Edit") -> CallFacts:
    return CallFacts(tool, read_only=False, write_paths=(Path(path),))


def bash(command: str, *, read_only: bool = False) -> CallFacts:
    return CallFacts("Bash", read_only=read_only, command=command, cwd=ROOT)


P = "/ws/proj"
CASES = [
    # path anchors and gitignore-style globs
    Case("bare name at the root", read(f"{P}/.env"), "deny", deny=["Read(.env)"]),
    Case("bare name at any depth", read(f"{P}/sub/dir/.env"), "deny", deny=["Read(.env)"]),
    Case("bare name is the whole name", read(f"{P}/.env.example"), "allow", deny=["Read(.env)"]),
    Case("./ anchors at the root", read(f"{P}/.env"), "deny", deny=["Read(./.env)"]),
    Case("./ does not match deeper", read(f"{P}/sub/.env"), "allow", deny=["Read(./.env)"]),
    Case("** covers every depth", read(f"{P}/secrets/a/b.txt"), "deny", deny=["Read(./secrets/**)"]),
    Case("a folder prefix is not a folder", read(f"{P}/secretsX/a"), "allow", deny=["Read(./secrets/**)"]),
    Case("a bare folder at any depth", read(f"{P}/a/secrets/x"), "deny", deny=["Read(secrets/)"]),
    Case("a folder rule covers its content", read(f"{P}/build/out/x.js"), "deny", deny=["Read(./build)"]),
    Case("// is an absolute path", read("/etc/passwd"), "deny", deny=["Read(//etc/passwd)"]),
    Case("// does not match elsewhere", read(f"{P}/etc/passwd"), "allow", deny=["Read(//etc/passwd)"]),
    Case("~/ is the home folder", read(f"{HOME}/.ssh/id_rsa"), "deny", deny=["Read(~/.ssh/**)"]),
    Case("/ is the settings base", read(f"{SETTINGS_BASE}/config/a.json"), "deny", deny=["Read(/config/*.json)"]),
    Case("/ is not the root", read(f"{P}/config/a.json"), "allow", deny=["Read(/config/*.json)"]),
    Case("a path with a slash is anchored", read(f"{P}/src/a/b.py"), "deny", deny=["Read(src/**/*.py)"]),
    Case("** matches no folder too", read(f"{P}/src/c.py"), "deny", deny=["Read(src/**/*.py)"]),
    Case("anchored paths stay anchored", read(f"{P}/lib/src/c.py"), "allow", deny=["Read(src/**/*.py)"]),
    Case("* stays within a name", read(f"{P}/src/a/b.py"), "allow", deny=["Read(src/*.py)"]),
    Case("bare glob at any depth", read(f"{P}/a/b/key.pem"), "deny", deny=["Read(*.pem)"]),
    Case("? is one character", read(f"{P}/key1.pem"), "deny", deny=["Read(key?.pem)"]),
    Case("? is not two", read(f"{P}/key10.pem"), "allow", deny=["Read(key?.pem)"]),
    Case("a class matches", read(f"{P}/a.txt"), "deny", deny=["Read([ab].txt)"]),
    Case("a class excludes", read(f"{P}/c.txt"), "allow", deny=["Read([ab].txt)"]),
    Case("a negated class", read(f"{P}/c.txt"), "deny", deny=["Read([!ab].txt)"]),
    Case("a second root", read(f"{OTHER_ROOT}/.env"), "deny", deny=["Read(./.env)"]),
    Case("outside every root", read("/tmp/.env"), "allow", deny=["Read(./.env)"]),
    # tool families
    Case("Read deny blocks Edit", edit(f"{P}/.env"), "deny", deny=["Read(.env)"]),
    Case("Read deny blocks Write", edit(f"{P}/.env", "Write"), "deny", deny=["Read(.env)"]),
    Case("Read deny covers Grep", read(f"{P}/secrets/x", "Grep"), "deny", deny=["Read(./secrets/**)"]),
    Case("Read deny covers Glob", read(f"{P}/secrets", "Glob"), "deny", deny=["Read(./secrets)"]),
    Case("Edit deny leaves Read", read(f"{P}/a.py"), "allow", deny=["Edit(*.py)"]),
    Case("Edit deny covers Write", edit(f"{P}/a.py", "Write"), "deny", deny=["Edit(*.py)"]),
    Case("Edit deny covers MultiEdit", edit(f"{P}/a.py", "MultiEdit"), "deny", deny=["Edit(*.py)"]),
    Case("Edit deny covers NotebookEdit", edit(f"{P}/a.ipynb", "NotebookEdit"), "deny", deny=["Edit(*.ipynb)"]),
    Case("Write deny leaves Edit", edit(f"{P}/a.py"), "allow", deny=["Write(*.py)"]),
    Case("a bare Edit rule covers the family", edit(f"{P}/a.py", "Write"), "deny", deny=["Edit"]),
    Case("a bare Edit rule leaves reads", read(f"{P}/a.py"), "allow", deny=["Edit"]),
    Case("a bare Read rule covers Glob", read(f"{P}", "Glob"), "deny", deny=["Read"]),
    Case("other tools match by name", CallFacts("KillShell", read_only=False), "deny", deny=["KillShell"]),
    # precedence
    Case("deny wins over ask", edit(f"{P}/a.py"), "deny", deny=["Edit(a.py)"], ask=["Edit(*.py)"]),
    Case("ask wins over allow", edit(f"{P}/a.py"), "ask", ask=["Edit(a.py)"], allow=["Edit(*.py)"]),
    Case("an ask rule on paths", edit(f"{P}/docs/x.md"), "ask", ask=["Edit(./docs/**)"]),
    # Bash specifiers
    Case("word-boundary star, bare", bash("npm run test"), "deny", deny=["Bash(npm run test *)"]),
    Case("word-boundary star, args", bash("npm run test --watch"), "deny", deny=["Bash(npm run test *)"]),
    Case("word boundary holds", bash("npm run testing"), "allow", deny=["Bash(npm run test *)"]),
    Case("legacy :* form", bash("npm run test --watch"), "deny", deny=["Bash(npm run test:*)"]),
    Case("legacy :* word boundary", bash("npm run testing"), "allow", deny=["Bash(npm run test:*)"]),
    Case("glued star is a prefix", bash("lsof -i"), "deny", deny=["Bash(ls*)"]),
    Case("spaced star is a word", bash("lsof -i"), "allow", deny=["Bash(ls *)"]),
    Case("star in the middle", bash("git push origin main"), "deny", deny=["Bash(git * main)"]),
    Case("quotes are removed", bash("git commit -m 'fix bug'"), "deny", deny=["Bash(git commit -m fix *)"]),
    Case("Bash(*) is every command", bash("echo hi"), "deny", deny=["Bash(*)"]),
    Case("a bare Bash rule", bash("echo hi"), "deny", deny=["Bash"]),
    # compound commands and wrappers
    Case("&& second part", bash("npm test && rm -rf x"), "deny", deny=["Bash(rm *)"]),
    Case("|| part", bash("false || rm x"), "deny", deny=["Bash(rm *)"]),
    Case("; and newline parts", bash("echo a;\nrm x"), "deny", deny=["Bash(rm *)"]),
    Case("pipeline part", bash("cat a | rm b"), "deny", deny=["Bash(rm *)"]),
    Case("subshell part", bash("(cd x; rm y)"), "deny", deny=["Bash(rm *)"]),
    Case("command substitution", bash("echo $(rm x)"), "deny", deny=["Bash(rm *)"]),
    Case("bash -c script", bash("bash -c 'rm x'"), "deny", deny=["Bash(rm *)"]),
    Case("eval", bash("eval rm x"), "deny", deny=["Bash(rm *)"]),
    Case("VAR= prefix", bash("FOO=1 rm -rf x"), "deny", deny=["Bash(rm *)"]),
    Case("timeout wrapper", bash("timeout -s KILL 5 rm -rf x"), "deny", deny=["Bash(rm *)"]),
    Case("nice wrapper", bash("nice -n 10 rm x"), "deny", deny=["Bash(rm *)"]),
    Case("nohup wrapper", bash("nohup rm x"), "deny", deny=["Bash(rm *)"]),
    Case("stdbuf wrapper", bash("stdbuf -oL rm x"), "deny", deny=["Bash(rm *)"]),
    Case("command and time", bash("time command rm x"), "deny", deny=["Bash(rm *)"]),
    Case("nested wrappers", bash("nohup timeout 5 nice rm x"), "ask", ask=["Bash(rm *)"]),
    Case("unparsed: raw text", bash("rm -rf x; echo 'open"), "deny", deny=["Bash(rm *)"]),
    Case(
        "every part allowed",
        bash("npm test && npm run lint"),
        "allow",
        allow=["Bash(npm test *)", "Bash(npm run lint)"],
        ask_unmatched=True,
    ),
    Case("one part not allowed", bash("npm test && rm x"), "ask", allow=["Bash(npm test *)"], ask_unmatched=True),
    Case("wrappers do not carry allows", bash("timeout 5 rm x"), "ask", allow=["Bash(rm *)"], ask_unmatched=True),
    Case("unparsed is never allowed", bash("npm test 'open"), "ask", allow=["Bash(npm *)"], ask_unmatched=True),
    Case("an expanded name is never allowed", bash("$CMD x"), "ask", allow=["Bash"], ask_unmatched=True),
    # redirections and file-writing commands are Edits
    Case("redirect checked as Edit", bash("echo hi > secret.txt"), "deny", deny=["Edit(./secret.txt)"]),
    Case("redirect and a Read deny", bash("echo x >> .env"), "deny", deny=["Read(.env)"]),
    Case("/dev/null is not a write", bash("ls > /dev/null"), "allow", deny=["Edit"]),
    Case("tee writes", bash("echo x | tee notes/a.md"), "deny", deny=["Edit(./notes/**)"]),
    Case("cp writes its last operand", bash("cp a b/c.txt"), "deny", deny=["Edit(./b/**)"]),
    Case("cp reads its first operand", bash("cp b/c.txt d"), "allow", deny=["Edit(./b/**)"]),
    # protected paths
    Case("redirect into .git", bash("echo x > .git/config"), "ask"),
    Case("git itself writes .git", bash("git commit -m x"), "allow"),
    Case("Edit of .bashrc", edit(f"{P}/.bashrc"), "ask"),
    Case("tee into ~/.zshrc", bash("echo x | tee ~/.zshrc"), "ask"),
    Case("cp into .vscode", bash("cp a .vscode/settings.json"), "ask"),
    Case("sed -i on .profile", bash("sed -i s/a/b/ .profile"), "ask"),
    Case("Write of mcp-codetools.toml", edit(f"{P}/mcp-codetools.toml", "Write"), "ask"),
    Case(".gitignore is not .git", edit(f"{P}/.gitignore"), "allow"),
    Case("acceptEdits keeps protected paths", edit(f"{P}/.claude/settings.json"), "ask", mode="acceptEdits"),
    # modes
    Case("plan allows reads", read(f"{P}/a.py"), "allow", mode="plan"),
    Case("plan denies edits", edit(f"{P}/a.py"), "deny", mode="plan"),
    Case("plan denies writing commands", bash("touch x"), "deny", mode="plan"),
    Case("plan allows read-only commands", bash("ls", read_only=True), "allow", mode="plan"),
    Case("plan denies protected writes", edit(f"{P}/.git/config"), "deny", mode="plan"),
    Case("bypass answers asks", edit(f"{P}/a.py"), "allow", ask=["Edit"], mode="bypassPermissions"),
    Case("bypass answers protected", edit(f"{P}/.git/HEAD"), "allow", mode="bypassPermissions"),
    Case("bypass keeps denies", edit(f"{P}/a.py"), "deny", deny=["Edit"], mode="bypassPermissions"),
    Case("acceptEdits answers Edit asks", edit(f"{P}/a.py"), "allow", ask=["Edit(*.py)"], mode="acceptEdits"),
    Case("acceptEdits not for Bash asks", bash("rm x"), "ask", ask=["Bash(rm *)"], mode="acceptEdits"),
    Case("acceptEdits not outside roots", edit("/tmp/a.py"), "ask", ask=["Edit"], mode="acceptEdits"),
    Case("unmatched is allowed", edit(f"{P}/a.py"), "allow"),
    Case("ask_unmatched asks for edits", edit(f"{P}/a.py"), "ask", ask_unmatched=True),
    Case("ask_unmatched allows reads", read(f"{P}/a.py"), "allow", ask_unmatched=True),
    Case("ask_unmatched and allow rules", edit(f"{P}/a.py"), "allow", allow=["Edit(*.py)"], ask_unmatched=True),
    Case("ask_unmatched, acceptEdits", edit(f"{P}/a.py"), "allow", mode="acceptEdits", ask_unmatched=True),
    Case("ask_unmatched, acceptEdits, Bash", bash("make"), "ask", mode="acceptEdits", ask_unmatched=True),
    Case("ask_unmatched, read-only Bash", bash("ls", read_only=True), "allow", ask_unmatched=True),
]


def policy_for(case: Case) -> Policy:
    def rules(texts: list[str], behaviour: str) -> tuple:
        return tuple(
            parse_rule(t, behaviour, source="/ws/proj/mcp-codetools.toml", base=SETTINGS_BASE)  # type: ignore[arg-type]
            for t in texts
        )

    return Policy(
        roots=(ROOT, OTHER_ROOT),
        allow=rules(case.allow, "allow"),
        deny=rules(case.deny, "deny"),
        ask=rules(case.ask, "ask"),
        mode=case.mode,
        mode_source="test",
        ask_unmatched=case.ask_unmatched,
        families=FAMILIES,
    )


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(HOME))


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert len({case.name for case in CASES}) == len(CASES), "case names must be unique"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_rule_table(case: Case) -> None:
    decision = policy_for(case).decide(case.facts)
    assert decision.behaviour == case.expected, decision.reason


def test_a_refusal_names_the_rule_and_its_source() -> None:
    case = Case("x", edit(f"{P}/.env"), "deny", deny=["Read(.env)"])
    decision = policy_for(case).decide(case.facts)
    assert "`Read(.env)`" in decision.reason and "/ws/proj/mcp-codetools.toml" in decision.reason


def test_plan_mode_says_so() -> None:
    decision = policy_for(Case("x", edit(f"{P}/a"), "deny", mode="plan")).decide(edit(f"{P}/a"))
    assert "plan mode" in decision.reason


@pytest.mark.parametrize("text", ["Bash(", "not a rule!", "Read(a))x", "", "Read(a[z-a])", "LSP(x[b-a].py)"])
def test_malformed_rules_are_refused(text: str) -> None:
    with pytest.raises(RuleSyntaxError):
        parse_rule(text, "deny", source="test", base=ROOT)


def test_hides_answers_for_single_paths_under_a_search() -> None:
    policy = policy_for(Case("x", read(f"{P}/a"), "allow", deny=["Read(.env)", "Read(./secrets/**)", "Edit(*.py)"]))
    assert policy.hides("Grep", f"{P}/sub/.env")
    assert policy.hides("Glob", f"{P}/secrets/deep/key")
    assert not policy.hides("Grep", f"{P}/src/a.py"), "an Edit rule does not hide a file from reads"
    assert not policy.hides("Glob", f"{P}/README.md")


def test_a_specifier_is_a_path_pattern_for_every_tool_but_bash() -> None:
    """`LSP(secret.py)` was a command pattern, which no call of LSP is matched against: it denied nothing."""
    for tool in FAMILIES.read | FAMILIES.edit:
        assert parse_rule(f"{tool}(secret.py)", "deny", source="t", base=ROOT).is_path_rule, tool
    assert not parse_rule("Bash(rm *)", "deny", source="t", base=ROOT).is_path_rule
    lsp = Policy(roots=(ROOT,), deny=(parse_rule("LSP(secret.py)", "deny", source="t", base=ROOT),), families=FAMILIES)
    assert lsp.decide(CallFacts("LSP", True, read_paths=(ROOT / "secret.py",))).behaviour == "deny"
    assert lsp.decide(CallFacts("Read", True, read_paths=(ROOT / "secret.py",))).behaviour == "allow"
