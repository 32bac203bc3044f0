"""The peers: installed from the npm registry into a scratch folder, and adapters to their tool names.

`@modelcontextprotocol/server-filesystem` has read_text_file and edit_file, no content search and no shell.
`@wonderwhy-er/desktop-commander` has read_file, edit_block, start_search (content search through ripgrep,
paged through get_more_search_results) and start_process. Install scripts are skipped (`--ignore-scripts`):
Desktop Commander's would phone home and fetch a browser; its ripgrep binary comes as an npm package anyway.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

from benchmarks.adapters import Adapter, GrepMode, Outcome, call
from benchmarks.servers import Conn, ServerSpec

PEERS_DIR = Path(__file__).resolve().parent / ".peers"
PACKAGES = {
    "fs": "@modelcontextprotocol/server-filesystem@2026.8.31",
    "dc": "@wonderwhy-er/desktop-commander@0.2.52",
}
_ENTRY = {
    "fs": "@modelcontextprotocol/server-filesystem/dist/index.js",
    "dc": "@wonderwhy-er/desktop-commander/dist/index.js",
}
_SESSION = re.compile(r"search session: (\S+)")
_TOTAL = re.compile(r"Total results found: (\d+)")
_POLL_S = 0.01
_DEFAULT_PAGE = 100


def _total(text: str) -> int:
    found = _TOTAL.search(text)
    return int(found.group(1)) if found else 0


def install(folder: Path = PEERS_DIR, log: bool = True) -> bool:
    """npm install both peers into `folder` (once); False when npm is missing or the install fails."""
    if all((folder / "node_modules" / entry).exists() for entry in _ENTRY.values()):
        return True
    npm = shutil.which("npm")
    if npm is None:
        print("peers: npm not found; peers will be shown as n/a")
        return False
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "package.json").exists():
        (folder / "package.json").write_text('{"name": "mcp-codetools-bench-peers", "private": true}\n')
    if log:
        print(f"peers: npm install {' '.join(PACKAGES.values())} into {folder} ...", flush=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error", *PACKAGES.values()],
        cwd=folder,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print(f"peers: npm install failed; peers will be shown as n/a\n{done.stderr[-2000:]}")
        return False
    return True


def installed_version(key: str, folder: Path = PEERS_DIR) -> str:
    package_json = folder / "node_modules" / Path(_ENTRY[key]).parent.parent / "package.json"
    try:
        return str(json.loads(package_json.read_text())["version"])
    except (OSError, KeyError, ValueError):
        return "not installed"


def specs(roots: list[Path], scratch: Path, folder: Path = PEERS_DIR) -> list[ServerSpec]:
    """Start commands for the installed peers; `scratch` is a private HOME for Desktop Commander's config."""
    node = shutil.which("node")
    if node is None:
        return []
    modules = folder / "node_modules"
    found: list[ServerSpec] = []
    if (modules / _ENTRY["fs"]).exists():
        found.append(
            ServerSpec(
                key="fs",
                label="server-filesystem",
                command=node,
                args=[str(modules / _ENTRY["fs"]), *map(str, roots)],
                adapter=FilesystemAdapter(),
                version=installed_version("fs", folder),
            )
        )
    if (modules / _ENTRY["dc"]).exists():
        home = scratch / "dc-home"
        config_dir = home / ".claude-server-commander"
        config_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "allowedDirectories": [str(root) for root in roots],
            "telemetryEnabled": False,
            "defaultShell": "/bin/sh",
            "pendingWelcomeOnboarding": False,
            "welcomeOnboardingEligible": False,
        }
        (config_dir / "config.json").write_text(json.dumps(config))
        found.append(
            ServerSpec(
                key="dc",
                label="desktop-commander",
                command=node,
                args=[str(modules / _ENTRY["dc"]), "--no-onboarding"],
                adapter=DesktopCommanderAdapter(),
                env={"HOME": str(home)},
                version=installed_version("dc", folder),
            )
        )
    return found


class FilesystemAdapter(Adapter):
    read_tool = "read_text_file"
    edit_tool = "edit_file"

    async def read(self, conn: Conn, path: Path) -> Outcome:
        return await call(conn, "read_text_file", {"path": str(path)})

    async def read_tail(self, conn: Conn, path: Path, total_lines: int, count: int, shift: int = 0) -> Outcome:
        # Only a tail: `shift` cannot be expressed, so it reads the last lines each time.
        return await call(conn, "read_text_file", {"path": str(path), "tail": count})

    async def edit(self, conn: Conn, path: Path, old: str, new: str) -> Outcome:
        return await call(conn, "edit_file", {"path": str(path), "edits": [{"oldText": old, "newText": new}]})


class DesktopCommanderAdapter(Adapter):
    read_tool = "read_file"
    edit_tool = "edit_block"
    grep_tool = "start_search"
    bash_tool = "start_process"

    async def read(self, conn: Conn, path: Path) -> Outcome:
        return await call(conn, "read_file", {"path": str(path)})

    async def read_tail(self, conn: Conn, path: Path, total_lines: int, count: int, shift: int = 0) -> Outcome:
        # A negative offset counts from the end. (A large positive offset is only estimated from the
        # byte size in big files: asked for the lines before the last 100 of our 200 MB file, it
        # answered with lines some 25,000 earlier.)
        return await call(conn, "read_file", {"path": str(path), "offset": -(count + shift), "length": count})

    async def edit(self, conn: Conn, path: Path, old: str, new: str) -> Outcome:
        return await call(conn, "edit_block", {"file_path": str(path), "old_string": old, "new_string": new})

    async def grep(self, conn: Conn, pattern: str, path: Path, mode: GrepMode, default_page: bool = False) -> Outcome:
        """Content search only (its `files` search type matches file names, not contents).

        All results: poll until the search completes, then fetch them in one page. `default_page`: what a
        model gets by default, the first page of 100 results, as soon as there are 100 (then stop).
        """
        if mode != "content":
            raise NotImplementedError
        start = time.perf_counter()
        started = await call(
            conn,
            "start_search",
            {"path": str(path), "pattern": pattern, "searchType": "content", "ignoreCase": False, "contextLines": 0},
        )
        found = _SESSION.search(started.text)
        if started.is_error or found is None:
            return Outcome(started.text, True, time.perf_counter() - start)
        session = found.group(1)
        calls = 1
        while True:
            page = await call(conn, "get_more_search_results", {"sessionId": session, "length": 1})
            calls += 1
            if page.is_error:
                return Outcome(page.text, True, time.perf_counter() - start, calls)
            if "Status: COMPLETED" in page.text or (default_page and _total(page.text) >= _DEFAULT_PAGE):
                break
            await asyncio.sleep(_POLL_S)
        paging = {} if default_page else {"length": 10_000_000}
        page = await call(conn, "get_more_search_results", {"sessionId": session, **paging})
        if default_page:
            await call(conn, "stop_search", {"sessionId": session})
        return Outcome(page.text, page.is_error, time.perf_counter() - start, calls + 1)

    async def bash(self, conn: Conn, command: str) -> Outcome:
        return await call(conn, "start_process", {"command": command, "timeout_ms": 10_000})
