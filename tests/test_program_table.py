"""Each program's facts in one entry (`commands.programs.PROGRAMS`): the read-only verdict, what it writes and
what it runs all come from it, so an option that writes is seen by plan mode, protected paths and Edit rules
alike, and an option that runs a program by `Bash(...)` rules.

The rows below were the gaps while the facts were in separate tables: the read-only list knew `sort --outp=F`
(a prefix, which getopt_long accepts) and `tree --output`, the operand table did not; `strace -o F` wrote
unseen; `rg --pre CMD`, `fd -x CMD` and `sort --compress-program=CMD` ran a program no rule saw.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings

from mcp_codetools.commands import programs, sed
from mcp_codetools.commands.analysis import analyse
from mcp_codetools.policy.engine import CallFacts, Policy
from mcp_codetools.policy.rules import parse_rule
from tests.test_classify_property import needs_gnu_sed, sed_scripts

ROOT = Path("/ws")

WRITES: list[tuple[str, str]] = [
    ("sort -o .git/config a.txt", ".git/config"),
    ("sort --output .git/config a.txt", ".git/config"),
    ("sort --outp=.git/config a.txt", ".git/config"),
    ("sort --outp .git/config a.txt", ".git/config"),
    ("sort -uo.git/config a.txt", ".git/config"),
    ("sort -u -o .git/config a.txt", ".git/config"),
    ("tree -o .git/config", ".git/config"),
    ("tree --output=.git/config", ".git/config"),
    ("ss -D .git/config", ".git/config"),
    ("ss --diag=.git/config", ".git/config"),
    ("strace -o .git/config true", ".git/config"),
    ("strace --out=.git/config true", ".git/config"),
    ("ltrace -o .git/config true", ".git/config"),
    ("command time -o .git/config true", ".git/config"),
    ("/usr/bin/time --out=.git/config true", ".git/config"),
    ("sed --in-pl s/a/b/ .git/config", ".git/config"),
    ("curl --out .git/config https://x", ".git/config"),
    ("wget --output-doc=.git/config https://x", ".git/config"),
    ("curl --trace .git/config https://x", ".git/config"),  # one entry per downloader: these were missing
    ("curl --stderr .git/config https://x", ".git/config"),
    ("curl --libcurl .git/config https://x", ".git/config"),
    ("wget -a .git/config https://x", ".git/config"),  # wget's log, appended (curl's -a is a flag)
    ("wget -o .git/config https://x", ".git/config"),
    ("wget --save-cookies .git/config https://x", ".git/config"),
    ("uniq -f 1 a.txt .git/config", ".git/config"),  # -f's value was taken for the input, a.txt for the output
    ("uniq --skip-chars 2 a.txt .git/config", ".git/config"),
    ("uniq a.txt .git/config", ".git/config"),
    ("xxd -c 8 a.txt .git/config", ".git/config"),
    ("script -q -O .git/config", ".git/config"),
    ("script --log-io=.git/config out.txt", ".git/config"),
    ("script -E never .git/config", ".git/config"),
]


@pytest.mark.parametrize(("command", "written"), WRITES)
def test_a_writing_option_is_a_write_and_not_read_only(command: str, written: str) -> None:
    found = analyse(command)
    assert written in found.parts.write_targets and not found.read_only
    decision = Policy(roots=(ROOT,)).decide(CallFacts("Bash", False, cwd=ROOT, analysis=found))
    assert decision.behaviour == "ask" and decision.protected  # .git/config is protected
    plan = Policy(roots=(ROOT,), mode="plan").decide(CallFacts("Bash", False, cwd=ROOT, analysis=found))
    assert plan.behaviour != "allow"


@pytest.mark.parametrize(
    "command", ["sort -ko1 a.txt", "sort -t o a.txt", "tree -L 2", "ss -tlnp", "sort a.txt", "uniq -f 1 a.txt"]
)
def test_a_value_that_looks_like_the_option_is_not_a_write(command: str) -> None:
    found = analyse(command)
    assert found.read_only and not found.parts.write_targets


RUNS: list[tuple[str, str]] = [
    ("rg --pre tee x", "deny"),
    ("rg --pre=tee x", "deny"),
    ("rg --pr tee x", "deny"),
    ("rg --pre /usr/bin/tee x", "deny"),
    ("rg --pre $TOOL x", "ask"),  # what runs is not known
    ("fd -x tee {} ;", "deny"),
    ("fd --exec tee {}", "deny"),
    ("fdfind -X tee", "deny"),
    ("fd -tf -x tee", "deny"),
    ("sort --compress-program=tee a.txt", "deny"),
    ("sort --compress-prog tee a.txt", "deny"),
    ("fd -x echo {} ;", "allow"),
    ("rg --pre cat x", "allow"),
    ("rg tee", "allow"),
    ("sort tee", "allow"),
]


@pytest.mark.parametrize(("command", "verdict"), RUNS)
def test_a_program_an_option_runs_is_seen_by_rules(command: str, verdict: str) -> None:
    deny = parse_rule("Bash(tee *)", "deny", source="test.toml", base=ROOT)
    policy = Policy(roots=(ROOT,), deny=(deny,))
    found = analyse(command)
    assert policy.decide(CallFacts("Bash", found.read_only, cwd=ROOT, analysis=found)).behaviour == verdict


@pytest.mark.parametrize(
    ("name", "option"),
    [(name, option) for name, program in programs.PROGRAMS.items() for option in program.active],
)
def test_every_active_option_of_an_entry_is_not_read_only(name: str, option: str) -> None:
    """The read-only verdict comes from the same entry (each option, spelled alone and with a value)."""
    assert not analyse(f"{name} {option} x a.txt").read_only
    assert not analyse(f"{name} {option}=x a.txt").read_only or not option.startswith("--")


SED: list[tuple[str, str]] = [
    ("sed -n 'w .git/config' a.txt", "ask"),  # sed's `w` writes the file: protected
    ("sed 's/a/b/w .git/config' a.txt", "ask"),
    ("sed -e 1w.git/config a.txt", "ask"),
    ("sed --expr='w .git/config' a.txt", "ask"),
    ("sed ':a;w .git/config' a.txt", "ask"),
    ("sed -f x.sed a.txt", "ask"),  # the script is a file: it may write anything
    ("sed '1e rm -rf x' a.txt", "deny"),  # `e CMD` runs CMD
    ("sed 's/.*/rm x/e' a.txt", "ask"),  # runs the pattern space: not known
    ('sed "$S" a.txt', "ask"),
    ("sed s/a/b/ a.txt", "allow"),
    ("sed -n p a.txt", "allow"),
    ("sed '1i hello; w x' a.txt", "allow"),  # the text of `i` runs to the end of the line
    ("sed 'r notes.txt' a.txt", "allow"),
]


@pytest.mark.parametrize(("command", "verdict"), SED)
def test_what_a_sed_script_writes_and_runs_comes_from_seds_reader(command: str, verdict: str) -> None:
    deny = parse_rule("Bash(rm *)", "deny", source="test.toml", base=ROOT)
    found = analyse(command)
    decision = Policy(roots=(ROOT,), deny=(deny,)).decide(CallFacts("Bash", found.read_only, cwd=ROOT, analysis=found))
    assert decision.behaviour == verdict


def _sandbox_refuses(script: str) -> bool:
    done = subprocess.run(
        ["sed", "--sandbox", "-n", "-e", script], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    return "sandbox" in done.stderr


@needs_gnu_sed
@settings(max_examples=150, deadline=None)
@given(script=sed_scripts)
def test_a_script_sed_reads_w_e_or_r_in_has_its_effects_seen(script: str) -> None:
    """GNU sed's `--sandbox` refuses exactly w, e and r: where it does, `effects` names one or gives up (None)."""
    found = sed.effects(["-n", "-e", script])
    if _sandbox_refuses(script):
        assert found is None or found.writes or found.reads or found.runs, script
