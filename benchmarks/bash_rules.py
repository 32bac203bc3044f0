"""The Bash rule tables run for real: `python -m benchmarks.bash_rules`.

For each command of the tables in `tests/policy/test_bash_rules.py` (pushes past `Bash(git push *)`,
reads past `Read(.env)`, writes past `Edit(src/**)`, protected writes with no rule), a fresh workspace
with a local bare remote is made, the policy decides, and what it allows is run. A leak is an allowed
command that pushed, printed or copied the secret, changed `src/`, or changed git's config, `.claude/`,
`.vscode/`, `.mcp.json` or the hooks. Commands run with HOME and /tmp moved into the workspace's
temporary folder, so nothing outside it changes.

Run it against another checkout's code to compare (the tables always come from this one):
`PYTHONPATH=<checkout> python -P benchmarks/bash_rules.py` (-P keeps the current folder off the path).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from mcp_codetools.policy import engine
from mcp_codetools.policy.engine import CallFacts


def _tables() -> ModuleType:
    """This checkout's tables, by file: the code under test may come from another checkout."""
    path = Path(__file__).resolve().parents[1] / "tests" / "policy" / "test_bash_rules.py"
    spec = importlib.util.spec_from_file_location("bash_rule_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tables = _tables()

SECRET = "TOKEN=s3cr3t-9f8e"
_GIT = ["git", "-c", "user.name=a", "-c", "user.email=b"]


def run(command: str, cwd: Path, base: Path) -> str:
    """Run `command` with its home and /tmp inside `base`; its output, whatever happens."""
    env = {**os.environ, "HOME": str(base / "home"), "TMPDIR": str(base / "tmp")}
    confined = command.replace("/tmp/", f"{base}/tmp/").replace("~/", f"{base}/home/")
    try:
        done = subprocess.run(
            ["bash", "-c", confined], cwd=cwd, env=env, capture_output=True, text=True, timeout=5,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return ""
    return done.stdout + done.stderr


def digest(folder: Path) -> str:
    """What a folder holds, as one hash (names and contents)."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")) if folder.exists() else ():
        h.update(str(path).encode())
        if path.is_file() and not path.is_symlink():
            h.update(path.read_bytes())
    return h.hexdigest()


def workspace(base: Path) -> tuple[Path, Path]:
    """A repository with a secret, a `src/` to protect and a bare remote to push to."""
    root, remote = base / "ws", base / "remote.git"
    for folder in (base / "home", base / "tmp", root / "src", root / "docs", root / ".claude"):
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    files = {".env": SECRET, "src/a.txt": "a", "docs/guide.md": "g", "list.txt": ".env", "list": "src/a.txt", "x": "x"}
    for name, text in files.items():
        (root / name).write_text(text + "\n")
    (root / "show.py").write_text("import sys; print(open(sys.argv[1]).read())\n")
    (root / "script.sh").write_text("git push\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "src", "docs"], ["commit", "-qm", "init"],
                 ["remote", "add", "origin", str(remote)], ["config", "push.default", "current"]):  # fmt: skip
        subprocess.run([*_GIT, *argv], cwd=root, check=True, capture_output=True)
    return root, remote


def leaked(kind: str, command: str, root: Path, remote: Path, base: Path) -> bool:
    """Run an allowed command and say whether it did what the rule forbids."""
    if kind == "push":
        subprocess.run([*_GIT, "commit", "-q", "--allow-empty", "-m", "n"], cwd=root, check=True)
        local = run("git rev-parse HEAD", root, base)
        run(command, root, base)
        return run("git rev-parse main", remote, base) == local
    if kind == "read":
        out = run(command, root, base)
        copies = [p for p in (*root.rglob("*"), *(base / "tmp").rglob("*")) if p.name != ".env" and p.is_file()]
        return SECRET in out or any(SECRET in p.read_text(errors="replace") for p in copies if ".git" not in p.parts)
    if kind == "edit":
        before = digest(root / "src")
        run(command, root, base)
        return digest(root / "src") != before

    def state() -> tuple[str, ...]:
        watched = (".claude", ".vscode", ".git/hooks", "home")
        return (run("git config --list --local", root, base), str((root / ".mcp.json").exists()),
                *(digest(root / p if p != "home" else base / p) for p in watched))  # fmt: skip

    snapshot = state()
    run(command, root, base)
    return state() != snapshot or any((base / "tmp" / name).exists() for name in ("p", "pwned"))


def attack(kind: str, commands: Sequence[str], rules: dict[str, tuple[str, ...]]) -> tuple[int, int, list[str]]:
    """(tried, allowed, leaking commands) for one table."""
    allowed = 0
    leaks: list[str] = []
    for command in commands:
        base = Path(tempfile.mkdtemp(prefix="bash-rules-"))
        try:
            root, remote = workspace(base)
            policy = tables.policy(root, deny=rules.get("deny", ()), ask=rules.get("ask", ()))
            decision = policy.decide(CallFacts("Bash", False, command=command, cwd=root))
            if decision.behaviour == "allow":
                allowed += 1
                if leaked(kind, command, root, remote, base):
                    leaks.append(command)
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return len(commands), allowed, leaks


def main() -> int:
    print(f"policy code: {Path(engine.__file__).parents[2]}")
    runs: tuple[tuple[str, list[str], dict[str, tuple[str, ...]]], ...] = (
        ("push", tables.PUSHES, {"deny": ("Bash(git push *)",)}),
        ("read", tables.READS, {"deny": ("Read(.env)",)}),
        ("edit", tables.WRITES, {"deny": ("Edit(src/**)",)}),
        ("protected", tables.PROTECTED, {}),
    )
    for kind, commands, rules in runs:
        tried, allowed, leaks = attack(kind, commands, rules)
        print(f"  {kind:<10} tried {tried:3d}  allowed {allowed:3d}  leaked {len(leaks):3d}")
        for command in leaks:
            print(f"      {command!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
