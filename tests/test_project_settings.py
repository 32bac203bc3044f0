"""What a project file (which the model can write) may do to each setting, declared for every one of them.

Issue 35: a project's `[sandbox] image`, `memory = ""`, `pids = 0` and `cpus = 0` were applied to the
container with no note in `config`, and a project `backend = "container"` (or any project backend when
the user's was `container`) crashed `config` and `serve` with `tuple.index(x): x not in tuple`.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from mcp_codetools.cli import main
from mcp_codetools.settings import PLACES, SANDBOX_BACKENDS, ConfigError, load_settings
from mcp_codetools.settings.tightening import FREE, PROJECT_MAY, TIGHTENING, USER_ONLY, memory_bytes

PROJECT = "mcp-codetools.toml"


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's config file, in a private folder (the developer's own never leaks in)."""
    home = tmp_path / "xdg"
    (home / "mcp-codetools").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for place in PLACES.values():
        monkeypatch.delenv(place.env, raising=False)
    return home / "mcp-codetools" / "config.toml"


def test_every_setting_declares_what_a_project_file_may_do_to_it() -> None:
    """A new setting without a row fails here (and meanwhile counts as user-only)."""
    assert list(PROJECT_MAY) == list(PLACES), "one row per setting, in the model's order"
    for name, rule in PROJECT_MAY.items():
        assert rule in (FREE, USER_ONLY) or callable(rule), name
    confining = {"sandbox.enabled", "sandbox.network", "sandbox.backend", "sandbox.memory", "sandbox.pids"}
    assert confining | {"sandbox.cpus", "sandbox.mask", "sandbox.env", "bash_env_exclude"} <= TIGHTENING.keys()
    assert {name for name, rule in PROJECT_MAY.items() if rule == USER_ONLY} == {
        "lsp_servers",
        "sandbox.image",
        "sandbox.engine",
    }


def test_a_project_file_cannot_loosen_the_users_container(
    user: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user.write_text('[sandbox]\nenabled = true\nbackend = "container"\nimage = "mine:1"\n', encoding="utf-8")
    (root / PROJECT).write_text(
        '[sandbox]\nimage = "attacker/evil"\nengine = "podman"\nmemory = ""\npids = 0\ncpus = 0\n', encoding="utf-8"
    )
    loaded = load_settings([str(root)])
    s = loaded.settings.sandbox
    assert (s.image, s.engine, s.memory, s.pids, s.cpus) == ("mine:1", "docker", "4g", 1024, 2.0)
    assert main(["config", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    ignored = [line for line in out.splitlines() if line.startswith("# ignored:")]
    for key in ("image", "engine", "memory", "pids", "cpus"):
        assert any(f"{root / PROJECT} [sandbox] {key}" in line for line in ignored), key
    assert len(ignored) == 5, out


@pytest.mark.parametrize(
    ("users", "projects", "kept"),
    [
        ("auto", "container", "auto"),
        ("auto", "seatbelt", "auto"),
        ("container", "bwrap", "container"),
        ("container", "landlock", "container"),
        ("seatbelt", "bwrap", "seatbelt"),
        ("landlock", "bwrap", "bwrap"),  # tighter: taken
        ("bwrap", "landlock", "bwrap"),
    ],
)
def test_a_project_backend_never_crashes_start_up(
    user: Path, root: Path, capsys: pytest.CaptureFixture[str], users: str, projects: str, kept: str
) -> None:
    user.write_text(f'[sandbox]\nbackend = "{users}"\nimage = "mine:1"\n', encoding="utf-8")
    (root / PROJECT).write_text(f'[sandbox]\nbackend = "{projects}"\n', encoding="utf-8")
    loaded = load_settings([str(root)])
    assert loaded.settings.sandbox.backend == kept
    assert main(["config", "--root", str(root)]) == 0
    ignored = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# ignored:")]
    assert any(f"{root / PROJECT} [sandbox] backend" in line for line in ignored) == (kept != projects)


@pytest.mark.parametrize(
    ("key", "users", "projects", "kept"),
    [
        ("memory", '"4g"', '"2g"', "2g"),
        ("memory", '"4g"', '"512MiB"', "512MiB"),
        ("memory", '"4g"', '"8g"', "4g"),
        ("memory", '"4g"', '"0"', "4g"),
        ("memory", '"4g"', '"lots"', "4g"),
        ("memory", '""', '"1g"', "1g"),
        ("pids", "1024", "100", 100),
        ("pids", "1024", "4096", 1024),
        ("pids", "0", "64", 64),
        ("cpus", "2.0", "0.5", 0.5),
        ("cpus", "2.0", "8", 2.0),
    ],
)
def test_a_project_file_may_lower_a_container_limit_but_not_raise_or_remove_it(
    user: Path, root: Path, key: str, users: str, projects: str, kept: object
) -> None:
    user.write_text(f"[sandbox]\n{key} = {users}\n", encoding="utf-8")
    (root / PROJECT).write_text(f"[sandbox]\n{key} = {projects}\n", encoding="utf-8")
    loaded = load_settings([str(root)])
    assert getattr(loaded.settings.sandbox, key) == kept
    assert any(f"[sandbox] {key}" in note for note in loaded.ignored) == (str(kept) not in projects)


def test_memory_sizes_read_as_the_engines_read_them() -> None:
    assert memory_bytes("512m") == memory_bytes("512MB") == memory_bytes("512 MiB") == 512 << 20
    assert memory_bytes("") == memory_bytes("0") == 0
    with pytest.raises(ValueError):
        memory_bytes("4 gigs")


_BOOLS = ("true", "false")
_NUMBERS = ("0", "1", "5000", "1.5")
_LISTS = ("[]", '["A"]', '["B", "A"]')
_TEXTS = ('"refuse"', '"write-through"', '"localhost"', '"10.0.0.1"', '"audit.jsonl"')
_CANDIDATES: dict[str, tuple[str, ...]] = {
    "sandbox.enabled": _BOOLS,
    "sandbox.network": _BOOLS,
    "sandbox.backend": tuple(f'"{b}"' for b in SANDBOX_BACKENDS),
    "sandbox.memory": ('""', '"0"', '"1g"', '"x"', '"9p"'),
    "sandbox.pids": _NUMBERS,
    "sandbox.cpus": _NUMBERS,
    "sandbox.mask": _LISTS,
    "sandbox.env": _LISTS,
    "bash_env_exclude": _LISTS,
    "http_max_sessions": _NUMBERS,
    "http_max_states": _NUMBERS,
    "audit_log_max_bytes": _NUMBERS,
    "audit_log_keep": _NUMBERS,
}


@pytest.mark.parametrize("name", sorted(TIGHTENING))
def test_no_project_value_of_a_confining_setting_crashes_start_up(user: Path, root: Path, name: str) -> None:
    """Every pair (the user's value, the project's) either loads or is refused as a bad value, by name."""
    place = PLACES[name]
    for users, projects in itertools.product(_CANDIDATES.get(name, _TEXTS), repeat=2):
        user.write_text(f"[{place.section}]\n{place.key} = {users}\n", encoding="utf-8")
        (root / PROJECT).write_text(f"[{place.section}]\n{place.key} = {projects}\n", encoding="utf-8")
        try:
            load_settings([str(root)])
        except ConfigError as exc:
            assert place.key in str(exc), exc


def test_the_settings_a_project_file_holds_are_known(user: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`from_project` holds a tight value the project repeats (its `network = false` closes a sandbox on by
    default), not one it may not set, nor one a later source of the user's overrides."""
    user.write_text('[sandbox]\nmask = ["~/.vault"]\n', encoding="utf-8")
    (root / PROJECT).write_text(
        '[sandbox]\nnetwork = false\nenabled = false\nimage = "evil"\n'
        "[read]\ndefault_lines = 50\n[limits]\nmax_concurrency = 9\n",
        encoding="utf-8",
    )
    loaded = load_settings([str(root)])
    assert loaded.sources["sandbox.network"] == loaded.sources["sandbox.enabled"] == "default", "no value moved"
    assert loaded.from_project == {"sandbox.network", "sandbox.enabled", "read_default_lines", "max_concurrency"}
    monkeypatch.setenv("MCP_CODETOOLS_SANDBOX_NETWORK", "1")
    loaded = load_settings([str(root)], flags={"max_concurrency": 3})
    assert loaded.from_project == {"sandbox.enabled", "read_default_lines"}
    user.write_text("[sandbox]\nnetwork = false\n", encoding="utf-8")
    monkeypatch.delenv("MCP_CODETOOLS_SANDBOX_NETWORK")
    loaded = load_settings([str(root)])
    assert "sandbox.network" not in loaded.from_project, "the user's value, which the project repeats"
    assert load_settings([str(root)], read_files=False).from_project == set()
