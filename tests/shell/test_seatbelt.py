"""The Seatbelt backend: its profile read back and judged here (any platform), and run for real on macOS.

The profile is parsed with a small SBPL reader and decided by a small evaluator of the rules it uses
(`subpath`, `literal`, `regex`, `require-all`, `require-not`), under both readings of rule order (the
last matching rule wins; a matching deny wins), so the tests hold whichever macOS applies.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.shell import sandbox as sandbox_module
from mcp_codetools.shell import seatbelt
from mcp_codetools.shell.sandbox import Confinement, Sandbox, SandboxSettings, SandboxUnavailable, probe, refusal_note
from mcp_codetools.shell.seatbelt import caseless_pattern, profile, resolved, sbpl_string

Rule = list[Any]


class Regex(str):
    """A `#"…"` literal, told apart from a string."""


def read_sbpl(text: str) -> list[Rule]:
    """The profile's forms as nested lists: symbols as str, strings as str, regexes as `Regex`."""
    tokens = re.finditer(r'\s+|;[^\n]*|(?P<open>\()|(?P<close>\))|#"(?P<regex>[^"\\]*)"|"(?P<string>(?:[^"\\]|\\.)*)"'
                         r'|(?P<atom>[^\s()"]+)', text, re.S)  # fmt: skip
    stack: list[list[Any]] = [[]]
    end = 0
    for token in tokens:
        assert token.start() == end, f"unreadable SBPL at {text[end : end + 40]!r}"
        end = token.end()
        if token["open"]:
            stack.append([])
        elif token["close"]:
            done = stack.pop()
            stack[-1].append(done)
        elif token["regex"] is not None:
            stack[-1].append(Regex(token["regex"]))
        elif token["string"] is not None:
            stack[-1].append(re.sub(r"\\(.)", r"\1", token["string"], flags=re.S))
        elif token["atom"]:
            stack[-1].append(token["atom"])
    assert end == len(text) and len(stack) == 1, "unbalanced parentheses"
    return stack[0]


def matches(check: Rule, path: str) -> bool:
    kind, *args = check
    if kind == "subpath":
        return path == args[0] or path.startswith(args[0].rstrip("/") + "/")
    if kind == "literal":
        return path == args[0]
    if kind == "regex":
        return re.search(args[0], path) is not None
    if kind == "require-all":
        return all(matches(a, path) for a in args)
    if kind == "require-any":
        return any(matches(a, path) for a in args)
    if kind == "require-not":
        return not matches(args[0], path)
    raise AssertionError(f"the evaluator does not know {kind}")


def decide(rules: list[Rule], operation: str, path: str, *, deny_wins: bool) -> bool:
    """Whether `operation` (`file-read*`, `file-write*`, …) on `path` is allowed; `(deny default)` if none matches."""
    verdicts = []
    for action, *rest in rules:
        operations = [r for r in rest if isinstance(r, str)]
        if action not in ("allow", "deny") or operation not in operations:
            continue
        filters = [r for r in rest if isinstance(r, list)]
        if not filters or any(matches(f, path) for f in filters):
            verdicts.append(action == "allow")
    if not verdicts:
        return False
    return all(verdicts) if deny_wins else verdicts[-1]


def allowed(rules: list[Rule], operation: str, path: str) -> bool:
    last, deny = decide(rules, operation, path, deny_wins=False), decide(rules, operation, path, deny_wins=True)
    assert last == deny, f"{operation} {path}: the rules' order decides ({last=}, {deny=})"
    return last


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "config" / ".env").write_text("TOKEN=1")
    scratch = tmp_path / "scratch"
    (scratch / "tmp").mkdir(parents=True)
    home_keys = tmp_path / "home" / ".ssh"
    home_keys.mkdir(parents=True)
    return {"root": root, "scratch": scratch, "keys": home_keys, "base": tmp_path}


def rules_for(layout: dict[str, Path], **options: Any) -> list[Rule]:
    root = layout["root"]
    text = profile(
        writable=[str(root), str(layout["scratch"])],
        masks=[str(layout["keys"]), str(root / "config" / ".env")],
        read_only=[str(root / "mcp-codetools.toml"), str(root / ".git" / "hooks"), str(root / ".git" / "config")],
        **options,
    )
    return read_sbpl(text)


def test_the_profile_denies_by_default_and_the_network_unless_allowed(layout: dict[str, Path]) -> None:
    rules = rules_for(layout)
    assert rules[:2] == [["version", "1"], ["deny", "default"]]
    assert ["deny", "network*"] in rules and ["allow", "network*"] not in rules
    assert not [r for r in rules if r[0] == "allow" and str(r[1]).startswith("network")]
    opened = rules_for(layout, network=True)
    assert ["allow", "network*"] in opened and ["deny", "network*"] not in opened


def test_writes_are_allowed_only_beneath_the_writable_folders_and_devices(layout: dict[str, Path]) -> None:
    rules = rules_for(layout)
    writable = {str(layout["root"]), str(layout["scratch"])}
    for rule in (r for r in rules if r[:2] == ["allow", "file-write*"]):
        for check in rule[2:]:
            positive = check[1] if check[0] == "require-all" else check
            assert positive[0] in ("subpath", "literal", "regex"), rule
            target = positive[1]
            assert target in writable or target.startswith("/dev/") or target == r"^/dev/ttys[0-9]+$", rule
    root, base = layout["root"], layout["base"]
    assert allowed(rules, "file-write*", f"{root}/src/main.py")
    assert allowed(rules, "file-write*", f"{layout['scratch']}/tmp/build.o")
    assert allowed(rules, "file-write*", "/dev/null")
    for outside in (f"{base}/elsewhere.txt", "/tmp/x", "/private/tmp/x", f"{base}/project-sibling/x", "/etc/passwd"):
        assert not allowed(rules, "file-write*", outside), outside


def test_masked_paths_are_unreadable_and_what_is_around_them_readable(layout: dict[str, Path]) -> None:
    rules = rules_for(layout)
    keys, env = layout["keys"], layout["root"] / "config" / ".env"
    deny_read = next(r for r in rules if r[:2] == ["deny", "file-read*"])
    assert ["subpath", str(keys)] in deny_read and ["subpath", str(env)] in deny_read
    for hidden in (keys, keys / "id_rsa", env, str(keys).replace(".ssh", ".SSH") + "/id_rsa"):
        assert not allowed(rules, "file-read*", str(hidden)), hidden
    for visible in (keys.parent, keys.parent / ".sshd", layout["root"] / "config", "/usr/bin/git"):
        assert allowed(rules, "file-read*", str(visible)), visible


def test_kept_paths_are_read_only_missing_ones_too_and_their_folders_cannot_move(layout: dict[str, Path]) -> None:
    rules = rules_for(layout)
    root = layout["root"]
    deny_write = next(r for r in rules if r[:2] == ["deny", "file-write*"])
    assert deny_write[2] == "file-link", "no second name for a kept file (a hard link is its own operation)"
    for kept in ("mcp-codetools.toml", ".git/hooks", ".git/config"):
        assert ["subpath", str(root / kept)] in deny_write, kept
    assert ["literal", str(root / ".git")] in deny_write, "renaming .git and back would reach .git/hooks"
    assert ["literal", str(root / "config")] in deny_write, "renaming config/ would make config/.env readable"
    refused = ["mcp-codetools.toml", "MCP-CodeTools.TOML", ".git/hooks/pre-commit", ".GIT/Hooks/x", ".git/config",
               ".git", "config", "config/.env"]  # fmt: skip
    for path in refused:
        assert not allowed(rules, "file-write*", f"{root}/{path}"), path
    for path in (".git/index", ".git/objects/ab/cd", "new-top-level.txt", "config/app.toml"):
        assert allowed(rules, "file-write*", f"{root}/{path}"), path
        assert allowed(rules, "file-link", f"{root}/{path}"), path
    for path in (".git/config", "config/.env", "mcp-codetools.toml"):
        assert not allowed(rules, "file-link", f"{root}/{path}"), path
    assert not allowed(rules, "file-link", f"{layout['base']}/elsewhere"), "hard links only among writable paths"
    assert not allowed(rules, "file-clone", f"{root}/src/a"), "no copy-on-write clones"


def test_paths_are_named_by_their_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    (real / "to-sub").symlink_to(real / "sub")
    assert resolved(tmp_path / "link" / "sub") == [str(real / "sub")]
    assert resolved(tmp_path / "link" / "missing" / "file") == [str(real / "missing" / "file")]
    # a link kept read-only: the link itself (so it cannot be replaced) and where it leads
    assert resolved(real / "to-sub") == [str(real / "to-sub"), str(real / "sub")]
    rules = read_sbpl(profile(writable=[str(tmp_path / "link")], read_only=[str(tmp_path / "link" / "keep")]))
    assert allowed(rules, "file-write*", str(real / "a.txt"))
    assert not allowed(rules, "file-write*", str(real / "keep"))
    assert not allowed(rules, "file-write*", str(tmp_path / "link" / "a.txt")), "the kernel names the real path"


def test_the_kernel_names_the_existing_part_and_the_missing_part_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`F_GETPATH` (macOS) stood in for by /proc: the kernel's name, in its case, for what the open reached."""
    real = tmp_path / "Project"
    (real / "src").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    asked: list[str] = []

    def getpath(fd: int, op: int, buffer: bytes) -> bytes:
        assert op == 50 and len(buffer) == 1024
        named = os.readlink(f"/proc/self/fd/{fd}")
        asked.append(named)
        return named.upper().encode() + b"\0" + b"x" * 10

    monkeypatch.setitem(sys.modules, "fcntl", type(sys)("fcntl"))
    monkeypatch.setattr(sys.modules["fcntl"], "F_GETPATH", 50, raising=False)
    monkeypatch.setattr(sys.modules["fcntl"], "fcntl", getpath, raising=False)
    assert seatbelt.kernel_path(str(tmp_path / "link" / "src")) == str(real / "src").upper()
    assert seatbelt.kernel_path(str(real / "missing" / "file.txt")) == f"{str(real).upper()}/missing/file.txt"
    assert asked[-1] == str(real), "the walk opened the deepest folder that exists"
    # the name itself as given in its folder's kernel name, and where it leads as the kernel names it
    assert resolved(tmp_path / "link" / "src") == [f"{str(real).upper()}/src", str(real / "src").upper()]


@pytest.mark.parametrize(
    "name", ['say "hi"', "back\\slash", "with space", "ünïcødé-目录", "semi;colon(paren)", "tab\tand\nnewline", '\\"']
)
def test_odd_folder_names_are_quoted_and_matched(tmp_path: Path, name: str) -> None:
    assert read_sbpl(f"(x {sbpl_string(name)})") == [["x", name]]
    root = tmp_path / name
    root.mkdir()
    text = profile(writable=[str(root)], masks=[str(root / ".env")], read_only=[str(root / "mcp-codetools.toml")])
    rules = read_sbpl(text)
    assert allowed(rules, "file-write*", f"{root}/src/a.py")
    assert not allowed(rules, "file-write*", f"{root}/mcp-codetools.toml")
    assert not allowed(rules, "file-read*", f"{root}/.env")
    assert not allowed(rules, "file-write*", f"{tmp_path}/elsewhere")
    for pattern in re.findall(r'#"([^"]*)"', text):
        assert "\\" not in pattern, "a regex literal carries no escapes (how SBPL reads them is not needed)"


def test_the_caseless_pattern_matches_the_path_and_beneath_only() -> None:
    pattern = caseless_pattern("/Users/me/project/.git/hooks", beneath=True)
    regex = re.fullmatch(r'\(regex #"(.*)"\)', pattern)
    assert regex is not None
    for path in ("/Users/me/project/.git/hooks", "/users/ME/Project/.GIT/HOOKS/pre-commit"):
        assert re.search(regex[1], path), path
    for path in ("/Users/me/project/.git/hooks2", "/Users/me/project/xgit/hooks", "/Users/me/project/.git"):
        assert not re.search(regex[1], path), path
    exact = re.fullmatch(r'\(regex #"(.*)"\)', caseless_pattern("/a/b.c", beneath=False))
    assert exact is not None and re.search(exact[1], "/A/B.C") and not re.search(exact[1], "/a/b.c/d")


def test_the_backend_wraps_with_sandbox_exec_and_a_private_tmpdir(tmp_path: Path) -> None:
    sandbox = Sandbox("seatbelt", SandboxSettings(enabled=True, backend="seatbelt"))
    (tmp_path / "scratch" / "tmp").mkdir(parents=True)
    env = {"PATH": "/usr/bin", "HOME": str(tmp_path), "AWS_SECRET_ACCESS_KEY": "x"}
    argv, passed = sandbox.wrap(
        ["/bin/bash", "-c", "true"], cwd=tmp_path, writable=[tmp_path], env=env, tmpdir=tmp_path / "scratch" / "tmp",
        masks=[], read_only=[tmp_path / ".git" / "hooks"],
    )  # fmt: skip
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"] and argv[3:] == ["/bin/bash", "-c", "true"]
    rules = read_sbpl(argv[2])
    assert not allowed(rules, "file-write*", str(tmp_path / ".git" / "hooks" / "x"))
    assert passed["TMPDIR"] == str(tmp_path / "scratch" / "tmp") and "AWS_SECRET_ACCESS_KEY" not in passed
    assert not Confinement(sandbox, (tmp_path,)).pid_namespace
    assert "Seatbelt" in sandbox.describe() and "no network" in sandbox.describe()


def test_a_long_profile_is_passed_as_a_file_outside_the_writable_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "profiles"
    folder.mkdir()
    monkeypatch.setattr(seatbelt, "_profile_folder", lambda: str(folder))
    monkeypatch.setattr(seatbelt, "INLINE_MAX", 1000)
    root = tmp_path / "root"
    root.mkdir()
    sandbox = Sandbox("seatbelt", SandboxSettings(enabled=True, backend="seatbelt"))
    hidden = [root / "secrets" / f"key-{i}.pem" for i in range(50)]
    argv, _ = sandbox.wrap(["/bin/bash", "-c", "true"], cwd=root, writable=[root], env={}, masks=hidden)
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-f"] and argv[3:] == ["/bin/bash", "-c", "true"]
    written = Path(argv[2])
    assert written.parent == folder and not written.is_relative_to(root)
    rules = read_sbpl(written.read_text(encoding="utf-8"))
    assert not allowed(rules, "file-read*", str(hidden[-1])) and allowed(rules, "file-write*", f"{root}/a")
    again, _ = sandbox.wrap(["/bin/bash", "-c", "true"], cwd=root, writable=[root], env={}, masks=hidden)
    assert again == argv and os.listdir(folder) == [written.name], "one file per profile, no leftovers"
    short, _ = sandbox.wrap(["/bin/bash", "-c", "true"], cwd=root, writable=[root], env={}, masks=[])
    monkeypatch.setattr(seatbelt, "INLINE_MAX", 64 * 1024)
    assert short[1] == "-f" and len(short[2]) < 200
    inline, _ = sandbox.wrap(["/bin/bash", "-c", "true"], cwd=root, writable=[root], env={}, masks=[])
    assert inline[1] == "-p" and inline[2].startswith("(version 1)")


def test_seatbelt_is_not_available_off_macos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(SandboxUnavailable, match=r"seatbelt is not available on this platform \(linux; macOS only\)"):
        probe(SandboxSettings(enabled=True, backend="seatbelt"))


def test_on_macos_auto_picks_seatbelt_when_sandbox_exec_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(sandbox_module, "_try", lambda argv: ran.append(argv))
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda: pytest.fail("bwrap is not tried on macOS"))
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: True if p == seatbelt.SANDBOX_EXEC else real_exists(p))
    assert probe(SandboxSettings(enabled=True)).backend == "seatbelt"
    assert ran and ran[0][:2] == [seatbelt.SANDBOX_EXEC, "-p"], "the probe runs a real confined command"
    with pytest.raises(SandboxUnavailable, match="bwrap is not available on this platform"):
        probe(SandboxSettings(enabled=True, backend="bwrap"))
    monkeypatch.setattr(os.path, "exists", lambda p: False if p == seatbelt.SANDBOX_EXEC else real_exists(p))
    with pytest.raises(SandboxUnavailable, match="/usr/bin/sandbox-exec was not found"):
        probe(SandboxSettings(enabled=True))


def test_a_refused_write_gets_the_sandbox_note(tmp_path: Path) -> None:
    confinement = Confinement(
        Sandbox("seatbelt", SandboxSettings(enabled=True, backend="seatbelt")), (tmp_path,),
        read_only=(tmp_path / ".git" / "hooks",), masks=(tmp_path / ".env",),
    )  # fmt: skip
    kept = refusal_note("bash: .git/hooks/pre-commit: Operation not permitted", confinement)
    assert kept is not None and "`.git/hooks` is read-only in the Bash sandbox" in kept
    hidden = refusal_note("cat: .env: Operation not permitted", confinement)
    assert hidden is not None and "`.env` is unreadable" in hidden
    other = refusal_note("touch: x/y: Operation not permitted", confinement)
    assert other is not None and "cannot be renamed or removed" in other and "top level" not in other


# --- for real, on macOS ---------------------------------------------------------------------------------


def _run(sandbox: Sandbox, root: Path, script: str, **kept: Any) -> subprocess.CompletedProcess[str]:
    argv, env = sandbox.wrap(["/bin/bash", "-c", script], cwd=root, writable=[root], env=dict(os.environ), **kept)
    return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.mark.macos_only
@pytest.mark.parametrize("name", ["plain", 'q"uote', "back\\slash", "sp ace", "ünï-目录"])
def test_seatbelt_confines_a_real_command(tmp_path: Path, name: str) -> None:
    sandbox = probe(SandboxSettings(enabled=True, backend="seatbelt"))
    root = Path(os.path.realpath(tmp_path)) / name
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "config" / ".env").write_text("TOKEN=secret\n")
    outside = Path(os.path.realpath(tmp_path)) / "outside"
    outside.mkdir()
    kept = {"read_only": [root / ".git" / "hooks", root / "mcp-codetools.toml"], "masks": [root / "config" / ".env"]}
    done = _run(sandbox, root, "echo ok > inside.txt && cat inside.txt", **kept)
    assert done.stdout == "ok\n", done.stderr
    attempts = [
        f"echo x > '{outside}/escape'", "echo x > .git/hooks/pre-commit", "echo x > mcp-codetools.toml",
        "echo x > MCP-CODETOOLS.TOML", "mv .git .git2", "mv config config2", "ln config/.env leak",
        "echo x > /tmp/mcp-codetools-seatbelt-escape", "cp -c config/.env clone",
    ]  # fmt: skip
    for script in attempts:
        _run(sandbox, root, script, **kept)
    assert sorted(os.listdir(root)) == [".git", "config", "inside.txt"], "a refused write left something"
    assert not any(outside.iterdir()) and not os.path.exists("/tmp/mcp-codetools-seatbelt-escape")
    read = _run(sandbox, root, "cat config/.env; cat CONFIG/.ENV", **kept)
    assert "secret" not in read.stdout and "Operation not permitted" in read.stderr
    # the network: tests/shell/test_sandbox.py runs its listening-port check on this backend too


@pytest.mark.macos_only
def test_macos_names_tmp_and_a_path_in_another_case_as_the_volume_does(tmp_path: Path) -> None:
    assert seatbelt.kernel_path("/tmp") == "/private/tmp"
    folder = Path(seatbelt.kernel_path(str(tmp_path))) / "Project"
    folder.mkdir()
    if not os.path.exists(str(folder).swapcase()):
        pytest.skip("this volume tells letter case apart")
    assert seatbelt.kernel_path(str(folder).swapcase()) == str(folder)
    assert seatbelt.kernel_path(str(folder).swapcase() + "/New.txt") == f"{folder}/New.txt"


@pytest.mark.macos_only
def test_a_command_cannot_have_launchd_start_a_job_outside_the_sandbox(tmp_path: Path) -> None:
    """launchd starts what it is asked to outside any sandbox: a sandboxed `launchctl submit` must be refused."""
    sandbox = probe(SandboxSettings(enabled=True, backend="seatbelt"))
    root = Path(seatbelt.kernel_path(str(tmp_path))) / "root"
    root.mkdir()
    label = f"mcp-codetools-escape-{os.getpid()}"
    try:
        done = _run(sandbox, root, f"launchctl submit -l {label} -- /usr/bin/true")
        # asked outside the sandbox: launchd registers a submitted job before submit returns
        listed = subprocess.run(["launchctl", "list", label], capture_output=True, timeout=30, check=False)
        assert listed.returncode != 0, "a sandboxed command had launchd take a job: " + done.stderr
    finally:
        subprocess.run(["launchctl", "remove", label], capture_output=True, timeout=30, check=False)
