"""Programs' option tables, one entry per program: which options only read, which run or write.

The read-only list, the wrapper reading ("what does it run?") and the operand table ("what does it write?")
all read these entries, so teaching the server an option is one edit here: xargs's and find's tables, and
`PROGRAMS` for the programs whose options write a file, run a program or change something (`sort -o`,
`rg --pre`, `fd -x`, `strace -o`). git's entry is `commands.git`, sed's grammar `commands.sed`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a program that runs another."""

    takes: str
    """"value" (the rest of the word, else the next word), "optional" (only the rest of the word or after
    `=`: the next word is never its value) or "flag"."""
    read_only: bool = True
    """A command with it may still be read-only (it neither prompts nor changes what runs)."""


def _options(takes: str, names: str, *, read_only: bool = True) -> dict[str, Option]:
    return dict.fromkeys(names.split(), Option(takes, read_only))


XARGS: dict[str, Option] = {
    **_options("value", "-I -L -n -P -s -d -E -a --max-args --max-procs --max-chars --delimiter --arg-file"),
    **_options("value", "--process-slot-var", read_only=False),
    **_options("optional", "-i -l -e --replace --max-lines --eof"),  # `--replace rm x` runs rm
    **_options("flag", "-0 -r -t -x --null --no-run-if-empty --verbose --exit"),
    **_options("flag", "-p -o --interactive --open-tty --show-limits", read_only=False),
}
"""xargs's options (GNU). Long options are matched whole: an abbreviation is not known (it fails closed)."""

FIND_RUNS = ("-exec", "-execdir", "-ok", "-okdir")
"""find's actions that run a command (`-exec CMD {} ;`); `-execdir` and `-okdir` in each match's folder."""
FIND_WRITES = ("-fprint", "-fprint0", "-fprintf", "-fls")
"""find's actions that write the file named after them."""
FIND_DELETES = "-delete"
"""Removes what it finds under the start folders."""
FIND_ACTIONS = frozenset({*FIND_RUNS, *FIND_WRITES, FIND_DELETES})
"""find's actions that change files or run programs: never read-only. Matched whole (find takes no abbreviation)."""


@dataclass(frozen=True, slots=True)
class Program:
    """The options of one program that write a file, run a program or change something else.

    The read-only check refuses each of them (`commands.read_only`); the operand table takes the files
    written from `writes` (`commands.operands`) and the wrapper reading takes what runs from `runs` and
    `runs_rest` (`commands.wrappers`), so the three answers come from this one entry. Long options are
    matched by any prefix, as getopt_long does (`sort --outp=F`).
    """

    writes: tuple[str, ...] = ()
    """Options whose value is a file the program writes (`sort -o FILE`)."""
    runs: tuple[str, ...] = ()
    """Options whose value is a program it runs on its input or files (`rg --pre CMD`)."""
    runs_rest: tuple[str, ...] = ()
    """Options after which the words up to `;` are a command it runs (`fd -x CMD ARGS`)."""
    changes: tuple[str, ...] = ()
    """Other options that keep it from being read-only (`file --preserve-date`, `ss --kill`)."""
    values: str = ""
    """Short letters whose value follows in the same cluster (`sort -k2o` sorts by `2o`): a cluster ends there."""
    takes_value: tuple[str, ...] = ()
    """Options whose value may be the next word (`uniq -f 1`), so that word is not an operand."""
    output_operand: int = 0
    """The operand at this place (from 1) is a file it writes (`uniq IN OUT`, `xxd IN OUT`); 0: none."""

    @property
    def active(self) -> tuple[str, ...]:
        """Every option that keeps the program from being read-only."""
        return (*self.writes, *self.runs, *self.runs_rest, *self.changes)


_SCRIPT_LOGS = ("-I", "--log-in", "-O", "--log-out", "-B", "--log-io", "-T", "--log-timing")

PROGRAMS: dict[str, Program] = {
    "sort": Program(writes=("-o", "--output"), runs=("--compress-program",), values="kotST"),
    "tree": Program(writes=("-o", "--output"), changes=("-R",), values="LPI"),  # -R with -H writes 00Tree.html
    "ss": Program(writes=("-D", "--diag"), changes=("-K", "--kill"), values="fAFN"),
    "file": Program(changes=("-C", "--compile", "-p", "--preserve-date"), values="mefFP"),  # -p resets atimes
    "rg": Program(runs=("--pre", "--hostname-bin")),
    "fd": Program(runs_rest=("-x", "--exec", "-X", "--exec-batch")),
    "fdfind": Program(runs_rest=("-x", "--exec", "-X", "--exec-batch")),
    "time": Program(writes=("-o", "--output")),  # GNU time, the program (bash's keyword takes only -p)
    "strace": Program(writes=("-o", "--output")),
    "ltrace": Program(writes=("-o", "--output")),
    "uniq": Program(takes_value=("-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"), output_operand=2),
    "xxd": Program(
        takes_value=("-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-offset", "-s", "-seek", "-n", "-name"),
        output_operand=2,
    ),
    "script": Program(
        writes=_SCRIPT_LOGS,
        takes_value=(*_SCRIPT_LOGS, "-E", "--echo", "-m", "--logging-format", "-c", "--command"),
        output_operand=1,  # the typescript file (`typescript` when none is named)
    ),
}
"""Programs whose options write, run or change: each program's facts in one entry (git's are in `commands.git`,
xargs's and find's above, sed's in `commands.sed`)."""
