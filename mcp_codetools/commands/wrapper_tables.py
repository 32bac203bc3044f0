"""The wrapper tables: programs that run a command given in their words, each with the options it reads first.

Data only; `commands.wrappers` reads it. Git's own global options are in git's table (`commands.git`).
"""

from __future__ import annotations

from mcp_codetools.commands import programs
from mcp_codetools.commands.readings import Spec, spec

_SCRIPT_RUNS = ("-c", "--command")
"""script's options whose value is a command line it runs (its other options are in its `programs` entry)."""
_TIMEOUT = spec("-s --signal -k --kill-after", "--foreground --preserve-status -v --verbose", 1)


WRAPPERS: dict[str, Spec] = {
    "env": spec(
        "-u --unset -a --argv0",
        "-i --ignore-environment -0 --null -v --debug --block-signal --default-signal --ignore-signal",
        scripts="-S --split-string",
        chdir="-C --chdir",
        stops="--list-signal-handling",
        assignments=True,
    ),
    "exec": spec("-a", "-c -l"),
    "builtin": spec(),
    "command": spec("", "-p", stops="-v -V"),
    "nohup": spec(),
    "nice": spec("-n --adjustment", numeric=True),
    "renice": spec("-n --priority -g -p -u", numeric=True),
    "setsid": spec("", "-c --ctty -f --fork -w --wait"),
    "ionice": spec("-c --class -n --classdata -p --pid -P --pgid -u --uid", "-t --ignore"),
    "chrt": spec("-T --sched-runtime -P --sched-period -D --sched-deadline", "-a -b -d -e -f -i -o -r -R -m -v", 1),
    "taskset": spec("", "-a --all-tasks -c --cpu-list", 1, stops="-p --pid"),
    "flock": spec(
        "-w --timeout --wait -E --conflict-exit-code",
        "-s --shared -x -e --exclusive -u --unlock -n --nb --nonblock -o --close -F --no-fork --verbose",
        1,
    ),
    "timeout": _TIMEOUT,
    "gtimeout": _TIMEOUT,
    "time": spec("-f --format -o --output", "-p -a --append -v --verbose -q --quiet --portability"),
    "stdbuf": spec("-i --input -o --output -e --error"),
    "watch": spec(
        "-n --interval -q --equexit",
        "-b --beep -c --color -C --no-color -d --differences -e --errexit -g --chgexit -p --precise "
        "-r --no-rerun -t --no-title -w --no-wrap -x --exec",
        joined=True,
    ),
    "script": spec(
        " ".join(o for o in programs.PROGRAMS["script"].takes_value if o not in _SCRIPT_RUNS),
        "-a --append -e --return -f --flush -q --quiet",
        1,  # the typescript file; BSD script runs the words after it
        scripts=" ".join(_SCRIPT_RUNS),
    ),
    "sudo": spec(
        "-u --user -g --group -C --close-from -h --host -p --prompt -r --role -t --type -U --other-user "
        "-T --command-timeout -R --chroot",
        "-A --askpass -b --background -E --preserve-env -H --set-home -K -k --reset-timestamp -n --non-interactive "
        "-P --preserve-groups -S --stdin -s --shell -i --login -B --bell -N --no-update",
        chdir="-D --chdir",
        stops="-l --list -e --edit -v --validate -V --version",
        assignments=True,
    ),
    "doas": spec("-C -u", "-n -s", stops="-L"),
    "pkexec": spec("--user", "--disable-internal-agent --keep-cwd"),
    "su": spec(
        "-s --shell -g --group -G --supp-group -w --whitelist-environment",
        "-l --login -m -p -P --pty",
        scripts="-c --command --session-command",
    ),
    "runuser": spec(
        "-u --user -g --group -G --supp-group -s --shell -w",
        "-l --login -m -p -P --pty",
        scripts="-c --command --session-command",
    ),
    "chroot": spec("--groups --userspec", "--skip-chdir", 1),
    "unshare": spec("-S --setuid -G --setgid -R --root -w --wd", "-f --fork -m -u -i -n -p -U -C -T -r -c"),
    "strace": spec(
        "-o -e -p -P -s -u -E -S -a -b -I -X -O",
        "-f -ff -c -C -d -D -q -r -t -tt -ttt -T -v -V -x -xx -y -yy -k -w -z -Z -n -i -F",
    ),
    "ltrace": spec("-o -e -p -s -u -a -n -l -x -F -A -D", "-f -c -C -i -L -r -S -t -tt -ttt -T -w"),
    "caffeinate": spec("-t -w", "-d -i -m -s -u"),
    "unbuffer": spec("", "-p"),
    "chronic": spec("", "-e -v"),
    "fakeroot": spec("-l --lib --faked -s -i", "-u --unknown-is-real"),
    "eatmydata": spec(),
    "busybox": spec(),  # `busybox sh -c …`: the applet is the command
    "torsocks": spec("-u -p -a -P", "-i -d -q --shell"),
    "proxychains": spec("-f", "-q"),
    "proxychains4": spec("-f", "-q"),
    "dbus-run-session": spec("--config-file --dbus-daemon"),
    "catchsegv": spec(),
    "valgrind": spec(),
    "firejail": spec(),
    "systemd-run": spec(
        "-u --unit -p --property -E --setenv --slice -M --machine --description -H --host "
        "--uid --gid --nice --working-directory",
        "--user --system --scope -t --pty -P --pipe "
        "-q --quiet -G --collect --wait -S --shell -d --same-dir -r --remain-after-exit",
    ),
}
"""Commands that run the rest of their words as a command, with the options each reads first."""


RUNNERS: dict[tuple[str, str], Spec] = {
    ("uv", "run"): spec("--with --python -p --project --directory --package --extra --group --env-file", ""),
    ("poetry", "run"): spec(),
    ("pipenv", "run"): spec(),
    ("pdm", "run"): spec(),
    ("hatch", "run"): spec(),
    ("bundle", "exec"): spec(),
    ("pnpm", "exec"): spec(),
    ("npm", "exec"): spec("--package -w --workspace -c --call", "-y --yes"),
    ("npx", ""): spec("-p --package -c --call", "-y --yes --no -q --quiet"),
    ("direnv", "exec"): spec("", "", 1),
    ("conda", "run"): spec("-n --name -p --prefix --cwd", "--live-stream --no-capture-output -v"),
    ("mise", "exec"): spec(),
    ("mise", "x"): spec(),
    ("rbenv", "exec"): spec(),
    ("pyenv", "exec"): spec(),
    ("asdf", "exec"): spec(),
}
"""`tool sub cmd …`: subcommands that run a command (npx: the package's binary, read as a command too)."""


SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "posh", "rbash"})


SHELL_VALUES = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


GLOBAL_OPTIONS: dict[str, Spec] = {
    "docker": spec(
        "--config -c --context -H --host -l --log-level --tlscacert --tlscert --tlskey", "-D --debug --tls --tlsverify"
    ),
    "podman": spec(
        "--connection -c --url --root --runroot --storage-driver --log-level --cgroup-manager", "--remote -r --syslog"
    ),
    "kubectl": spec(
        "-n --namespace --context --cluster --user --kubeconfig -s --server --token --as --as-group --as-uid "
        "--certificate-authority --client-certificate --client-key --request-timeout --cache-dir -v --v "
        "--tls-server-name --username --password --profile --profile-output",
        "--insecure-skip-tls-verify --match-server-version --warnings-as-errors",
    ),
    "helm": spec(
        "-n --namespace --kube-context --kubeconfig --registry-config --repository-config "
        "--repository-cache --burst-limit --qps",
        "--debug",
    ),
    "npm": spec(
        "--prefix -C -w --workspace --registry --userconfig --globalconfig --cache --loglevel --tag --otp --scope",
        "-g --global -s --silent -q --quiet -d -dd -ddd --verbose -y --yes "
        "--no-audit --no-fund --offline --prefer-offline -ws --workspaces --include-workspace-root "
        "--if-present --ignore-scripts --foreground-scripts --json --force -f",
    ),
    "pnpm": spec(
        "-C --dir -F --filter -w --workspace-root --reporter --loglevel",
        "-r --recursive -s --silent --stream --parallel",
    ),
    "yarn": spec("--cwd --mutex --cache-folder --modules-folder", "-s --silent --verbose --offline"),
    "cargo": spec(
        "-C --config --color -Z --manifest-path --target-dir", "-q --quiet -v --verbose --frozen --locked --offline"
    ),
    "make": spec(
        "-C --directory -f --file --makefile -j --jobs -l --load-average -o -W -I --include-dir",
        "-s --silent -k --keep-going -n --dry-run -B --always-make -q -e -i -r -R -w --no-print-directory",
    ),
    "gh": spec("-R --repo --hostname", ""),
    "terraform": spec("-chdir", ""),
    "go": spec("-C", ""),
}
"""Programs whose subcommand follows global options (git's own table is above)."""


XARGS = Spec(
    values=frozenset(name for name, option in programs.XARGS.items() if option.takes == "value"),
    flags=frozenset(name for name, option in programs.XARGS.items() if option.takes != "value"),
)
"""xargs's options before the command it runs (`--replace`'s value only after `=`: read as a flag)."""
