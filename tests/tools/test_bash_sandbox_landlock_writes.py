"""Landlock's supervisor (`shell/landlock_guard.py`) carries out every write by name: ordinary writes anywhere
in a root go through, and kept paths that exist (a file, a folder and what is in it) are neither written,
truncated, removed, moved nor linked, whichever way the command names them.

The same commands run under bubblewrap, whose read-only mounts keep the same paths: both must agree, but
for a hard link the user made before the command (`LANDLOCK_ONLY`): a mount keeps a path, not the file, so
under bubblewrap the other name stays writable.
"""

from __future__ import annotations

import os
import select
import subprocess
import textwrap
from pathlib import Path

import pytest

from mcp_codetools.shell.sandbox import Sandbox
from tests.tools.test_bash_sandbox import working
from tests.tools.test_bash_sandbox_supervisor import TIMEOUT_S, py, run, supervising

pytestmark = pytest.mark.linux_only

CONFIG = "[core]\n"
TOML = "[sandbox]\n"
SAMPLE = "#!/bin/sh\n"


@pytest.fixture(params=["bwrap", "landlock"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    return supervising(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root whose kept paths exist: `.git/config`, `.git/hooks/` with a sample, `.vscode/sub/`, the config file.

    `config-link` is a hard link to `.git/config` the user made before the command.
    """
    folder = (tmp_path / "ws").resolve()
    (folder / ".git" / "hooks").mkdir(parents=True)
    (folder / ".git" / "config").write_text(CONFIG, encoding="utf-8")
    (folder / ".git" / "hooks" / "pre-commit.sample").write_text(SAMPLE, encoding="utf-8")
    (folder / ".vscode" / "sub").mkdir(parents=True)
    (folder / ".vscode" / "sub" / "settings.json").write_text("{}", encoding="utf-8")
    (folder / "mcp-codetools.toml").write_text(TOML, encoding="utf-8")
    (folder / "a.py").write_text("x = 1\n", encoding="utf-8")
    os.link(folder / ".git" / "config", folder / "config-link")
    return folder


def kept(root: Path) -> list[Path]:
    return [root / ".git" / "config", root / ".git" / "hooks", root / ".vscode", root / "mcp-codetools.toml"]


def sh(sandbox: Sandbox, root: Path, script: str) -> tuple[int, str]:
    done = run(sandbox, root, ["bash", "-c", script], read_only=kept(root))
    return done.returncode, done.stdout + done.stderr


def assert_kept(root: Path) -> None:
    assert (root / ".git" / "config").read_text(encoding="utf-8") == CONFIG
    assert (root / "mcp-codetools.toml").read_text(encoding="utf-8") == TOML
    assert sorted(os.listdir(root / ".git" / "hooks")) == ["pre-commit.sample"]
    assert (root / ".git" / "hooks" / "pre-commit.sample").read_text(encoding="utf-8") == SAMPLE
    assert sorted(os.listdir(root / ".vscode")) == ["sub"]
    assert sorted(os.listdir(root / ".vscode" / "sub")) == ["settings.json"]
    assert (root / ".vscode" / "sub" / "settings.json").read_text(encoding="utf-8") == "{}"


@pytest.mark.parametrize(
    "script",
    [
        "echo x >> .git/config",
        ": > .git/config",
        "echo x >> config-link",  # a hard link made before the command
        ": > config-link",  # O_TRUNC: checked before anything is cut
        "truncate -s0 .git/config",
        "truncate -s0 config-link",
        "ln .git/config l && echo x >> l",
        "ln .git/hooks/pre-commit.sample l && echo x >> l",
        "exec 3< .git/hooks/pre-commit.sample && echo x >> /proc/self/fd/3",  # reopened through its fd link
        "exec 3< .git/config && echo x >> /dev/fd/3",
        "ln -s .git/hooks/pre-commit.sample s && echo x >> s",
        "rm mcp-codetools.toml",
        "rm -rf .vscode",
        "mv .vscode x",
        "mv .vscode/sub x",
        "echo x > .vscode/new",
        "echo x > .vscode/sub/new",
        "echo x > .vscode/sub/settings.json",
        "mkdir .vscode/sub/d",
        "rm .git/hooks/pre-commit.sample",
        "mv .git/hooks/pre-commit.sample .git/hooks/pre-commit",
        "cd .git/hooks && echo x > pre-commit",
        "mv .git/config .git/config.old",
        "echo x > new && mv new .git/config",
    ],
)
def test_a_kept_path_that_exists_is_not_written_removed_or_moved(sandbox: Sandbox, root: Path, script: str) -> None:
    if "config-link" in script and sandbox.backend != "landlock":
        pytest.skip("bubblewrap keeps paths: the file's other name, made before the command, is writable there")
    status, output = sh(sandbox, root, script)
    assert status != 0, output
    assert_kept(root)


def test_a_kept_file_opened_by_python_for_writing_is_refused_before_it_is_cut(sandbox: Sandbox, root: Path) -> None:
    code = """
        import errno, os
        for path in (".git/config", "mcp-codetools.toml", *(["config-link"] if linked else [])):
            for flags in (os.O_RDWR, os.O_WRONLY | os.O_TRUNC, os.O_RDONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND):
                try:
                    os.close(os.open(path, flags))
                    print(path, "opened")
                except OSError as exc:
                    print(path, errno.errorcode[exc.errno])
    """
    linked = sandbox.backend == "landlock"  # bubblewrap keeps the path, not the file (see above)
    done = py(sandbox, root, f"linked = {linked}\n" + textwrap.dedent(code), read_only=kept(root))
    results = {line.split()[1] for line in done.stdout.splitlines()}
    assert len(done.stdout.splitlines()) == (12 if linked else 8) and results <= {"EACCES", "EROFS", "EPERM"}, (
        done.stdout + done.stderr
    )
    assert_kept(root)


def test_ordinary_writes_at_the_top_go_through_command_after_command(sandbox: Sandbox, root: Path) -> None:
    assert sh(sandbox, root, "echo 1 >> newfile && rm a.py") == (0, "")
    assert sh(sandbox, root, "echo 2 >> newfile && truncate -s 4 newfile && cat newfile") == (0, "1\n2\n")
    code = """
        import os
        with open("made.bin", "wb") as out:
            out.write(b"abc")
        fd = os.open("made.bin", os.O_RDWR)
        os.write(fd, b"X")
        os.close(fd)
        with open("made.bin", "r+") as both:
            both.seek(0, 2)
            both.write("d")
        print(open("made.bin").read())
    """
    done = py(sandbox, root, code, read_only=kept(root))
    assert done.stdout == "Xbcd\n", done.stderr
    assert (root / "newfile").read_text() == "1\n2\n" and not (root / "a.py").exists()
    assert sh(sandbox, root, "mkdir -p build/x && echo 1 > build/x/f && mv build b && rm -r b && ls") == (
        0, "config-link\nmade.bin\nmcp-codetools.toml\nnewfile\n"
    )  # fmt: skip
    assert_kept(root)


def test_a_kept_folder_the_host_makes_while_a_command_runs_is_kept(root: Path) -> None:
    """The kept paths are looked up for each call: `.claude/`, missing when the command started, made meanwhile.

    Landlock only: under bubblewrap a kept path missing at the start is kept from being made by the command,
    and one the host makes meanwhile is not mounted read-only.
    """
    box = supervising("landlock")
    script = "echo ready; read _; echo x > .claude/new; mkdir .claude/d; echo done"
    wrapped, env = box.wrap(
        ["bash", "-c", script], cwd=root, writable=[root], env=dict(os.environ),
        read_only=[*kept(root), root / ".claude"],
    )  # fmt: skip
    with subprocess.Popen(wrapped, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as command:
        assert command.stdout is not None and command.stdin is not None
        assert select.select([command.stdout], [], [], TIMEOUT_S)[0], "the command never started"
        assert command.stdout.readline() == "ready\n"
        (root / ".claude").mkdir()
        out, _ = command.communicate("go\n", timeout=TIMEOUT_S)
    assert out == "done\n" and os.listdir(root / ".claude") == []
    assert_kept(root)


def test_the_supervisor_makes_no_device_for_the_command(sandbox: Sandbox, root: Path) -> None:
    """It carries out `mknod` itself: with a root server's capabilities it would make `/dev/sda` writable in a root."""
    status, output = sh(sandbox, root, "mknod disk b 8 0 || mknod null c 1 3")
    assert status != 0 and not os.path.lexists(root / "disk") and not os.path.lexists(root / "null"), output


def test_frozen_landlock_gives_the_command_no_capability(root: Path) -> None:
    """Without its supervisor the launcher execs the command itself: a root server's would keep every capability."""
    found = working("landlock")
    box = Sandbox("landlock", found.settings, landlock_abi=found.landlock_abi)  # the frozen folders, no supervisor
    (root / "lib").mkdir()
    script = "mknod lib/null c 1 3; grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status | awk '{print $2}' | sort -u"
    done = run(box, root, ["bash", "-c", script], read_only=kept(root))
    assert done.stdout.split() == ["0000000000000000"] and not os.path.lexists(root / "lib" / "null"), done.stderr
