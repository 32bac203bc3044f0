"""Settings: sources in order (later wins), bad values refused naming their source, the `config` command,
the generated reference in the README, limits wired into the tools, and the audit log."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_codetools import audit
from mcp_codetools import pipeline as pipeline_module
from mcp_codetools.cli import main
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.policy.loading import PolicyConfigError, load_policy_config
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import (
    PLACES,
    ConfigError,
    SandboxSettings,
    Settings,
    check_file,
    describe,
    load_settings,
    markdown_reference,
)
from mcp_codetools.tools import default_tools as tools
from tests.clocks import SteppingClock
from tests.conftest import Caller

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private user config folder, so the developer's own config never leaks into a test."""
    home = tmp_path / "xdg"
    (home / "mcp-codetools").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for place in PLACES.values():
        monkeypatch.delenv(place.env, raising=False)
    return home / "mcp-codetools" / "config.toml"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_later_sources_win_and_each_value_says_where_it_came_from(
    xdg: Path, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        xdg, "[limits]\nmax_concurrency = 2\nqueue_timeout_s = 5\n[read]\ndefault_lines = 10\n[glob]\nmax_files = 7\n"
    )
    project = write(root / "mcp-codetools.toml", "[limits]\nmax_concurrency = 3\n[read]\ndefault_lines = 20\n")
    extra = write(tmp_path / "extra.toml", "[limits]\nmax_concurrency = 4\n[bash]\noutput_chars = 5000\n")
    monkeypatch.setenv("MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY", "5")
    monkeypatch.setenv("MCP_CODETOOLS_BASH_OUTPUT_CHARS", "6000")
    loaded = load_settings([str(root)], config_file=extra, flags={"max_concurrency": 6, "http_port": None})
    s = loaded.settings
    assert (s.max_concurrency, s.queue_timeout_s, s.read_default_lines, s.glob_max_files) == (6, 5.0, 20, 7)
    assert s.bash_output_chars == 6000
    assert loaded.sources["max_concurrency"] == "--max-concurrency flag"
    assert loaded.sources["bash_output_chars"] == "environment variable MCP_CODETOOLS_BASH_OUTPUT_CHARS"
    assert loaded.sources["read_default_lines"] == f"{project} [read] default_lines"
    assert loaded.sources["queue_timeout_s"] == f"{xdg} [limits] queue_timeout_s"
    assert loaded.sources["http_port"] == "default"
    assert loaded.files == (xdg, project, extra)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[limits]\nmax_concurrency = 0\n", r"\[limits\] max_concurrency: .*greater than or equal to 1"),
        ('[limits]\nmax_concurrency = "many"\n', r"\[limits\] max_concurrency: .*valid integer"),
        ('[files]\nhard_links = "write-thru"\n', r"\[files\] hard_links: .*'refuse' or 'write-through'"),
        ("[limits]\nmax_concurency = 3\n", r"unknown key 'max_concurency' in \[limits\] \(known: max_concurrency"),
        ("[limit]\nmax_concurrency = 3\n", r"unknown table \[limit\]"),
        ("limits = 3\n", r"\[limits\] must be a table"),
        ("[limits\n", r"is not valid TOML"),
        ("[bash]\ndefault_timeout_ms = 900000\n", r"bash_default_timeout_ms \(900000, from .*\) is above"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_key(xdg: Path, root: Path, text: str, expected: str) -> None:
    project = write(root / "mcp-codetools.toml", text)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_settings([str(root)])
    assert str(project) in str(caught.value)
    assert check_file(project) == [str(caught.value)]


def test_a_bad_value_in_the_environment_or_a_flag_names_it(xdg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CODETOOLS_GLOB_NO_IGNORE", "perhaps")
    with pytest.raises(ConfigError, match="environment variable MCP_CODETOOLS_GLOB_NO_IGNORE.*'perhaps'"):
        load_settings(["."])
    monkeypatch.delenv("MCP_CODETOOLS_GLOB_NO_IGNORE")
    with pytest.raises(ConfigError, match="--max-concurrency flag: .*greater than or equal to 1"):
        load_settings(["."], flags={"max_concurrency": 0})
    with pytest.raises(ConfigError, match="--port flag"):
        load_settings(["."], flags={"http_port": 70000})


def test_a_later_source_may_fix_what_an_earlier_one_set(xdg: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(xdg, "[bash]\nmax_timeout_ms = 60000\n")
    with pytest.raises(ConfigError, match="bash_default_timeout_ms"):
        load_settings([str(root)])
    monkeypatch.setenv("MCP_CODETOOLS_BASH_DEFAULT_TIMEOUT_MS", "30000")
    assert load_settings([str(root)]).settings.bash_default_timeout_ms == 30_000


def test_a_missing_config_file_is_refused(xdg: Path, root: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings([str(root)], config_file=root / "nope.toml")


def test_settings_and_policy_read_the_same_files_and_report_a_bad_one_alike(xdg: Path, root: Path) -> None:
    project = write(root / "mcp-codetools.toml", "[permissions\n")
    with pytest.raises(ConfigError) as from_settings:
        load_settings([str(root)])
    with pytest.raises(PolicyConfigError) as from_policy:
        load_policy_config([root])
    assert str(from_settings.value) == str(from_policy.value)
    assert str(project) in str(from_settings.value)
    write(xdg, '[permissions]\ndeny = ["Read(.env)"]\n[limits]\nmax_concurrency = 2\n')
    write(root / "mcp-codetools.toml", '[permissions]\ndefault_mode = "plan"\n[read]\ndefault_lines = 9\n')
    policy = load_policy_config([root])
    loaded = load_settings([str(root)])
    assert policy.files == list(loaded.files)
    assert (policy.mode, len(policy.deny)) == ("plan", 1)
    assert (loaded.settings.max_concurrency, loaded.settings.read_default_lines) == (2, 9)


def test_an_audit_path_in_a_file_is_relative_to_the_file(xdg: Path, root: Path) -> None:
    write(root / "mcp-codetools.toml", '[audit]\nlog = "logs/audit.jsonl"\n')
    assert load_settings([str(root)]).settings.audit_log == root / "logs" / "audit.jsonl"


def test_the_defaults_are_the_limits_the_tools_had() -> None:
    s = Settings()
    assert s.read_default_lines == 2000
    assert (s.grep_head_limit, s.grep_max_result_chars) == (250, 20_000)
    assert s.glob_max_files == 100
    assert (s.bash_default_timeout_ms, s.bash_max_timeout_ms) == (120_000, 600_000)
    assert s.bash_output_chars == 30_000
    assert (s.history_max_bytes, s.history_max_entries) == (256 * 1024 * 1024, 200)


def test_settings_stay_constructible_with_keywords_and_refuse_bad_ones() -> None:
    assert Settings(roots=(Path("/tmp"),), max_concurrency=3).max_concurrency == 3
    with pytest.raises(ValueError):
        Settings(max_concurrency=0)
    with pytest.raises(ValueError):
        Settings(roots=())


def test_every_setting_has_a_place_and_a_description() -> None:
    names = {name for name in Settings.__dataclass_fields__ if name not in ("roots", "sandbox")}
    names |= {f"sandbox.{name}" for name in SandboxSettings.__dataclass_fields__}
    assert names == set(PLACES)
    assert "| `[limits] max_concurrency` |" in markdown_reference()


def test_the_flags_are_the_settings_that_name_one_and_set_them(xdg: Path, root: Path) -> None:
    from mcp_codetools.cli import _parser, flag_values

    flags = {name: place.flag for name, place in PLACES.items() if place.flag}
    assert flags == {
        "max_concurrency": "--max-concurrency",
        "http_host": "--host",
        "http_port": "--port",
        "http_replica": "--replica",
        "sandbox.enabled": "--sandbox",
        "sandbox.network": "--sandbox-network",
        "sandbox.backend": "--sandbox-backend",
    }
    argv = [
        "--max-concurrency",
        "7",
        "--host",
        "::1",
        "--port",
        "0",
        "--replica",
        "r2",
        "--sandbox",
        "--sandbox-network",
    ]
    args = _parser().parse_args([*argv, "--sandbox-backend", "bwrap", "--root", str(root), "config"])
    loaded = load_settings([root], flags=flag_values(args))
    settings = loaded.settings
    assert (settings.max_concurrency, settings.http_host, settings.http_port) == (7, "::1", 0)
    assert settings.http_replica == "r2"
    assert (settings.sandbox.enabled, settings.sandbox.network, settings.sandbox.backend) == (True, True, "bwrap")
    assert loaded.sources["sandbox.backend"] == "--sandbox-backend flag"
    assert set(flag_values(_parser().parse_args([])).values()) == {None}


def test_each_environment_name_follows_from_the_setting_unless_it_says_otherwise() -> None:
    assert PLACES["read_default_lines"].env == "MCP_CODETOOLS_READ_DEFAULT_LINES"
    assert PLACES["sandbox.network"].env == "MCP_CODETOOLS_SANDBOX_NETWORK"
    assert PLACES["max_concurrency"].env == "MCP_CODETOOLS_MAX_TOOL_USE_CONCURRENCY"
    assert PLACES["sandbox.enabled"].env == "MCP_CODETOOLS_SANDBOX"
    assert (PLACES["audit_log_keep"].section, PLACES["audit_log_keep"].key) == ("audit", "keep")
    assert len({place.env for place in PLACES.values()}) == len(PLACES)
    assert len({(place.section, place.key) for place in PLACES.values()}) == len(PLACES)


def test_the_readme_reference_is_the_generated_one() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- settings-reference:start -->\n(.*?)<!-- settings-reference:end -->", readme, re.S)
    assert found, "the README's configuration reference markers are missing"
    assert found.group(1) == markdown_reference(), "regenerate it: mcp-codetools config --markdown"
    for name, place in PLACES.items():
        assert f"`[{place.section}] {place.key}`" in found.group(1), name


# The command line


def test_config_prints_each_value_with_its_source(
    xdg: Path, root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root / "mcp-codetools.toml", '[read]\ndefault_lines = 50\n[permissions]\ndefault_mode = "plan"\n')
    monkeypatch.setenv("MCP_CODETOOLS_QUEUE_TIMEOUT_S", "30")
    assert main(["config", "--root", str(root), "--max-concurrency", "4"]) == 0
    out = capsys.readouterr().out
    assert "limits.max_concurrency = 4  # --max-concurrency flag" in out
    assert "limits.queue_timeout_s = 30.0  # environment variable MCP_CODETOOLS_QUEUE_TIMEOUT_S" in out
    assert f"read.default_lines = 50  # {root / 'mcp-codetools.toml'} [read] default_lines" in out
    assert "glob.max_files = 100  # default" in out
    assert f'permissions.default_mode = "plan"  # {root / "mcp-codetools.toml"}' in out


def test_config_check_validates_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "good.toml", '[bash]\ndefault_timeout_ms = 5000\n[permissions]\nallow = ["Bash(ls *)"]\n')
    assert main(["config", "--check", str(good)]) == 0
    assert "ok" in capsys.readouterr().out
    bad_value = write(tmp_path / "bad.toml", "[glob]\nmax_files = -1\n")
    assert main(["config", "--check", str(bad_value)]) == 1
    assert f"{bad_value} [glob] max_files" in capsys.readouterr().out
    bad_rule = write(tmp_path / "rule.toml", '[permissions]\ndefault_mode = "loud"\n')
    assert main(["config", "--check", str(bad_rule)]) == 1
    assert "not a permission mode" in capsys.readouterr().out
    assert main(["config", "--check", str(tmp_path / "absent.toml")]) == 1
    assert "not found" in capsys.readouterr().out


def test_config_markdown_prints_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--markdown"]) == 0
    assert capsys.readouterr().out == markdown_reference()


def test_the_server_refuses_to_start_with_a_bad_config_file(xdg: Path, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.toml", "[limits]\nqueue_timeout_s = -1\n")
    done = subprocess.run(
        [sys.executable, "-m", "mcp_codetools", "--root", str(tmp_path), "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert f"{bad} [limits] queue_timeout_s" in done.stderr
    assert done.stdout == ""


# The limits reach the tools


@pytest.fixture
async def small(root: Path) -> AsyncIterator[Caller]:
    settings = Settings(
        roots=(root,),
        read_default_lines=3,
        glob_max_files=2,
        grep_head_limit=2,
        bash_max_timeout_ms=2000,
        bash_default_timeout_ms=1000,
    )
    session = CodeSession(settings)
    try:
        yield Caller(Pipeline(tools()), session)
    finally:
        await session.aclose()


@pytest.mark.anyio
async def test_the_limits_come_from_the_settings(small: Caller, root: Path) -> None:
    write(root / "a.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    for name in ("b.py", "c.py", "d.py"):
        write(root / name, "hit\n")
    text = await small.ok("Read", {"file_path": str(root / "a.txt")})
    assert "line 3" in text and "line 4" not in text
    listed = await small.ok("Glob", {"pattern": "*.py", "path": str(root)})
    assert sum(name in listed for name in ("b.py", "c.py", "d.py")) == 2
    found = await small.ok("Grep", {"pattern": "hit", "path": str(root)})
    assert sum(name in found for name in ("b.py", "c.py", "d.py")) == 2
    output = await small("Bash", {"command": "echo hi", "timeout": 5000})
    assert "lowered to 2000 ms" in output.text


# The audit log


@pytest.mark.anyio
async def test_each_call_writes_one_audit_line_without_file_contents(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "audit.jsonl"
    session = CodeSession(Settings(roots=(root,), audit_log=log))
    caller = Caller(Pipeline(tools()), session)
    secret = "x" * 5000
    monkeypatch.setattr(pipeline_module, "time", SteppingClock(0.125))  # each call: 125 ms from start to end
    try:
        await caller.ok("Write", {"file_path": str(root / "new.txt"), "content": secret})
        await caller.ok("Read", {"file_path": str(root / "new.txt")})
        await caller.fails("Read", {"file_path": str(tmp_path / "outside.txt")})
        await caller.fails("Nope", {})
    finally:
        await session.aclose()
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["tool"], r["decision"], r["outcome"]) for r in lines] == [
        ("Write", "allow", "ok"),
        ("Read", "allow", "ok"),
        ("Read", "deny", "error"),
        ("Nope", None, "error"),
    ]
    assert lines[0]["input"]["content"] == {"chars": 5000}
    assert secret not in log.read_text(encoding="utf-8")
    assert all(r["session"] == session.id and r["durationMs"] == 125.0 and r["time"].endswith("Z") for r in lines)
    assert lines[2]["errorCode"] == "permission_denied"
    assert log.stat().st_mode & 0o077 == 0


def test_long_input_fields_are_capped() -> None:
    summary = audit.summarize_input({"command": "echo " + "y" * 1000, "limit": 5, "edits": [{"a": "b"}]})
    assert len(summary["command"]) < 300 and summary["command"].endswith("[1005 chars]")
    assert summary["limit"] == 5
    assert summary["edits"] == {"chars": len('[{"a": "b"}]')}


def test_the_audit_log_rotates_at_its_size_and_keeps_n_files(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = audit.AuditLog(path, max_bytes=4096, keep=2)
    line = {"pad": "z" * 1000}
    size = len(json.dumps(line)) + 1
    per_file = 4096 // size
    try:
        for _ in range(per_file):
            log.write(line)
        assert not (tmp_path / "audit.jsonl.1").exists()
        log.write(line)  # past the size: the file moves aside and a new one starts
        assert (tmp_path / "audit.jsonl.1").stat().st_size == per_file * size
        assert path.stat().st_size == size
        for _ in range(3 * per_file):
            log.write(line)
    finally:
        log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    assert all(p.stat().st_size <= 4096 for p in tmp_path.iterdir())


def test_an_unwritable_audit_log_never_fails_a_call(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = audit.AuditLog(tmp_path / "missing" / "audit.jsonl", max_bytes=4096, keep=1)
    log.write({"a": 1})
    log.write({"a": 2})
    assert sum("cannot write the audit log" in r.message for r in caplog.records) == 1


def test_nested_sandbox_settings_come_from_files_env_and_flags(
    xdg: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root / "mcp-codetools.toml", '[sandbox]\nenabled = true\nmask = ["~/.vault"]\nbackend = "bwrap"\n')
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX_ENV", "CI, GOPATH")
    loaded = load_settings([str(root)], flags={"sandbox.backend": "landlock"})
    assert loaded.settings.sandbox == SandboxSettings(
        enabled=True, backend="landlock", mask=("~/.vault",), env=("CI", "GOPATH")
    )
    assert loaded.sources["sandbox.enabled"] == f"{root / 'mcp-codetools.toml'} [sandbox] enabled"
    assert loaded.sources["sandbox.backend"] == "--sandbox-backend flag"
    write(root / "mcp-codetools.toml", '[sandbox]\nenv = ["CI", "A-B"]\n')
    with pytest.raises(ConfigError, match=r"\[sandbox\] env: 'A-B' are not variable names"):
        load_settings([str(root)])


def test_the_project_file_cannot_switch_off_the_sandbox_the_user_switched_on(xdg: Path, root: Path) -> None:
    write(xdg, '[sandbox]\nenabled = true\nenv = ["CI"]\n[bash]\nenv_exclude = ["AWS_SECRET"]\n')
    project = write(
        root / "mcp-codetools.toml",
        '[sandbox]\nenabled = false\nnetwork = true\nbackend = "landlock"\nenv = ["CI", "AWS_SECRET"]\n'
        '[bash]\nenv_exclude = ["NPM_TOKEN"]\n[files]\nhard_links = "write-through"\n'
        '[http]\nhost = "0.0.0.0"\n[audit]\nlog = "/tmp/elsewhere.jsonl"\nkeep = 0\n[limits]\nmax_concurrency = 3\n',
    )
    loaded = load_settings([str(root)])
    s = loaded.settings
    assert (s.sandbox.enabled, s.sandbox.network, s.sandbox.backend) == (True, False, "auto")
    assert s.sandbox.env == ("CI",)
    assert s.bash_env_exclude == {"AWS_SECRET", "NPM_TOKEN"}, "the project's hidden variables add up"
    assert (s.hard_links, s.http_host, s.audit_log, s.audit_log_keep) == ("refuse", "127.0.0.1", None, 3)
    assert s.max_concurrency == 3, "limits are the project's to set"
    assert loaded.sources["sandbox.enabled"] == f"{xdg} [sandbox] enabled", "the source stays true"
    assert loaded.sources["bash_env_exclude"] == f"{xdg} [bash] env_exclude + {project} [bash] env_exclude"
    ignored = "\n".join(loaded.ignored)
    for key in ("enabled", "network", "backend", "env", "hard_links", "host", "log", "keep"):
        assert f"] {key} = " in ignored, key
    shown = "\n".join(describe(loaded))
    assert f"# ignored: {project} [sandbox] enabled = false ignored" in shown


def test_the_project_file_may_tighten_and_later_sources_are_the_users(
    xdg: Path, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(root / "mcp-codetools.toml", '[sandbox]\nenabled = true\nbackend = "bwrap"\n[audit]\nlog = "audit.jsonl"\n')
    s = load_settings([str(root)]).settings
    assert (s.sandbox.enabled, s.sandbox.backend, s.audit_log) == (True, "bwrap", root / "audit.jsonl")
    extra = write(tmp_path / "mine.toml", "[sandbox]\nenabled = false\n")
    assert load_settings([str(root)], config_file=extra).settings.sandbox.enabled is False, "--config is the user's"
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX_NETWORK", "1")
    assert load_settings([str(root)]).settings.sandbox.network is True


def test_check_reports_every_problem_of_a_file(xdg: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "six.toml",
        '[limit]\nx = 1\n[limits]\nmax_concurency = 3\nmax_concurrency = 0\n[read]\ndefault_lines = "many"\n'
        '[files]\nhard_links = "sometimes"\n[sandbox]\nenabled = "perhaps"\n',
    )
    problems = check_file(path)
    assert len(problems) == 6, problems
    assert all(str(path) in p for p in problems)


def test_the_project_file_may_lower_the_http_session_cap_but_not_raise_it(xdg: Path, root: Path) -> None:
    write(root / "mcp-codetools.toml", "[http]\nmax_sessions = 100000\n")
    loaded = load_settings([str(root)])
    assert loaded.settings.http_max_sessions == 256
    assert any("max_sessions = 100000 ignored" in note for note in loaded.ignored), loaded.ignored
    write(root / "mcp-codetools.toml", "[http]\nmax_sessions = 8\n")
    assert load_settings([str(root)]).settings.http_max_sessions == 8
