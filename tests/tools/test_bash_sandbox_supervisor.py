"""bubblewrap's supervisor (`shell/supervisor.py`): every way to make a missing protected name is refused,
ordinary creates behave as without it, and the command's exit, output and processes are as before.

Each attack runs a real command under `Sandbox.wrap` in a root where `.envrc`, `.mcp.json`, `.vscode`,
`.claude`, `mcp-codetools.toml` and `.git/hooks` are missing and kept, then checks the host's folder.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import secrets
import shlex
import signal
import stat
import subprocess
import sys
import textwrap
import types
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from mcp_codetools.shell import sandbox as sandbox_module
from mcp_codetools.shell.sandbox import Sandbox, SandboxSettings, SandboxUnavailable, probe
from tests.cmdlines import processes_with
from tests.tools.test_bash_sandbox import working

pytestmark = pytest.mark.linux_only

TIMEOUT_S = 60
VENV_TIMEOUT_S = 120
MISSING = (".envrc", ".mcp.json", ".vscode", ".claude", "mcp-codetools.toml")


def supervising(backend: str) -> Sandbox:
    """`backend` with its supervisor: bubblewrap's, or Landlock's (`landlock_guard.py`); skips where it cannot run."""
    found = working(backend)
    if not found.supervised and found.backend == "landlock":
        pytest.skip("Landlock's supervisor cannot run here: the folders are frozen instead")
    return found


@pytest.fixture(params=["bwrap", "landlock"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    return supervising(request.param)


@pytest.fixture
def bwrap() -> Sandbox:
    """bubblewrap alone: the command runs in a PID namespace with the supervisor as its first process."""
    return working("bwrap")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """`.git` (with `config`, without `hooks`), `a.txt` and `sub/`; the protected names at the top are missing."""
    folder = (tmp_path / "ws").resolve()
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (folder / "sub").mkdir()
    (folder / "a.txt").write_text("a\n", encoding="utf-8")
    return folder


def kept(root: Path) -> list[Path]:
    return [*(root / name for name in MISSING), root / ".git" / "hooks", root / ".git" / "config"]


def run(
    sandbox: Sandbox,
    root: Path,
    argv: Sequence[str],
    *,
    timeout: float = TIMEOUT_S,
    read_only: Sequence[Path] | None = None,
) -> subprocess.CompletedProcess[str]:
    wrapped, env = sandbox.wrap(
        list(argv), cwd=root, writable=[root], env=dict(os.environ),
        read_only=kept(root) if read_only is None else read_only,
    )  # fmt: skip
    return subprocess.run(
        wrapped, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )  # fmt: skip


def sh(sandbox: Sandbox, root: Path, script: str, *, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return run(sandbox, root, ["bash", "-c", script], timeout=timeout)


def py(
    sandbox: Sandbox, root: Path, code: str, *, read_only: Sequence[Path] | None = None
) -> subprocess.CompletedProcess[str]:
    return run(sandbox, root, [sys.executable, "-I", "-c", textwrap.dedent(code)], read_only=read_only)


def assert_nothing_kept_made(root: Path) -> None:
    made = [name for name in MISSING if os.path.lexists(root / name)]
    assert made == [] and not os.path.lexists(root / ".git" / "hooks"), made
    assert (root / ".git" / "config").read_text(encoding="utf-8") == "[core]\n"


# --- the attacks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        "ln -s .envrc x; echo made > x",  # a dangling link to a kept name
        "ln -s sub/../.envrc x; echo made >> x",
        "ln -s /proc/self/cwd/.mcp.json y; echo made > y",
        "ln -s .git g; mkdir g/hooks; touch g/hooks",  # a linked folder on the way
        "cd sub && touch ../.envrc && mkdir ../.vscode",  # relative to the cwd
        "touch a && ln a .envrc; ln -s a .mcp.json; ln -s .claude x && ln x .claude",
        "mkfifo .envrc; mknod .mcp.json p",
        "mv a.txt .envrc; mv .git .git2; mv sub .vscode; cp -r sub .claude",
        "mkdir -p .git/hooks; mkdir .vscode; mkdir -p .claude/x",
    ],
)
def test_a_missing_kept_name_cannot_be_made(sandbox: Sandbox, root: Path, script: str) -> None:
    sh(sandbox, root, script)
    assert_nothing_kept_made(root)
    assert (root / ".git").is_dir()


def test_python_renames_links_and_sockets_are_refused(sandbox: Sandbox, root: Path) -> None:
    code = """
        import ctypes, errno, os, socket
        libc = ctypes.CDLL(None, use_errno=True)
        results = []
        def attempt(what, call):
            try:
                call()
                results.append(what + "=made")
            except OSError as exc:
                results.append(f"{what}={errno.errorcode[exc.errno]}")
        def exchange(a, b):
            if libc.renameat2(-100, a, -100, b, 2) != 0:
                raise OSError(ctypes.get_errno(), "renameat2")
        os.mkdir("d")
        attempt("rename", lambda: os.rename("a.txt", ".envrc"))
        attempt("exchange", lambda: exchange(b"d", b".git"))
        attempt("replace", lambda: os.replace("d", ".vscode"))
        attempt("link", lambda: os.link("a.txt", ".mcp.json"))
        attempt("symlink", lambda: os.symlink("a.txt", "mcp-codetools.toml"))
        attempt("fifo", lambda: os.mkfifo(".envrc"))
        attempt("socket", lambda: socket.socket(socket.AF_UNIX).bind(".mcp.json"))
        attempt("socket-ok", lambda: socket.socket(socket.AF_UNIX).bind("ok.sock"))
        attempt("abstract", lambda: socket.socket(socket.AF_UNIX).bind("\\0mcp-codetools-test"))
        attempt("tcp", lambda: socket.socket().bind(("127.0.0.1", 0)))
        here = os.open(".", os.O_RDONLY)
        attempt("dirfd", lambda: os.close(os.open(".claude", os.O_CREAT | os.O_WRONLY, dir_fd=here)))
        sub = os.open("sub", os.O_RDONLY)
        attempt("dirfd-up", lambda: os.mkdir("../.vscode", dir_fd=sub))
        attempt("dirfd-ok", lambda: os.close(os.open("made.txt", os.O_CREAT | os.O_WRONLY, dir_fd=sub)))
        print(" ".join(results))
    """
    done = py(sandbox, root, code)
    results = dict(item.split("=") for item in done.stdout.split())
    assert results.pop("socket-ok") == "made" and results.pop("dirfd-ok") == "made", done.stdout + done.stderr
    tcp = results.pop("tcp")  # a TCP bind, which Landlock's network rule (ABI 4+) refuses
    assert results.pop("abstract") == "made" and (tcp == "made" or sandbox.backend == "landlock")
    assert all(value in ("EACCES", "EEXIST") for value in results.values()), results
    assert_nothing_kept_made(root)
    assert stat.S_ISSOCK(os.lstat(root / "ok.sock").st_mode) and (root / "sub" / "made.txt").is_file()


def test_an_unnamed_file_gets_a_name_through_the_callers_proc_link(sandbox: Sandbox, root: Path) -> None:
    """`O_TMPFILE`, then `linkat("/proc/self/fd/N", AT_SYMLINK_FOLLOW)`: the link named is the caller's."""
    code = """
        import ctypes, errno, os
        libc = ctypes.CDLL(None, use_errno=True)
        results = []
        for name in (b"kept.txt", b".envrc"):
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
            os.write(fd, b"unnamed")
            done = libc.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, name, 0x400)
            results.append(name.decode() + "=" + ("made" if done == 0 else errno.errorcode[ctypes.get_errno()]))
        sub = os.open("sub", os.O_RDONLY)
        git = os.open(".git", os.O_RDONLY)
        for label, call in (("mkdirat-hooks", lambda: os.mkdir("hooks", dir_fd=git)),
                            ("symlink-up", lambda: os.symlink("x", "../.mcp.json", dir_fd=sub))):
            try:
                call()
                results.append(label + "=made")
            except OSError as exc:
                results.append(label + "=" + errno.errorcode[exc.errno])
        print(" ".join(results))
    """
    done = py(sandbox, root, code)
    assert done.stdout.split() == [
        "kept.txt=made", ".envrc=EACCES", "mkdirat-hooks=EACCES", "symlink-up=EACCES"
    ], done.stdout + done.stderr  # fmt: skip
    assert (root / "kept.txt").read_text() == "unnamed"
    assert_nothing_kept_made(root)


def test_calls_the_filter_cannot_check_answer_enosys(sandbox: Sandbox, root: Path) -> None:
    code = """
        import ctypes, os, platform
        libc = ctypes.CDLL(None, use_errno=True)
        how = ctypes.create_string_buffer(24)  # struct open_how: flags, mode, resolve
        ctypes.memmove(how, (os.O_CREAT | os.O_WRONLY).to_bytes(8, "little") + (0o644).to_bytes(8, "little"), 16)
        print("openat2", libc.syscall(437, -100, b".envrc", how, 24), ctypes.get_errno())
        params = ctypes.create_string_buffer(120)
        print("io_uring_setup", libc.syscall(425, 8, params), ctypes.get_errno())
        if platform.machine() == "x86_64":  # the x32 ABI's mkdir: the same call under another number
            print("x32", libc.syscall(0x40000000 | 83, b".vscode", 0o755), ctypes.get_errno())
        prog = (ctypes.c_uint16 * 4)(6, 0, 0, 0x7FFF)  # a one-row filter answering ALLOW
        fprog = (ctypes.c_uint64 * 2)(1, ctypes.addressof(prog))
        number = 317 if platform.machine() == "x86_64" else 277
        print("listener", libc.syscall(number, 1, 8, fprog), ctypes.get_errno())
        print("fsopen", libc.syscall(430, b"overlay", 0), ctypes.get_errno())  # the same number on both
    """
    done = py(sandbox, root, code)
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}
    enosys, eperm = "38", "1"
    assert lines["openat2"] == ["-1", enosys] and lines["io_uring_setup"] == ["-1", enosys], done.stdout + done.stderr
    assert lines.get("x32", ["-1", enosys]) == ["-1", enosys]
    assert lines["listener"] == ["-1", eperm]  # a listener of its own would take the calls before the supervisor
    # No mount even in a user namespace of its own (without the filter: EPERM here, success there)
    assert lines["fsopen"] == ["-1", enosys], done.stdout + done.stderr
    assert_nothing_kept_made(root)


def test_a_thread_racing_the_path_buffer_never_makes_the_kept_name(sandbox: Sandbox, root: Path) -> None:
    code = """
        import ctypes, os, threading
        libc = ctypes.CDLL(None, use_errno=True)
        buffer = ctypes.create_string_buffer(b"ok.txt", 16)
        stop = threading.Event()
        def flip():
            while not stop.is_set():
                ctypes.memmove(buffer, b".envrc\\0", 7)
                ctypes.memmove(buffer, b"ok.txt\\0", 7)
        thread = threading.Thread(target=flip)
        thread.start()
        opened = refused = 0
        for _ in range(2000):
            fd = libc.open(buffer, os.O_CREAT | os.O_WRONLY, 0o644)
            if fd >= 0:
                opened += 1
                os.close(fd)
            else:
                refused += 1
        stop.set()
        thread.join()
        print(opened, refused)
    """
    done = py(sandbox, root, code)
    opened, refused = map(int, done.stdout.split())
    assert opened + refused == 2000 and opened > 0, done.stderr
    assert_nothing_kept_made(root)
    assert (root / "ok.txt").is_file()


# --- ordinary creates behave as without the supervisor ------------------------------------------------------


def test_umask_and_modes_are_the_callers(sandbox: Sandbox, root: Path) -> None:
    done = sh(sandbox, root, "umask 077; touch f; mkdir d; mkfifo p; umask 022; install -m 0751 /dev/null x")
    assert done.returncode == 0, done.stderr
    modes = {name: stat.S_IMODE(os.lstat(root / name).st_mode) for name in ("f", "d", "p", "x")}
    assert modes == {"f": 0o600, "d": 0o700, "p": 0o600, "x": 0o751}


def test_open_flags_behave_as_the_kernels(sandbox: Sandbox, root: Path) -> None:
    code = """
        import errno, os
        def attempt(what, *args):
            try:
                os.close(os.open(*args))
                print(what, "ok")
            except OSError as exc:
                print(what, errno.errorcode[exc.errno])
        os.symlink("a.txt", "link")
        os.symlink("nowhere", "dangling")
        attempt("excl-existing", "a.txt", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        attempt("excl-link", "link", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        attempt("nofollow-link", "link", os.O_CREAT | os.O_NOFOLLOW | os.O_WRONLY)
        attempt("through-link", "link", os.O_CREAT | os.O_WRONLY | os.O_APPEND)
        attempt("dangling", "dangling", os.O_CREAT | os.O_WRONLY)
        attempt("folder", "sub", os.O_CREAT | os.O_RDONLY)
        attempt("missing-parent", "none/f", os.O_CREAT | os.O_WRONLY)
        attempt("trunc", "a.txt", os.O_CREAT | os.O_TRUNC | os.O_WRONLY)
        fd = os.open("kept-open", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC)
        print("cloexec", "ok" if not os.get_inheritable(fd) else "inheritable")
        fd = os.open("inherited", os.O_CREAT | os.O_WRONLY)
        os.set_inheritable(fd, False)
        print("write", os.write(fd, b"xyz"))
    """
    done = py(sandbox, root, code)
    results = dict(line.split() for line in done.stdout.splitlines())
    assert results == {
        "excl-existing": "EEXIST", "excl-link": "EEXIST", "nofollow-link": "ELOOP", "through-link": "ok",
        "dangling": "ok", "folder": "EISDIR", "missing-parent": "ENOENT", "trunc": "ok", "cloexec": "ok",
        "write": "3",
    }, done.stderr  # fmt: skip
    assert (root / "nowhere").is_file() and (root / "a.txt").read_text() == ""
    assert (root / "inherited").read_bytes() == b"xyz"


def test_the_standard_streams_by_name_are_the_commands(sandbox: Sandbox, root: Path) -> None:
    """`/dev/stdout`, `/dev/fd/1`, `/proc/self/...`: looked up by the supervisor, they would name its own."""
    script = (
        "echo 1 > /dev/stdout; echo 2 > /dev/fd/1; echo 3 > /proc/self/fd/1; echo 4 | tee /dev/stderr >/dev/null; "
        "echo 5 > /proc/thread-self/fd/1; ln -s /dev/stdout out; echo 6 > out; echo 7 > /proc/self/cwd/sub/f"
    )
    done = sh(sandbox, root, script)
    assert (done.stdout.split(), done.stderr.split()) == (["1", "2", "3", "5", "6"], ["4"])
    assert (root / "sub" / "f").read_text() == "7\n"


def test_a_fifo_whose_reader_makes_files_first_does_not_stall_the_others(sandbox: Sandbox, root: Path) -> None:
    """Opening a FIFO waits for its other end: that wait must not hold up the reader's own creating calls."""
    script = "mkfifo p; (echo through > p) & sleep 0.3; mkdir d && cat p > d/got && cat d/got"
    done = sh(sandbox, root, script)
    assert done.stdout == "through\n", done.stderr


def test_a_unix_socket_bound_from_a_thread(sandbox: Sandbox, root: Path) -> None:
    code = """
        import socket, threading
        out = []
        def bind(name):
            try:
                socket.socket(socket.AF_UNIX).bind(name)
                out.append(name + "=made")
            except OSError as exc:
                out.append(f"{name}={exc.errno}")
        for name in ("t.sock", ".mcp.json"):
            thread = threading.Thread(target=bind, args=(name,))
            thread.start()
            thread.join()
        print(" ".join(out))
    """
    done = py(sandbox, root, code)
    assert done.stdout.split() == ["t.sock=made", ".mcp.json=13"], done.stderr
    assert_nothing_kept_made(root)


def tiny_wheel(folder: Path) -> Path:
    """A pure-Python wheel with one module and a console script: what pip installs, with no build and no index."""
    files = {
        "tiny/__init__.py": "ANSWER = 42\n\n\ndef main():\n    print('tiny', ANSWER)\n",
        "tiny-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
        "tiny-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "tiny-1.0.dist-info/entry_points.txt": "[console_scripts]\ntiny = tiny:main\n",
    }
    record = []
    wheel = folder / "tiny-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            archive.writestr(name, data)
            record.append(f"{name},sha256={digest},{len(data)}\n")
        archive.writestr("tiny-1.0.dist-info/RECORD", "".join(record) + "tiny-1.0.dist-info/RECORD,,\n")
    return wheel


PIP_OF_PYTHON3 = """
import glob, importlib.util, os
spec = importlib.util.find_spec("pip")
if spec is not None and spec.origin:
    print(os.path.dirname(spec.origin))
else:  # Debian's python3 without python3-pip: the wheel ensurepip would install, which pip runs from as well
    try:
        import ensurepip
        bundled = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")
    except ImportError:
        bundled = ""
    wheels = glob.glob(os.path.join(bundled, "pip-*.whl")) + glob.glob("/usr/share/python-wheels/pip-*.whl")
    print(os.path.join(wheels[0], "pip") if wheels else "python3 has no pip")
"""
"""Where python3's pip is: its package folder, or a pip wheel (`python pip-*.whl/pip` runs pip)."""


def test_a_virtual_environment_with_pip(sandbox: Sandbox, root: Path) -> None:
    # pip installs into a venv made in the sandbox: its folders, links, files and an executable script all go
    # through the supervisor. pip runs from python3's own copy (compiled once) on a local wheel: installing pip
    # itself into the venv (ensurepip, about 3,100 creating calls) cost ~9 CPU-s a backend for the same point.
    wheel = tiny_wheel(root)
    pip = f'"$(python3 -c {shlex.quote(PIP_OF_PYTHON3)})"'
    script = f"python3 -m venv --without-pip .venv && .venv/bin/python {pip} install -q --no-index --no-deps"
    script += f" --no-cache-dir --disable-pip-version-check {wheel.name} && .venv/bin/tiny"
    done = sh(sandbox, root, script, timeout=VENV_TIMEOUT_S)
    assert (done.returncode, done.stdout) == (0, "tiny 42\n"), done.stderr
    installed = list((root / ".venv" / "lib").glob("python3*/site-packages/tiny-1.0.dist-info/INSTALLER"))
    assert len(installed) == 1 and installed[0].read_text() == "pip\n"
    assert os.access(root / ".venv" / "bin" / "tiny", os.X_OK)
    assert_nothing_kept_made(root)


# --- the command's exit, output and processes ---------------------------------------------------------------


def test_the_exit_status_is_the_commands(sandbox: Sandbox, root: Path) -> None:
    assert sh(sandbox, root, "exit 7").returncode == 7
    assert sh(sandbox, root, "kill -TERM $$").returncode == 128 + signal.SIGTERM  # as bash reports a signal
    assert run(sandbox, root, ["no-such-program-here"]).returncode == 127


def test_signals_sent_to_the_first_process_reach_the_command(bwrap: Sandbox, root: Path) -> None:
    done = sh(bwrap, root, "trap 'echo got; exit 3' TERM; kill -TERM 1; sleep 20 & wait")
    assert (done.returncode, done.stdout) == (3, "got\n"), done.stderr


def test_the_supervisor_cannot_be_read_or_traced(sandbox: Sandbox, root: Path) -> None:
    # Its fds include the listener: a command holding it could answer its own calls. It is the shell's parent.
    script = "p=$PPID; cat /proc/$p/environ; head -c1 /proc/$p/mem; for n in 0 1 2 3 4 5 6 7 8; do "
    script += "readlink /proc/$p/fd/$n; (exec 9</proc/$p/fd/$n && echo opened $n); done; echo end"
    done = sh(sandbox, root, script)
    assert done.stdout.strip() == "end", done.stdout


def test_a_command_that_made_itself_undumpable_can_still_make_files(sandbox: Sandbox, root: Path) -> None:
    """ssh does this; without CAP_SYS_PTRACE the supervisor could not read its paths and would refuse them.

    bubblewrap's supervisor keeps that capability; Landlock's has it only when the server runs as root.
    """
    code = """
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        open("made.txt", "w").write("x")
        open(".envrc", "w")
    """
    done = py(sandbox, root, code)
    if sandbox.backend == "landlock" and os.geteuid() != 0:  # its parent, with no capability, cannot read it
        assert "PermissionError" in done.stderr and not (root / "made.txt").exists(), done.stderr
    else:
        assert "PermissionError" in done.stderr and (root / "made.txt").read_text() == "x", done.stderr
    assert_nothing_kept_made(root)


def test_the_command_has_no_capabilities(sandbox: Sandbox, root: Path) -> None:
    """The supervisor keeps CAP_SYS_PTRACE; the command gets none, and no exec brings one back."""
    done = sh(sandbox, root, "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status | awk '{print $2}' | sort -u")
    assert done.stdout.split() == ["0000000000000000"], done.stdout + done.stderr


def test_output_ends_with_the_command_and_no_process_is_left(bwrap: Sandbox, root: Path) -> None:
    tag = f"mcp-codetools-supervised-{secrets.token_hex(4)}"
    done = sh(bwrap, root, f"(exec -a {tag} sleep 600 &); setsid bash -c 'exec -a {tag} sleep 600' & echo done")
    assert (done.returncode, done.stdout) == (0, "done\n")  # returned at once: nothing held the output open
    assert processes_with(tag) == []


# --- the probe ----------------------------------------------------------------------------------------------


def test_the_probe_fails_with_a_reason_when_the_supervisor_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    working("bwrap")
    refuse = tmp_path / "refuse.py"
    refuse.write_text("import sys\nprint('no seccomp user notification here', file=sys.stderr)\nsys.exit(126)\n")
    monkeypatch.setattr(sandbox_module, "SUPERVISOR_LAUNCHER", (sys.executable, "-I", "-S", str(refuse)))
    with pytest.raises(SandboxUnavailable, match="supervisor cannot run.*no seccomp user notification here"):
        probe(SandboxSettings(enabled=True, backend="bwrap"))


def test_its_launcher_ends_with_the_status_and_the_message_it_printed() -> None:
    # supervise.py skips the interpreter's shutdown (os._exit): what was printed must still come out.
    done = subprocess.run(
        [*sandbox_module.SUPERVISOR_LAUNCHER, "--no-such-option"], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert (done.returncode, done.stderr) == (2, "sandbox supervisor: unknown option '--no-such-option'\n")


def test_an_architecture_without_a_table_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_codetools.shell import supervisor

    monkeypatch.setattr(supervisor.os, "uname", lambda: types.SimpleNamespace(machine="riscv64"))
    assert supervisor.run([], ["true"]) == 126  # before anything is started


def test_both_tables_build() -> None:
    from mcp_codetools.shell import supervisor

    for machine in supervisor.AUDIT_ARCH:
        rows = supervisor.program(machine)
        assert all(0 <= jt < 256 and 0 <= jf < 256 for _, jt, jf, _ in rows)
        assert rows[-1] == (0x06, 0, 0, 0x80000000)  # a foreign ABI is killed


def test_an_install_the_user_cannot_write_still_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled form is a speed-up: a folder the server cannot write only makes each start slower."""

    def refuse(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sandbox_module.py_compile, "compile", refuse)
    sandbox_module.compiled_launcher()


def test_the_compiled_form_is_written_only_when_missing_or_stale(tmp_path: Path) -> None:
    """A start does not compile the supervisor again when its compiled form is current (~16 ms of the probe)."""
    for name in ("supervisor.py", "landlock_guard.py"):
        (tmp_path / name).write_text("VALUE = 1\n", encoding="utf-8")
    sandbox_module.compiled_launcher(tmp_path)
    cfile = Path(importlib.util.cache_from_source(str(tmp_path / "supervisor.py")))
    first = cfile.stat().st_mtime_ns
    os.utime(cfile, ns=(first - 10**9, first - 10**9))  # so that a rewrite would show
    sandbox_module.compiled_launcher(tmp_path)
    assert cfile.stat().st_mtime_ns == first - 10**9, "a current compiled form was written again"
    source = tmp_path / "supervisor.py"
    source.write_text("VALUE = 22\n", encoding="utf-8")
    later = source.stat().st_mtime_ns + 2 * 10**9
    os.utime(source, ns=(later, later))
    sandbox_module.compiled_launcher(tmp_path)
    assert cfile.stat().st_mtime_ns != first - 10**9, "a stale compiled form was kept"
    assert b"VALUE" in cfile.read_bytes()
