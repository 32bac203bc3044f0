"""What one simple command runs, seen through wrappers, program paths and a program's global options.

`readings(words, known)` returns every reading of a command that a deny or ask rule must see: the words as
written; the program by its name (`/usr/bin/git push` is `git push`); without the program's global options
(`git -C . -c x=y push` is `git push`); the command a wrapper runs (`env -i A=1 nice -n 5 git push`,
`sudo -u x git push`, `xargs git push`, `find . -exec git push ;`); and the command lines that shells and
wrappers run as text (`bash -lc '…'`, `eval …`, `watch …`, `script -qc '…'`, `flock f -c '…'`), which the
caller splits like the command itself.

A wrapper's options are read with its own option table. An option the table does not know is read both
ways (a flag, or an option that takes the next word), so an unknown option cannot hide the command it
runs. A word whose text is not known before the command runs (an expansion) makes the reading *open* from
that word on: a rule whose literal words agree with the reading up to there could apply, and the call is
asked about.

Git's dashed programs (`git-push`, `/usr/lib/git-core/git-push`) are read as the subcommand, and the plumbing
that pushes (`git send-pack`, `git http-push`) also as `git push`: a rule against pushing means any push. A
program no table knows may be a wrapper (`prlimit git push`): each later word starts a *guess*, which rules
never match (that would deny `mytool --name git push`) but which makes a rule that agrees with it ask.
A script that `source`, `.` or a shell reads from a pipe, `/dev/stdin` or a process substitution is a
command line: read when the command holds its text, asked about when not.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mcp_codetools.commands import operands, read_only

MAX_READINGS = 24
"""Readings kept for one simple command; past it the command counts as unknown (asked about)."""
_MAX_DEPTH = 12


@dataclass(frozen=True, slots=True)
class Reading:
    """One way to read what a command runs: its words, and from which word on they are unknown."""

    words: tuple[str, ...]
    open_from: int | None = None
    """Index of the first word whose text is not known (an expansion, input xargs appends); None: all known."""
    chdir: str | None = ""
    """The folder it runs in, relative to the command's own ("" the same, None not known: `env -C $D`)."""

    @property
    def text(self) -> str:
        """The words joined by single spaces: what a `Bash(...)` pattern is matched against."""
        return " ".join(self.words)


@dataclass(slots=True)
class Readings:
    """Everything `readings` found for one simple command."""

    readings: list[Reading] = field(default_factory=list)
    scripts: list[str | None] = field(default_factory=list)
    """Command lines the command runs as text (None: a command line whose text is not known)."""
    program_config: list[str] = field(default_factory=list)
    """Why the command makes git run a program or change its config (`-c core.hooksPath=…`): asked about."""
    guesses: list[Reading] = field(default_factory=list)
    """What an unknown program may run (`prlimit git push`): each later word read as a command, open after it.

    Not what rules match (that would deny `mytool --name git push`), only what could make one apply: asked.
    """


@dataclass(frozen=True, slots=True)
class Spec:
    """How a wrapper reads its options before the command it runs."""

    values: frozenset[str] = frozenset()
    """Options whose value follows (`-n 5`, `-n5`, `--adjustment=5`, `--adjustment 5`)."""
    flags: frozenset[str] = frozenset()
    positionals: int = 0
    """Words between the options and the command (`timeout 5 cmd`, `flock FILE cmd`)."""
    scripts: frozenset[str] = frozenset()
    """Options whose value is a command line (`script -c '…'`, `su -c '…'`)."""
    chdir: frozenset[str] = frozenset()
    """Options whose value is the folder the command runs in (`env -C dir`, `sudo -D dir`)."""
    stops: frozenset[str] = frozenset()
    """Options after which nothing runs (`command -v`, `sudo -l`)."""
    assignments: bool = False
    """`NAME=value` words may stand before the command (env, sudo)."""
    joined: bool = False
    """The rest is joined into one command line and run by a shell (watch)."""
    numeric: bool = False
    """A word of digits after a dash is an option (`nice -10`)."""


def _spec(
    values: str = "",
    flags: str = "",
    positionals: int = 0,
    scripts: str = "",
    chdir: str = "",
    stops: str = "",
    **kwargs: bool,
) -> Spec:
    return Spec(
        frozenset(values.split()),
        frozenset(flags.split()),
        positionals,
        frozenset(scripts.split()),
        frozenset(chdir.split()),
        frozenset(stops.split()),
        **kwargs,
    )


_TIMEOUT = _spec("-s --signal -k --kill-after", "--foreground --preserve-status -v --verbose", 1)
WRAPPERS: dict[str, Spec] = {
    "env": _spec(
        "-u --unset -a --argv0",
        "-i --ignore-environment -0 --null -v --debug --block-signal --default-signal --ignore-signal",
        scripts="-S --split-string",
        chdir="-C --chdir",
        stops="--list-signal-handling",
        assignments=True,
    ),
    "exec": _spec("-a", "-c -l"),
    "builtin": _spec(),
    "command": _spec("", "-p", stops="-v -V"),
    "nohup": _spec(),
    "nice": _spec("-n --adjustment", numeric=True),
    "renice": _spec("-n --priority -g -p -u", numeric=True),
    "setsid": _spec("", "-c --ctty -f --fork -w --wait"),
    "ionice": _spec("-c --class -n --classdata -p --pid -P --pgid -u --uid", "-t --ignore"),
    "chrt": _spec("-T --sched-runtime -P --sched-period -D --sched-deadline", "-a -b -d -e -f -i -o -r -R -m -v", 1),
    "taskset": _spec("", "-a --all-tasks -c --cpu-list", 1, stops="-p --pid"),
    "flock": _spec(
        "-w --timeout --wait -E --conflict-exit-code",
        "-s --shared -x -e --exclusive -u --unlock -n --nb --nonblock -o --close -F --no-fork --verbose",
        1,
    ),
    "timeout": _TIMEOUT,
    "gtimeout": _TIMEOUT,
    "time": _spec("-f --format -o --output", "-p -a --append -v --verbose -q --quiet --portability"),
    "stdbuf": _spec("-i --input -o --output -e --error"),
    "watch": _spec(
        "-n --interval -q --equexit",
        "-b --beep -c --color -C --no-color -d --differences -e --errexit -g --chgexit -p --precise "
        "-r --no-rerun -t --no-title -w --no-wrap -x --exec",
        joined=True,
    ),
    "script": _spec(
        "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format",
        "-a --append -e --return -f --flush -q --quiet",
        1,  # the typescript file; BSD script runs the words after it
        scripts="-c --command",
    ),
    "sudo": _spec(
        "-u --user -g --group -C --close-from -h --host -p --prompt -r --role -t --type -U --other-user "
        "-T --command-timeout -R --chroot",
        "-A --askpass -b --background -E --preserve-env -H --set-home -K -k --reset-timestamp -n --non-interactive "
        "-P --preserve-groups -S --stdin -s --shell -i --login -B --bell -N --no-update",
        chdir="-D --chdir",
        stops="-l --list -e --edit -v --validate -V --version",
        assignments=True,
    ),
    "doas": _spec("-C -u", "-n -s", stops="-L"),
    "pkexec": _spec("--user", "--disable-internal-agent --keep-cwd"),
    "su": _spec(
        "-s --shell -g --group -G --supp-group -w --whitelist-environment",
        "-l --login -m -p -P --pty",
        scripts="-c --command --session-command",
    ),
    "runuser": _spec(
        "-u --user -g --group -G --supp-group -s --shell -w",
        "-l --login -m -p -P --pty",
        scripts="-c --command --session-command",
    ),
    "chroot": _spec("--groups --userspec", "--skip-chdir", 1),
    "unshare": _spec("-S --setuid -G --setgid -R --root -w --wd", "-f --fork -m -u -i -n -p -U -C -T -r -c"),
    "strace": _spec(
        "-o -e -p -P -s -u -E -S -a -b -I -X -O",
        "-f -ff -c -C -d -D -q -r -t -tt -ttt -T -v -V -x -xx -y -yy -k -w -z -Z -n -i -F",
    ),
    "ltrace": _spec("-o -e -p -s -u -a -n -l -x -F -A -D", "-f -c -C -i -L -r -S -t -tt -ttt -T -w"),
    "caffeinate": _spec("-t -w", "-d -i -m -s -u"),
    "unbuffer": _spec("", "-p"),
    "chronic": _spec("", "-e -v"),
    "fakeroot": _spec("-l --lib --faked -s -i", "-u --unknown-is-real"),
    "eatmydata": _spec(),
    "busybox": _spec(),  # `busybox sh -c …`: the applet is the command
    "torsocks": _spec("-u -p -a -P", "-i -d -q --shell"),
    "proxychains": _spec("-f", "-q"),
    "proxychains4": _spec("-f", "-q"),
    "dbus-run-session": _spec("--config-file --dbus-daemon"),
    "catchsegv": _spec(),
    "valgrind": _spec(),
    "firejail": _spec(),
    "systemd-run": _spec(
        "-u --unit -p --property -E --setenv --slice -M --machine --description -H --host "
        "--uid --gid --nice --working-directory",
        "--user --system --scope -t --pty -P --pipe "
        "-q --quiet -G --collect --wait -S --shell -d --same-dir -r --remain-after-exit",
    ),
}
"""Commands that run the rest of their words as a command, with the options each reads first."""

RUNNERS: dict[tuple[str, str], Spec] = {
    ("uv", "run"): _spec("--with --python -p --project --directory --package --extra --group --env-file", ""),
    ("poetry", "run"): _spec(),
    ("pipenv", "run"): _spec(),
    ("pdm", "run"): _spec(),
    ("hatch", "run"): _spec(),
    ("bundle", "exec"): _spec(),
    ("pnpm", "exec"): _spec(),
    ("npm", "exec"): _spec("--package -w --workspace -c --call", "-y --yes"),
    ("npx", ""): _spec("-p --package -c --call", "-y --yes --no -q --quiet"),
    ("direnv", "exec"): _spec("", "", 1),
    ("conda", "run"): _spec("-n --name -p --prefix --cwd", "--live-stream --no-capture-output -v"),
    ("mise", "exec"): _spec(),
    ("mise", "x"): _spec(),
    ("rbenv", "exec"): _spec(),
    ("pyenv", "exec"): _spec(),
    ("asdf", "exec"): _spec(),
}
"""`tool sub cmd …`: subcommands that run a command (npx: the package's binary, read as a command too)."""

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "posh", "rbash"})
_SHELL_VALUES = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})

# Global options: what a program reads before its subcommand. Rules name subcommands (`Bash(git push *)`).
_GIT_VALUES = frozenset(
    {
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--config-env",
        "--super-prefix",
        "--attr-source",
        "--list-cmds",
    }
)
_GIT_FLAGS = frozenset(
    "-p --paginate -P --no-pager --no-replace-objects --no-lazy-fetch --no-optional-locks --no-advice --bare "
    "--literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs --exec-path --html-path "
    "--man-path --info-path --version -v --help -h".split()
)
GIT_COMMANDS = frozenset(
    """
    add am annotate apply archimport archive bisect blame branch bugreport bundle cat-file check-attr check-ignore
    check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean clone column commit
    commit-graph commit-tree config count-objects credential credential-cache credential-store cvsexportcommit
    cvsimport cvsserver daemon describe diagnose diff diff-files diff-index diff-tree difftool fast-export
    fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck
    fsck-objects fsmonitor--daemon gc get-tar-commit-id gitk grep gui hash-object help hook http-backend
    http-fetch http-push imap-send index-pack init init-db instaweb interpret-trailers lfs log ls-files ls-remote
    ls-tree mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-one-file merge-tree
    mergetool mktag mktree multi-pack-index mv name-rev notes p4 pack-objects pack-redundant pack-refs patch-id
    prune prune-packed pull push quiltimport range-diff read-tree rebase receive-pack reflog refs remote repack
    replace replay request-pull rerere reset restore rev-list rev-parse revert rm send-email send-pack sh-i18n
    sh-setup shell shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace
    submodule subtree svn switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
    update-server-info upload-archive upload-pack var verify-commit verify-pack verify-tag version whatchanged
    worktree write-tree
    """.split()
)
"""git's own commands. Any other word is an alias or a `git-NAME` program: what it runs is not known."""
PUSHING = frozenset({"send-pack", "http-push"})
"""git's plumbing that pushes: a `git push` rule covers `git send-pack` and `git http-push` (read as `git push`)."""

GLOBAL_OPTIONS: dict[str, Spec] = {
    "docker": _spec(
        "--config -c --context -H --host -l --log-level --tlscacert --tlscert --tlskey", "-D --debug --tls --tlsverify"
    ),
    "podman": _spec(
        "--connection -c --url --root --runroot --storage-driver --log-level --cgroup-manager", "--remote -r --syslog"
    ),
    "kubectl": _spec(
        "-n --namespace --context --cluster --user --kubeconfig -s --server --token --as --as-group --as-uid "
        "--certificate-authority --client-certificate --client-key --request-timeout --cache-dir -v --v "
        "--tls-server-name --username --password --profile --profile-output",
        "--insecure-skip-tls-verify --match-server-version --warnings-as-errors",
    ),
    "helm": _spec(
        "-n --namespace --kube-context --kubeconfig --registry-config --repository-config "
        "--repository-cache --burst-limit --qps",
        "--debug",
    ),
    "npm": _spec(
        "--prefix -C -w --workspace --registry --userconfig --globalconfig --cache --loglevel --tag --otp --scope",
        "-g --global -s --silent -q --quiet -d -dd -ddd --verbose -y --yes "
        "--no-audit --no-fund --offline --prefer-offline -ws --workspaces --include-workspace-root "
        "--if-present --ignore-scripts --foreground-scripts --json --force -f",
    ),
    "pnpm": _spec(
        "-C --dir -F --filter -w --workspace-root --reporter --loglevel",
        "-r --recursive -s --silent --stream --parallel",
    ),
    "yarn": _spec("--cwd --mutex --cache-folder --modules-folder", "-s --silent --verbose --offline"),
    "cargo": _spec(
        "-C --config --color -Z --manifest-path --target-dir", "-q --quiet -v --verbose --frozen --locked --offline"
    ),
    "make": _spec(
        "-C --directory -f --file --makefile -j --jobs -l --load-average -o -W -I --include-dir",
        "-s --silent -k --keep-going -n --dry-run -B --always-make -q -e -i -r -R -w --no-print-directory",
    ),
    "gh": _spec("-R --repo --hostname", ""),
    "terraform": _spec("-chdir", ""),
    "go": _spec("-C", ""),
}
"""Programs whose subcommand follows global options (git's own table is above)."""

_BUILTINS = frozenset(
    """
    : read mapfile readarray getopts let shift umask ulimit wait jobs fg bg disown history hash times caller
    compgen complete compopt enable help logout suspend bind dirs shopt set unset export local declare typeset
    """.split()
)
KNOWN_PROGRAMS = frozenset(
    {
        *WRAPPERS, *SHELLS, *GLOBAL_OPTIONS, *(name for name, _ in RUNNERS), *_BUILTINS, *operands.KNOWN,
        *read_only.ANY_ARGS, *read_only.RULES,
        "git", "xargs", "find", "parallel", "eval", "alias", "trap", "source", ".", "su", "runuser",
    }
)  # fmt: skip
"""Programs whose words the tables place: an unknown one may run a later word as a command (`prlimit git push`)."""

_NAME_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RUNS_A_PROGRAM = re.compile(
    r"^(?:core\.(?:hookspath|fsmonitor|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)"
    r"|sequence\.editor|diff\.external|diff\..+\.(?:textconv|command)|merge\..+\.driver"
    r"|filter\..+\.(?:clean|smudge|process)|credential\.(?:.+\.)?helper|gpg\.(?:.+\.)?program|pager\..+"
    r"|uploadpack\.packobjectshook|include\.path|includeif\..+\.path|protocol\..+|remote\..+\.(?:receivepack|uploadpack)"
    r"|interactive\.difffilter|instaweb\..+|web\.browser|browser\..+\.(?:cmd|path)"
    r"|mergetool\..+\.cmd|difftool\..+\.cmd|man\..+\.(?:cmd|path)|sendemail\..+|ssh\.variant|http\..+)",
    re.I | re.S,
)
"""git config keys whose value names a program git runs, or more config it reads (with `-c`: asked about)."""
_GIT_ENV = re.compile(
    r"^(?:GIT_CONFIG\w*|GIT_SSH\w*|GIT_EXTERNAL_DIFF|GIT_PAGER|GIT_EDITOR|GIT_SEQUENCE_EDITOR|"
    r"GIT_ASKPASS|GIT_PROXY_COMMAND|GIT_EXEC_PATH|GIT_DIR|GIT_WORK_TREE)="
)


_Add = Callable[[Reading], None]


def basename(word: str) -> str:
    """The program a path names: `/usr/bin/git` and `./git` are `git`."""
    return word.rsplit("/", 1)[-1] if "/" in word else word


def readings(words: Sequence[str], known: Sequence[bool], stdin: str | None = None) -> Readings:
    """Every reading of one simple command (see the module docstring).

    Args:
        words: the command's words after quote removal (assignments before it left out).
        known: for each word, whether its text is known before the command runs.
        stdin: the command line a shell reading its input would run: a here-string or here-document, the
            literal words `echo` or `printf` pipe to it; None when that input is not known.
    """
    found = Readings()
    seen: set[Reading] = set()

    def add(reading: Reading) -> None:
        if reading not in seen and len(found.readings) < MAX_READINGS:
            seen.add(reading)
            found.readings.append(reading)
        elif reading not in seen:  # too many ways to read it: say what runs is not known
            found.readings[-1] = Reading(reading.words[:1], 0)

    _read(tuple(words), tuple(known), stdin, "", 0, add, found)
    return found


def _open_from(known: tuple[bool, ...]) -> int | None:
    return next((i for i, k in enumerate(known) if not k), None)


def _read(
    words: tuple[str, ...],
    known: tuple[bool, ...],
    stdin: str | None,
    chdir: str | None,
    depth: int,
    add: _Add,
    found: Readings,
) -> None:
    if not words:
        return
    add(Reading(words, _open_from(known), chdir))
    if depth > _MAX_DEPTH or not known[0]:
        return
    name = basename(words[0])
    if name != words[0]:
        words = (name, *words[1:])
        add(Reading(words, _open_from(known), chdir))
    rest, rest_known = words[1:], known[1:]
    if name.startswith("git-") and name[4:] in GIT_COMMANDS:  # git's dashed programs (`git-core/git-push`)
        _git((name[4:], *rest), (True, *rest_known), chdir, add, found)
        return
    if name in ("source", "."):
        _source(rest, rest_known, stdin, found)
        return
    if name in ("su", "runuser"):
        _su(rest, rest_known, found)  # `su - root -c '…'`: after the user, the words are the shell's
    if name == "parallel":
        _parallel(rest, rest_known, stdin, chdir, depth, add, found)
        return
    spec = WRAPPERS.get(name)
    if spec is not None:
        for start, scripts, folder in _parse(spec, rest, rest_known):
            found.scripts.extend(scripts)
            where = _join(chdir, folder)
            if start is None or (name == "flock" and rest[start] in ("-c", "--command")):
                continue
            if spec.joined:
                tail = rest[start:]
                found.scripts.append(" ".join(tail) if all(rest_known[start:]) else None)
            _read(rest[start:], rest_known[start:], stdin, where, depth + 1, add, found)
        if name == "flock":
            _flock_command(rest, rest_known, found)
        return
    if name in SHELLS:
        _shell(name, rest, rest_known, stdin, found)
        return
    if name == "eval":
        found.scripts.append(" ".join(rest) if all(rest_known) else None)
        return
    if name in ("alias", "trap"):
        _alias_or_trap(name, rest, rest_known, found)
        return
    if name == "xargs":
        _xargs(rest, rest_known, chdir, depth, add, found)
        return
    if name == "find":
        _find(rest, rest_known, chdir, depth, add, found)
        return
    if name == "git":
        _git(rest, rest_known, chdir, add, found)
        return
    runner = RUNNERS.get((name, rest[0] if rest else "")) or RUNNERS.get((name, ""))
    if runner is not None:
        skip = 0 if (name, "") in RUNNERS else 1
        for start, _, _ in _parse(runner, rest[skip:], rest_known[skip:]):
            if start is not None:
                _read(rest[skip + start :], rest_known[skip + start :], stdin, chdir, depth + 1, add, found)
    global_spec = GLOBAL_OPTIONS.get(name)
    if global_spec is not None:
        for start, _, _ in _parse(global_spec, rest, rest_known):
            if start is not None and start > 0:
                add(Reading((name, *rest[start:]), _open_from((True, *rest_known[start:])), chdir))
    elif runner is None and name not in KNOWN_PROGRAMS:
        _guess(rest, rest_known, chdir, found)


def _guess(args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, found: Readings) -> None:
    """An unknown program may be a wrapper: every later word that could be a program starts a guess."""
    for i, (word, is_known) in enumerate(zip(args, known, strict=True)):
        if is_known and word and not word.startswith(("-", "+")) and "=" not in word:
            tail = (basename(word), *args[i + 1 :])
            if len(found.guesses) < MAX_READINGS:
                found.guesses.append(Reading(tail, len(tail), chdir))


STDIN_SCRIPTS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
"""Script paths that are the command's input: a shell or `source` reading one runs what the input holds."""
_DESCRIPTOR = re.compile(r"^/(?:dev/fd|proc/[^/]+/fd)/")


def _script_file(word: str, is_known: bool, stdin: str | None) -> tuple[bool, str | None]:
    """Whether a script path is a pipe or descriptor rather than a file, and the command line it then holds."""
    if not is_known:
        return True, None  # `source <(…)`: a process substitution, or an expansion
    if word in STDIN_SCRIPTS:
        return True, stdin
    if _DESCRIPTOR.match(word):
        return True, None
    return False, None


def _source(args: tuple[str, ...], known: tuple[bool, ...], stdin: str | None, found: Readings) -> None:
    """`source FILE`, `. FILE`: a script from the input or a process substitution is a command line to read."""
    at = 1 if args[:1] == ("--",) else 0
    if at < len(args):
        piped, script = _script_file(args[at], known[at], stdin)
        if piped:
            found.scripts.append(script)


def _join(chdir: str | None, folder: str | None) -> str | None:
    if chdir is None or folder is None:
        return None
    if not folder:
        return chdir
    if folder.startswith("/") or not chdir:
        return folder
    return f"{chdir}/{folder}"


def _parse(
    spec: Spec, args: tuple[str, ...], known: tuple[bool, ...]
) -> list[tuple[int | None, list[str | None], str | None]]:
    """The readings of a wrapper's options: (index of the command or None, command lines, folder) each.

    An option the spec does not know is read both as a flag and as an option taking a value.
    """
    results: list[tuple[int | None, list[str | None], str | None]] = []

    def value_at(i: int) -> tuple[str | None, int]:
        if i >= len(args):
            return None, i
        return (args[i] if known[i] else None), i + 1

    def finish(i: int, scripts: list[str | None], folder: str | None) -> None:
        start = i
        if spec.assignments:
            while start < len(args) and known[start] and _NAME_VALUE.match(args[start]):
                start += 1
        start += spec.positionals
        results.append((start if start < len(args) else None, scripts, folder))

    def walk(i: int, pos: int, scripts: list[str | None], folder: str | None) -> None:
        """Read from word `i`; `pos` > 0: from that letter of a short-option cluster."""
        while len(results) < MAX_READINGS:
            if i >= len(args):
                finish(i, scripts, folder)
                return
            word = args[i]
            if pos:
                if pos >= len(word):
                    i, pos = i + 1, 0
                    continue
                opt = "-" + word[pos]
                if opt in spec.stops:
                    results.append((None, scripts, folder))
                    return
                kind = _kind(spec, opt)
                if kind == "flag":
                    pos += 1
                    continue
                if kind == "unknown":
                    walk(i, pos + 1, list(scripts), folder)  # read as a flag
                value, nxt = (word[pos + 1 :], i + 1) if pos + 1 < len(word) else value_at(i + 1)
                scripts, folder = _taken(spec, opt, value, scripts, folder)
                i, pos = nxt, 0
                continue
            if not known[i]:
                results.append((i, scripts, folder))  # an unknown word: the reading is open from here
                return
            if word == "--":
                finish(i + 1, scripts, folder)
                return
            if spec.numeric and re.fullmatch(r"-\d+", word):
                i += 1
                continue
            if not word.startswith("-") or word == "-":
                finish(i, scripts, folder)
                return
            if not word.startswith("--"):
                pos = 1
                continue
            key, eq, attached = word.partition("=")
            if key in spec.stops:
                results.append((None, scripts, folder))
                return
            kind = _kind(spec, key)
            if kind == "flag" or (kind == "unknown" and eq):
                i += 1
                continue
            if kind == "unknown":
                walk(i + 1, 0, list(scripts), folder)  # read as a flag
            value, nxt = (attached, i + 1) if eq else value_at(i + 1)
            scripts, folder = _taken(spec, key, value, scripts, folder)
            i = nxt

    walk(0, 0, [], "")
    return results


def _kind(spec: Spec, option: str) -> str:
    if option in spec.flags:
        return "flag"
    if option in spec.values or option in spec.scripts or option in spec.chdir:
        return "value"
    return "unknown"


def _taken(
    spec: Spec, option: str, value: str | None, scripts: list[str | None], folder: str | None
) -> tuple[list[str | None], str | None]:
    if option in spec.scripts:  # env -S 'cmd args' splits its string into words: read as a command line too
        scripts = [*scripts, value]
    elif option in spec.chdir:
        folder = None if value is None else _join(folder, value)
    return scripts, folder


def _flock_command(args: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """`flock FILE -c 'cmd'`: the command line after the lock file."""
    for i, word in enumerate(args[:-1]):
        if word in ("-c", "--command"):
            found.scripts.append(args[i + 1] if known[i + 1] else None)


def _shell(name: str, args: tuple[str, ...], known: tuple[bool, ...], stdin: str | None, found: Readings) -> None:
    """`bash -lc '…'`, `sh -s`, `bash <<< '…'`, `echo … | sh`: the command line a shell runs."""
    if name == "busybox":
        return  # `busybox sh -c …` is read by the caller as the applet's own reading
    command_mode = False
    i = 0
    while i < len(args):
        word = args[i]
        if not known[i]:
            found.scripts.append(None)
            return
        if word in ("--", "-"):
            i += 1
            break
        if word in _SHELL_VALUES:
            i += 2
            continue
        if word.startswith("--"):
            if name == "fish" and word.partition("=")[0] in ("--command", "--init-command"):
                found.scripts.append(
                    word.partition("=")[2]
                    if "=" in word
                    else (args[i + 1] if i + 1 < len(args) and known[i + 1] else None)
                )
                return
            i += 1
            continue
        if word[:1] in "-+" and len(word) > 1:
            command_mode = command_mode or "c" in word[1:]
            i += 1
            continue
        break
    if command_mode:
        found.scripts.append(args[i] if i < len(args) and known[i] else None)
    elif i >= len(args) or "-s" in args[:i]:
        found.scripts.append(stdin)  # the script comes from the input
    else:
        piped, script = _script_file(args[i], known[i], stdin)
        if piped:  # `bash /dev/stdin <<< '…'`
            found.scripts.append(script)


def _alias_or_trap(name: str, args: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """`alias g='git push'` (run later as `g`) and `trap 'cmd' EXIT`: their text is a command line."""
    if name == "trap":
        operands = [i for i, w in enumerate(args) if not w.startswith("-")]
        if len(operands) >= 2:
            found.scripts.append(args[operands[0]] if known[operands[0]] else None)
        return
    for word, is_known in zip(args, known, strict=True):
        if "=" in word:
            found.scripts.append(word.partition("=")[2] if is_known else None)


_XARGS_VALUES = "-I -L -n -P -s -d -E -a --max-args --max-procs --max-chars --delimiter --arg-file --process-slot-var"
_XARGS = _spec(
    _XARGS_VALUES,
    "-0 -r -t -x -p -o --null --no-run-if-empty --verbose --exit --interactive --open-tty -i -l -e --replace "
    "--max-lines --eof --show-limits",
)


def _xargs(
    args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, depth: int, add: _Add, found: Readings
) -> None:
    """The command xargs runs: its words, open after them (the input becomes more arguments)."""
    replace = None
    for i, word in enumerate(args):
        if word == "-I" and i + 1 < len(args):
            replace = args[i + 1]
        elif word.startswith("-I") and len(word) > 2:
            replace = word[2:]
        elif word.startswith(("-i", "--replace")):
            replace = word.partition("=")[2] or (word[2:] if word.startswith("-i") else "") or "{}"
    for start, _, _ in _parse(_XARGS, args, known):
        command, command_known = (("echo",), (True,)) if start is None else (args[start:], known[start:])
        marks = tuple(k and not (replace and replace in w) for w, k in zip(command, command_known, strict=True))
        if replace is None:
            marks = (*marks, False)  # the input is appended: open after the words
            command = (*command, "")
        _read_open(command, marks, chdir, depth, add, found)


def _su(args: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """Every `-c CMD` of su, wherever it stands (the wrapper table reads only the options before the user)."""
    for i, word in enumerate(args):
        key, eq, value = word.partition("=")
        if word in ("-c", "--command", "--session-command") and i + 1 < len(args):
            found.scripts.append(args[i + 1] if known[i + 1] else None)
        elif eq and key in ("--command", "--session-command"):
            found.scripts.append(value if known[i] else None)
        elif word.startswith("-c") and len(word) > 2:
            found.scripts.append(word[2:] if known[i] else None)


def _parallel(
    args: tuple[str, ...],
    known: tuple[bool, ...],
    stdin: str | None,
    chdir: str | None,
    depth: int,
    add: _Add,
    found: Readings,
) -> None:
    """GNU parallel: the words before `:::` are a command, with arguments not known; none: the input's lines."""
    end = next((i for i, w in enumerate(args) if w in (":::", "::::", ":::+", "::::+")), len(args))
    start = next((i for i in range(end) if not args[i].startswith("-")), end)
    if start > 0:  # an option may take the next word: read from every start, as for an unknown option
        for i in range(start + 1):
            if i < end and not args[i].startswith("-"):
                _read_open((*args[i:end], ""), (*known[i:end], False), chdir, depth, add, found)
    if start >= end:
        found.scripts.append(stdin or None)  # the commands are the input's lines
    elif start == 0:
        _read_open((*args[:end], ""), (*known[:end], False), chdir, depth, add, found)


def _read_open(
    words: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, depth: int, add: _Add, found: Readings
) -> None:
    """Read a command whose last word stands for arguments not known (a placeholder "")."""
    if words and words[-1] == "" and not known[-1]:
        add(Reading(words[:-1], len(words) - 1, chdir))
        words, known = words[:-1], known[:-1]
    _read(words, known, None, chdir, depth + 1, add, found)


def _find(
    args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, depth: int, add: _Add, found: Readings
) -> None:
    """`find … -exec cmd {} ;` (also -execdir, -ok, -okdir): each command find runs."""
    i = 0
    while i < len(args):
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            command = args[i + 1 : end]
            marks = tuple(k and "{}" not in w for w, k in zip(command, known[i + 1 : end], strict=True))
            _read(command, marks, None, chdir if args[i] in ("-exec", "-ok") else None, depth + 1, add, found)
            i = end
        i += 1


def _git(args: tuple[str, ...], known: tuple[bool, ...], chdir: str | None, add: _Add, found: Readings) -> None:
    """git without its global options; an alias or unknown subcommand leaves the reading open."""
    i = 0
    folder = chdir
    while i < len(args):
        word = args[i]
        if not known[i]:
            break
        key, eq, attached = word.partition("=")
        if word.startswith("--") and key in _GIT_VALUES:
            value = attached if eq else (args[i + 1] if i + 1 < len(args) else "")
            _git_option(key, value, found)
            i += 1 if eq else 2
        elif word in ("-C", "-c"):
            value = args[i + 1] if i + 1 < len(args) else ""
            if word == "-C":
                folder = _join(folder, value if i + 1 < len(args) and known[i + 1] else None)
            else:
                _git_option("-c", value, found)
            i += 2
        elif word in _GIT_FLAGS or (word.startswith("--exec-path=")):
            if word.startswith("--exec-path"):
                found.program_config.append("git --exec-path runs git's commands from another folder")
            i += 1
        elif word.startswith("-"):
            add(Reading(("git", word), 1, folder))  # an option git may not know: what follows is not known
            return
        else:
            break
    rest, rest_known = args[i:], known[i:]
    _git_runs(rest, rest_known, found)
    opened = _open_from((True, *rest_known))
    if rest and rest_known[0] and rest[0] not in GIT_COMMANDS:
        opened = 1  # an alias (or a git-NAME program): what it runs is not in the text
    add(Reading(("git", *rest), opened, folder))
    if rest and rest[0] in PUSHING and rest_known[0]:  # the plumbing `git push` runs: a push rule covers it
        add(Reading(("git", "push", *rest[1:]), opened, folder))


_GIT_COMMAND_OPTIONS = {
    "rebase": ("-x", "--exec"),
    "difftool": ("-x", "--extcmd"),
    "filter-branch": ("--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter",
                      "--commit-filter", "--tag-name-filter"),
}  # fmt: skip
"""git subcommands' options whose value is a command line git runs."""


def _git_runs(rest: tuple[str, ...], known: tuple[bool, ...], found: Readings) -> None:
    """Command lines a git subcommand runs: `submodule foreach CMD`, `bisect run CMD`, `rebase --exec CMD`."""
    sub = rest[0] if rest else ""
    if sub == "submodule" and "foreach" in rest:
        at = rest.index("foreach") + 1
        while at < len(rest) and rest[at] in ("--recursive", "-q", "--quiet"):
            at += 1
        found.scripts.append(" ".join(rest[at:]) if all(known[at:]) else None)
    elif sub == "bisect" and rest[1:2] == ("run",):
        found.scripts.append(shlex.join(rest[2:]) if all(known[2:]) else None)
    for key in _GIT_COMMAND_OPTIONS.get(sub, ()):
        for i, word in enumerate(rest):
            if word == key and i + 1 < len(rest):
                found.scripts.append(rest[i + 1] if known[i + 1] else None)
            elif word.startswith(key + "=") or (len(key) == 2 and word.startswith(key) and len(word) > 2):
                found.scripts.append(word[len(key) + (word[len(key)] == "=") :] if known[i] else None)


def _git_option(key: str, value: str, found: Readings) -> None:
    alias = value.lower().startswith("alias.")
    if key == "-c" and alias:  # `-c alias.p=push p` is `git push`; with `!`, a shell command
        found.program_config.append(f"git -c {value.partition('=')[0]} defines a command git runs")
        body = value.partition("=")[2].lstrip()
        if body.startswith("!"):
            found.scripts.append(body[1:])
    elif key == "-c" and _RUNS_A_PROGRAM.match(value):
        found.program_config.append(f"git -c {value.partition('=')[0]} makes git run a program or read more config")
        if not value.lower().startswith(("include", "http.", "protocol.")):
            found.scripts.append(value.partition("=")[2].lstrip().removeprefix("!"))  # the command git runs
    elif key == "--config-env":
        found.program_config.append("git --config-env sets config from the environment")
    elif key == "--exec-path":
        found.program_config.append("git --exec-path runs git's commands from another folder")


def git_env_assignment(assignment: str) -> bool:
    """Whether a `NAME=value` before git changes what git runs or which config it reads."""
    return _GIT_ENV.match(assignment) is not None
