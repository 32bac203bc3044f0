"""The read-only classifier on a table of commands, both sides, including the tricky ones."""

from __future__ import annotations

import pytest

from mcp_codetools.commands import checks, read_only, sed
from mcp_codetools.commands.classify import analyze, is_read_only, scan_word
from mcp_codetools.commands.words import Word

READ_ONLY = [
    "ls",
    "ls -la src",
    "cat README.md",
    "head -n 20 a.txt",
    "tail -f log.txt",
    "wc -l *.py",
    "stat setup.py",
    "pwd",
    "echo hi",
    "echo 'a $b `c`'",
    "printf '%s\\n' a b",
    "grep -rn TODO .",
    "grep -rn TODO . 2>/dev/null",
    "egrep 'a|b' f",
    "rg -n foo src/",
    "rg --files",
    "find . -name '*.py'",
    "find . -type f -newer x -print",
    'find src -name "*.ts" | xargs wc -l',
    "find . -print0 | xargs -0 -n 10 grep -l foo",
    "ls | head -5",
    "ls > /dev/null 2>&1",
    "ls &> /dev/null",
    "ls 2>&1 | wc -l",
    "cat < input.txt",
    "cat <<< hello",
    "true && false || echo x",
    "ls; pwd",
    "ls\npwd",
    "! grep -q x f",
    "test -f a.txt",
    "[ -d src ]",
    "git status",
    "git status --short && git diff --stat",
    "git log --oneline -n 5 | cat",
    "git show HEAD~1:README.md",
    "git -C sub log",
    "git --git-dir .git --work-tree . log",
    "git --git-dir=.git status",
    "git log -SOops --oneline",
    "git stash show -p stash@{0}",
    "git reflog show -n 3",
    "git --no-pager diff HEAD",
    "git blame -L 1,5 a.py",
    "git branch",
    "git branch -a --contains HEAD",
    "git branch --list 'feat*'",
    "git tag",
    "git tag -l 'v1.*'",
    "git rev-parse --show-toplevel",
    "git ls-files -m",
    "git stash list",
    "git remote -v",
    "git config --get user.name",
    "sed -n '1,10p' f",
    "sed -n '/start/,/end/p' f",
    "sed 's/a/b/g' f",
    "sed -e 's|x|y|' -e '5q' f",
    "sed -n '$=' f",
    "sort -k2 -n f",
    "sort -u f | uniq -c",
    "uniq -c a",
    "date +%Y-%m-%d",
    "date -d yesterday +%s",
    "du -sh .",
    "diff a b",
    "jq .name package.json",
    "which python3",
    "python3 --version",
    "node -v",
    "docker ps",
    "gh pr view 12",
    "tree -L 2",
    "file a.bin",
    "env",
    "hostname",
    "ls ~",
    'cat "file with spaces.txt"',
    "ls # rm -rf /",
    "l\\s",
    '"ls" -la',
    "xargs -I{} echo {}",
    "sha256sum a b",
    "sort --check f",
    "sort src/*.txt",
    "git diff --output-indicator-new=+ HEAD",
    "git grep -n foo -- src/*.py",
    "find src/* -name x",
    "sed -n 1p src/*.txt",
    "sed 's/[/]/x/' f",
    "sed -n '/[/]/p' f",
    "sed 's/[[:alpha:]/]/x/g' f",
    "sed 's/a/b/ g' f",
    "sed '2q5' f",
    "sed '0~2d;1,+3p;2,~4p' f",
    "sed -n '\\|a/b|p' f",
    "xargs --replace echo",
    "xargs -0n5 grep x",
    "xargs --max-args 3 wc",
    "bash --version",
    "python3 -V",
    "perl -v",
    "go version",
    "cargo -V",
    "rg --hidden foo",
    "file --mime-type a.bin",
    "ss -tlnp",
    "ss -f inet -n",
    "ss -fD",
    "ss -A tcp,udp",
]

NOT_READ_ONLY = [
    "git rev-list --output=out HEAD",
    "git blame --output x a.py",
    "git shortlog --outp=x HEAD",
    "git --git-dir .git -c core.pager=x log",
    "git branch -lM new",
    "file -p a.txt",
    "xargs --process-slot-var=X echo",
    "",
    "   ",
    "rm -rf x",
    "echo hi > f",
    "echo hi >> f",
    "ls >| f",
    "ls &> out.txt",
    "ls >&out.txt",
    "cat <> f",
    "cat <<EOF\nhi\nEOF",
    "cat $(whoami)",
    "cat `whoami`",
    'echo "$(id)"',
    "cat <(ls)",
    "echo $HOME",
    'cat "$f"',
    "echo ${x:=y}",
    "echo $'\\x41'",
    "$CMD arg",
    "ls; rm -rf x",
    "ls\nrm x",
    "ls && rm x",
    "ls | tee out",
    "ls | sh",
    "FOO=1 ls",
    "a=$(rm x)",
    "ls &",
    "sleep 100 & ls",
    "(ls)",
    "{ ls; }",
    "f() { ls; }",
    "for i in 1 2; do ls; done",
    "if true; then ls; fi",
    "ls | while read x; do echo $x; done",
    "time ls",
    "echo $((1+2))",
    'echo "unbalanced',
    "echo 'unbalanced",
    "ls &&",
    "/bin/rm x",
    "./script.sh",
    "bash -c 'ls'",
    "sh -c ls",
    "eval ls",
    "env rm x",
    "sudo ls",
    "cd sub",
    "cd sub && ls",
    "git -c alias.x=!sh x",
    "git -c core.pager=sh log",
    "git --exec-path=/tmp log",
    "git --config-env=core.pager=X log",
    "git push",
    "git commit -m x",
    "git checkout main",
    "git branch -D old",
    "git branch -dr origin/x",
    "git branch newbranch",
    "git tag v1.0",
    "git tag -d v1.0",
    "git stash",
    "git log --output=out.txt",
    "git diff --ext-diff",
    "git grep -Ovim foo",
    "git config user.name x",
    "git remote add o url",
    "git {status,push}",
    "find . -delete",
    "find . -name x -delete",
    "find . -exec rm {} \\;",
    "find . -execdir ls \\;",
    "find . -ok rm {} \\;",
    "find . -fprint out",
    "find . \"-\"'delete'",
    "find . \\-delete",
    "find . -name *.py",
    "find {.,/tmp} -type f",
    "sed -i s/a/b/ f",
    "sed -ni p f",
    "sed --in-place s/a/b/ f",
    "sed 's/a/b/w out' f",
    "sed -n '1e rm x' f",
    "sed 's/a/b/e' f",
    "sed -f script.sed f",
    "sed '1r /etc/passwd' f",
    "sort -o out f",
    "sort -uo out f",
    "sort --output=out f",
    "sort --compress-program=sh f",
    "uniq in out",
    "date -s now",
    "date 010100002030",
    "rg --pre sh x",
    "rg --pre=sh x",
    "fd -x rm",
    "fd --exec rm",
    "xargs rm",
    "xargs sh -c 'rm $0'",
    "xargs find . -name",
    "xargs -p echo",
    "tree -o out.txt",
    "file -C -m magic",
    "hostname newname",
    "python3 script.py",
    "python3 -c 'print(1)'",
    "node app.js",
    "docker run alpine",
    "gh pr merge 1",
    "gh pr view 1 --web",
    "awk '{print}' f",
    "tee f",
    "touch f",
    "mkdir d",
    "chmod +x f",
    "curl -o f http://x",
    "ss -K",
    "ss -D out.raw",
    "ss -tnD out.raw",
    "ss -nD/tmp/x",
    "ss --diag=out.raw",
    "ss --dia out.raw",
    "command rm x",
    # abbreviated long options: getopt takes a prefix as the option
    "sort --outp=F f",
    "sort --out F f",
    "sort --o=F f",
    "sort --compress-prog=sh f",
    "sort --co=sh f",
    "git grep --open-files=touch foo",
    "git grep --open-files-in-pager foo",
    "git grep --open foo",
    "git log --outp=x",
    "git diff --ext",
    "file --compi -m magic",
    "file --comp",
    "tree --out=x",
    "ss --ki",
    "date --se=now",
    "git branch --del x",
    "git branch --list --del x",
    "git config --get x --unset-a",
    "fd --exe rm",
    # xargs options whose value is optional and attached only: the next word is the command
    "xargs --max-lines rm cat",
    "xargs --replace sh echo",
    "xargs --eof rm ls",
    "xargs --max-lines=2 rm cat",
    "xargs -i rm ls",
    "xargs -l rm ls",
    "xargs -0r rm",
    "xargs -n 1 r*",
    "xargs -n 1* cat",
    # globs: a word bash may replace with file names such as -delete
    "find . -name T -de*",
    "find . -name T -[d]elete",
    "find . -name T \\-de*",
    'find . -name T "-"de*',
    "sort -o* f",
    "sort f -?",
    "uniq src/*",
    "uniq -c a?",
    "sed 1* f",
    "sed -l 5* p f",
    "sed -e 1* f",
    "git -C s* log",
    "git st*",
    "git config --get x*",
    "date 0101*",
    # interpreters given a file argument run it
    "bash version",
    "node version",
    "python3 version",
    "ruby version",
    "java version",
    "rustc version",
    "sh --version x",
    "zsh version",
    "perl version",
    "python3 -v",
    "bash -v",
    "ruby -v",
    "npm version",
    "npm version patch",
    "node --version app.js",
    # programs run by rg
    "rg --hostname-bin=sh foo",
    "rg --hostname-bin sh foo",
    "rg --pre sh x",
    "rg --pr=sh x",
    "rg --hostname=x foo",
    # sed's parsing rules: the delimiter inside a bracket expression does not end the part
    "sed 's/[/]/;/w ./p'",
    "sed 's/[/]/;/w ./p' f",
    "sed -n '/[/]/w out' f",
    "sed 's|[|]|x|w out' f",
    "sed 's/[[:alpha:]/]/;/w out' f",
    "sed 's/[]/]/;/w out' f",
    "sed 's/[^]/]/;/w out' f",
    "sed 's/a/b/ w out' f",
    "sed 's/a/b/g w out' f",
    "sed 's/a/b/ e' f",
    "sed 's/a/b/pe' f",
    "sed 'w out' f",
    "sed 'W out' f",
    "sed '1 w out' f",
    "sed '/x/ !w out' f",
    "sed 'e touch x' f",
    "sed 'e' f",
    "sed 'y/[/]/;w out' f",
    "sed '\\,[,],w out' f",
    "sed 's/a\\/b/c/w out' f",
    "sed 's/a/b/\nw out' f",
    "sed '1,/x/w out' f",
    "sed '$!{w out\n}' f",
    "sed 'p;w out' f",
    "sed 'p ; W out' f",
    "sed -n --expression='w out' f",
    "sed --expr=p f",
    "sed -s -e p -e 'w out' f",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only(command: str) -> None:
    analysis = analyze(command)
    assert analysis.read_only, analysis.reason


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_not_read_only(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only
    assert analysis.reason


def test_table_is_large_on_both_sides() -> None:
    assert len(READ_ONLY) >= 60 and len(NOT_READ_ONLY) >= 60
    assert not set(READ_ONLY) & set(NOT_READ_ONLY)


def test_is_read_only_matches_analyze() -> None:
    assert is_read_only("ls") and not is_read_only("rm x")


def test_overlong_command_is_not_parsed() -> None:
    analysis = analyze("ls " + "a " * 6000)
    assert not analysis.read_only and "too long" in analysis.reason


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("\"-\"'delete'", "-delete"),
        ("\\-delete", "-delete"),
        ('"a\\"b"', 'a"b'),
        ("'a\\b'", "a\\b"),
        ("a\\\nb", "ab"),
    ],
)
def test_scan_word_removes_quotes_like_bash(source: str, text: str) -> None:
    assert scan_word(source).text == text


def test_scan_word_flags_what_bash_expands() -> None:
    assert scan_word("$x").expands and scan_word('"$x"').expands and scan_word("`id`").expands
    assert not scan_word("'$x'").expands
    assert scan_word("*.py").glob_first and not scan_word("'*.py'").glob
    assert scan_word("src/*.py").glob and not scan_word("src/*.py").glob_first
    assert scan_word("{a,b}").brace and scan_word("{1..3}").brace and not scan_word("{}").brace
    assert not scan_word("[").glob


@pytest.mark.parametrize(
    ("command", "last"),
    [
        ("grep x f", "grep"),
        ("cat f | grep x", "grep"),
        ("grep x f | wc -l", "wc"),
        ("ls && diff a b", "diff"),
        ("ls; [ -f x ]", "["),
        ("! grep x f", None),
        ("echo $(", None),
        ("for i in 1; do grep x f; done", None),
    ],
)
def test_last_command(command: str, last: str | None) -> None:
    assert analyze(command).last_command == last


def test_every_rule_command_refuses_an_option_injected_by_a_glob() -> None:
    for name in read_only.RULES:
        assert read_only.check(name, [Word("*", glob=True, glob_first=True)]), name
        assert read_only.check(name, [Word("-de*", glob=True)]), name  # matches a file named -delete
        assert read_only.check(name, [Word("{a,-delete}", brace=True)]), name


def test_sed_script_checker() -> None:
    assert sed.script_problem("1,5p;$=;/x/!d;s/a\\/b/c/gI;y/ab/cd/;{p};q3") == ""
    assert sed.script_problem("s/a/b/w f")
    assert sed.script_problem("s/a/b")
    assert sed.script_problem("1a text")
    assert sed.script_problem("W out")


def test_sed_reads_bracket_expressions_whole() -> None:
    """GNU sed: the delimiter inside `[...]` of a regex is an ordinary character, so the part goes on."""
    assert sed.script_problem("s/[/]/x/") == ""
    assert sed.script_problem("s/[/]/;/w ./p")
    assert sed.script_problem("s/[[:punct:]/]/x/") == ""
    assert sed.script_problem("s/[[:punct:]/]/;/w out")
    assert sed.script_problem("s/[\\]/x/") == ""  # a backslash in a bracket does not escape the `]`
    assert sed.script_problem("y/[/]/") == ""  # y has no brackets: `[` and `]` swap
    assert sed.script_problem("s/[/x/")  # unterminated: sed refuses it, so does the reader


def test_sed_allows_blanks_between_the_parts_of_a_command() -> None:
    assert sed.script_problem("1 , 3 ! p") == ""
    assert sed.script_problem("s/a/b/ g 2 p") == ""
    assert sed.script_problem("s/a/b/ g w out")
    assert sed.script_problem("/x/ I , $ w out")


@pytest.mark.parametrize(
    ("arg", "option"),
    [
        ("--outp=F", "--output"),
        ("--o", "--output"),
        ("--output", "--output"),
        ("--compress-prog=sh", "--compress-program"),
        ("--co", "--compress-program"),
        ("--", None),
        ("--=x", None),
        ("--outputs", None),
        ("-o", None),
        ("--check", None),
    ],
)
def test_long_option_takes_any_prefix(arg: str, option: str | None) -> None:
    assert checks.long_option(arg, ("--output", "--compress-program")) == option


def test_unknown_commands_are_not_read_only() -> None:
    for command in ("frobnicate", "frobnicate --version", "awk 1 f", "perl -e 1", "nodejs app.js"):
        analysis = analyze(command)
        assert not analysis.read_only and analysis.reason, command


def test_a_check_that_fails_makes_the_command_not_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a rule must not crash the call nor let the command through."""

    def broken(args: object) -> str:
        raise IndexError("boom")

    monkeypatch.setitem(read_only.RULES, "sort", broken)
    analysis = analyze("sort f")
    assert not analysis.read_only and "IndexError" in analysis.reason


def test_a_parser_failure_makes_the_command_not_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools.commands.bashlex_load import load

    bashlex = load()

    def broken(source: str) -> object:
        raise RecursionError

    monkeypatch.setattr(bashlex, "parse", broken)
    analysis = analyze("ls 'a b'")  # quoted: a plain line of words is not given to bashlex
    assert not analysis.read_only and "RecursionError" in analysis.reason
