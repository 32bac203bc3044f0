"""The docs cannot drift from the code: tool lists, module paths, settings, flags, layers and open bugs.

Each test derives what the prose must say from the code (`default_tools()`, the settings model, the
parser, `LAYERS`, the reliability harness) and fails naming the file and the words that went stale.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest

from mcp_codetools import __doc__ as package_doc
from mcp_codetools.cli import _parser
from mcp_codetools.pipeline import PROGRESS_INTERVAL_S
from mcp_codetools.policy.loading import DEFAULT_SERVER_NAMES, check_policy_file
from mcp_codetools.settings import PLACES, check_file
from mcp_codetools.tools import default_tools
from tests.reliability.harness import KNOWN_BUGS
from tests.test_layers import LAYERS, PACKAGE

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PROSE = [
    README,
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "deploy" / "README.md",
    REPO / "manifests" / "http-remote.md",
]
"""The documents a user reads (CHANGELOG.md is history: it may name what is gone)."""


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# Tool lists


def tool_lists(text: str) -> list[list[str]]:
    """Every run of five or more tool names in a list (`Read, Edit and Write`), with lines joined."""
    names = sorted((tool.name for tool in default_tools()), key=len, reverse=True)
    name = "(?:" + "|".join(names) + ")"
    item = rf"[`*]*{name}[`*]*"
    sep = r"(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+)"
    pattern = re.compile(rf"(?<![\w`]){item}(?:{sep}{item}){{4,}}(?![\w(])")
    flat = re.sub(r"\s*\n\s*", " ", text)
    return [re.findall(name, found.group(0)) for found in pattern.finditer(flat)]


def described_places() -> dict[str, str]:
    """Every text that introduces the server: the docs, the package, the command line and the manifests."""
    places = {str(path.relative_to(REPO)): read(path) for path in PROSE}
    places["mcp_codetools/__init__.py"] = package_doc or ""
    places["--help"] = _parser().description or ""
    with (REPO / "pyproject.toml").open("rb") as f:
        places["pyproject.toml description"] = tomllib.load(f)["project"]["description"]
    for name in ("manifest.json", "server.json"):
        places[f"manifests/{name}"] = read(REPO / "manifests" / name)
    return places


def test_every_tool_list_names_every_tool_or_every_file_tool() -> None:
    """A list of five or more tools is the whole set, or every tool that takes a path (the confined ones)."""
    every = {tool.name for tool in default_tools()}
    with_paths = {tool.name for tool in default_tools() if tool.path_fields}
    stale = [
        f"{where}: {', '.join(names)}"
        for where, text in described_places().items()
        for names in tool_lists(text)
        if set(names) not in (every, with_paths)
    ]
    assert not stale, f"lists that miss tools (all: {sorted(every)}; with paths: {sorted(with_paths)}): {stale}"


def test_the_tool_list_pattern_sees_a_short_list() -> None:
    assert tool_lists("tools — Read, Grep, Glob, Edit, Write,\n Bash — with") == [
        ["Read", "Grep", "Glob", "Edit", "Write", "Bash"]
    ]


# Paths


PATH_TOKEN = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|md|json|sh|toml|cfg|yml))`")
_NOT_REPO_PATHS = ("~", "/", ".venv", "dist/", "$", ".claude/", ".vscode/", ".cursor/")


def named_paths(text: str) -> set[str]:
    """The repository paths a document names in backticks (not a user's files, not placeholders)."""
    return {
        path
        for path in PATH_TOKEN.findall(text)
        if not path.startswith(_NOT_REPO_PATHS) and "<" not in path and not path.startswith(".")
    }


def exists(path: str, folder: Path = REPO) -> bool:
    """A path from the repository's top, the package's or the document's folder, or a bare module name."""
    if any((base / path).exists() for base in (REPO, REPO / PACKAGE, folder)):
        return True
    if "/" not in path and path.endswith(".py"):
        return any((REPO / PACKAGE).rglob(path))
    return "/" not in path  # a bare non-Python name is a user's file (`mcp-codetools.toml`, `settings.json`)


def test_every_path_the_docs_name_exists() -> None:
    gone = sorted(
        f"{path.relative_to(REPO)}: {name}"
        for path in PROSE
        for name in named_paths(read(path))
        if not exists(name, path.parent)
    )
    assert not gone, f"the docs name files that do not exist: {gone}"


def test_a_gone_module_is_caught() -> None:
    assert not exists("transport.py") and not exists("http_server.py") and exists("server.py")
    assert named_paths("`server.py`, `transport.py` and `~/.gitconfig`") == {"server.py", "transport.py"}


# Settings and flags


def sources(folder: Path) -> list[Path]:
    """The project's Python files below `folder`; not those in dot-folders (benchmarks/.corpus holds hundreds
    of megabytes of downloaded code that reading took most of a minute)."""
    found = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = [name for name in dirs if not name.startswith(".")]  # not walked at all
        found += [Path(top, name) for name in files if name.endswith(".py")]
    return found


def test_every_setting_and_variable_the_readme_names_is_real() -> None:
    readme = read(README)
    keys = {f"[{place.section}] {place.key}" for place in PLACES.values()}
    policy = {"[permissions]", "[hooks]"}
    named = set(re.findall(r"`(\[[a-z_]+\] [a-z_]+)`", readme))
    unknown = sorted(key for key in named if key not in keys and key.split()[0] not in policy)
    assert not unknown, f"README names settings the model does not have: {unknown}"
    code = "\n".join(read(p) for d in ("mcp_codetools", "tests", "benchmarks") for p in sources(REPO / d))
    variables = set(re.findall(r"MCP_CODETOOLS_[A-Z0-9_]+", readme)) - {"MCP_CODETOOLS_"}
    settings_env = {place.env for place in PLACES.values()}
    unread = sorted(v for v in variables if v not in settings_env and f'"{v}"' not in code)
    assert not unread, f"README names variables nothing reads: {unread}"


def test_every_toml_example_in_the_readme_is_accepted(tmp_path: Path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", read(README), re.S)
    assert blocks, "the README's TOML examples moved: fix the pattern"
    for number, block in enumerate(blocks):
        path = tmp_path / f"example{number}.toml"
        path.write_text(block, encoding="utf-8")
        assert check_file(path) + check_policy_file(path) == [], block


def synopsis() -> str:
    found = re.search(r"### Command line\n\n```text\n(.*?)```", read(README), re.S)
    assert found, "the README's synopsis moved: fix the pattern"
    return found.group(1)


def test_the_synopsis_lists_every_flag() -> None:
    flags = {option for action in _parser()._actions for option in action.option_strings if option.startswith("--")}
    missing = sorted(flag for flag in flags if not re.search(rf"{re.escape(flag)}(?![\w-])", synopsis()))
    assert not missing, f"flags the README's synopsis lacks: {missing}"


def test_the_progress_interval_in_the_readme_is_the_servers() -> None:
    found = re.findall(r"a notification at least every (\d+(?:\.\d+)?) seconds", read(README))
    assert found == [f"{PROGRESS_INTERVAL_S:g}"], found


# Layers and bugs


def documented_layers() -> list[frozenset[str]]:
    """ARCHITECTURE's layer block, lowest first: the names before each line's description."""
    doc = read(REPO / "docs" / "ARCHITECTURE.md")
    found = re.search(r"## Layers, highest first\n\n```\n(.*?)```", doc, re.S)
    assert found, "docs/ARCHITECTURE.md's layer block moved: fix the pattern"
    layers: list[set[str]] = []
    carry = False
    for line in found.group(1).splitlines():
        names = re.split(r"\s{2,}", line.strip())[0]
        parts = {part.strip().rstrip("/") for part in names.split(",") if part.strip()}
        if carry:
            layers[-1] |= parts
        else:
            layers.append(parts)
        carry = names.rstrip().endswith(",")
    return [frozenset(layer) for layer in reversed(layers)]


def test_the_architecture_doc_lists_the_layers_the_test_enforces() -> None:
    enforced = [layer - {PACKAGE} for layer in LAYERS]
    assert documented_layers() == enforced


def open_bugs(report: str) -> list[str]:
    section = report.split("## Open bugs pinned by xfail tests", 1)
    if len(section) == 1:
        return []
    return [line for line in section[1].split("\n## ", 1)[0].splitlines() if line.startswith("- ")]


def test_the_reliability_reports_open_bugs_are_the_harness_list() -> None:
    """Each open bug in docs/reliability.md is one the harness still pins (KNOWN_BUGS), and none is missing."""
    listed = open_bugs(read(REPO / "docs" / "reliability.md"))
    pinned = [bug.line for bug in KNOWN_BUGS]
    assert len(listed) == len(pinned), f"the report lists {listed}, the harness pins {pinned}: regenerate the report"
    for line in pinned:
        assert any(line in item for item in listed), line


def test_the_reliability_report_has_a_row_for_every_tool() -> None:
    report = read(REPO / "docs" / "reliability.md")
    rows = set(re.findall(r"^\| ([A-Za-z]+) \| [\d,]+ \| [\d,]+ \|", report, re.M))
    missing = sorted(tool.name for tool in default_tools() if tool.name not in rows)
    assert not missing, f"docs/reliability.md has no row for {missing}: regenerate it"


@pytest.mark.parametrize("report", ["## Open bugs pinned by xfail tests\n\n- `test_x` (fuzz): a bug\n\n## Next\n"])
def test_an_open_bug_in_the_report_is_seen(report: str) -> None:
    assert open_bugs(report) == ["- `test_x` (fuzz): a bug"]


# Claude Code's names for this server's tools


def test_every_name_the_shipped_configs_give_the_server_is_honoured() -> None:
    """`mcp__<name>__Bash(...)` rules work for each name the README's client configs and the bundle use."""
    names = {json.loads(read(REPO / "manifests" / "manifest.json"))["name"]}
    for path in (REPO / "manifests").glob("*.json"):
        data = json.loads(read(path))
        for table in ("mcpServers", "servers"):
            names |= set(data.get(table, {}))
    names |= set(re.findall(r"claude mcp add (?:--\S+ \S+ )*([\w-]+) ", read(README)))
    assert "codetools" in names, "the pattern found no config: fix it"
    assert names <= set(DEFAULT_SERVER_NAMES), (
        f"names the server does not answer to: {names - set(DEFAULT_SERVER_NAMES)}"
    )
    assert "`mcp__codetools__Bash(rm:*)`" in read(README), "the README shows Claude Code's form"
