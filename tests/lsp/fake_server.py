"""A small language server for tests: every operation, predictable answers, and faults on demand.

Run as `python fake_server.py [OUTSIDE_PATH [REPORT_PATH]]`. Documents are kept as sent; the `.py` files under
the root are read at `initialize`, as a server indexes its workspace, and an open document replaces its file.
With REPORT_PATH, `initialize` writes there what the server was started with: its environment's names, its
working directory and its `sys.path`. Answers:
- a diagnostic (error) on every line containing `BAD`, published with the document's version;
- definition/implementation: the first `def NAME` or `class NAME` line of any known document for the word at
  the position; the word `outside` points at OUTSIDE_PATH line 1 instead;
- references: every occurrence of the word in known documents; hover: `word: NAME`;
- symbols: each def/class line; call hierarchy: the function around a position, callers and callees by name.
Hover also lists the ids of the requests the client cancelled. Faults: a document containing `CRASH` makes
the server exit; `HANG` makes hover never answer; `SLOW` makes the server stop reading for 20 s, as one busy
analysing a big file does, before it publishes. `DEFER` holds a hover's answer, as a cold server does while it
indexes, until a document containing `RELEASE` is opened or changed (it answers those held first).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

docs: dict[str, str] = {}
cancelled: list[int] = []
held: list[dict[str, Any]] = []
disk: dict[str, str] = {}
OUTSIDE = sys.argv[1] if len(sys.argv) > 1 else "/nonexistent/outside.py"
REPORT = sys.argv[2] if len(sys.argv) > 2 else None
DEFS = re.compile(r"^(\s*)(def|class)\s+(\w+)")


def known() -> dict[str, str]:
    """Every document the server knows: the files it indexed, as last sent where the client opened them."""
    return {**disk, **docs}


def index(root_uri: str | None) -> None:
    if not root_uri:
        return
    for path in sorted(Path(unquote(urlparse(root_uri).path)).rglob("*.py")):
        disk[path.as_uri()] = path.read_text(encoding="utf-8", errors="replace")


def report() -> None:
    if REPORT is not None:
        facts = {"env": sorted(os.environ), "cwd": os.getcwd(), "sys_path": sys.path}
        Path(REPORT).write_text(json.dumps(facts), encoding="utf-8")


def send(message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def read() -> dict[str, Any] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line.strip() == b"":
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))


def word_at(uri: str, pos: dict[str, int]) -> str:
    lines = docs.get(uri, "").split("\n")
    line = lines[pos["line"]] if pos["line"] < len(lines) else ""
    for m in re.finditer(r"\w+", line):
        if m.start() <= pos["character"] <= m.end():
            return m.group(0)
    return ""


def rng(line: int, col: int, length: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + length}}


def definitions(name: str) -> list[dict[str, Any]]:
    if name == "outside":
        return [{"uri": Path(OUTSIDE).as_uri(), "range": rng(0, 0, 1)}]
    found = []
    for uri, text in known().items():
        for n, line in enumerate(text.split("\n")):
            m = DEFS.match(line)
            if m and m.group(3) == name:
                found.append({"uri": uri, "range": rng(n, m.start(3), len(name))})
    return found[:1]


def symbols(uri: str) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(known().get(uri, "").split("\n")):
        m = DEFS.match(line)
        if m:
            kind = 5 if m.group(2) == "class" else 12
            out.append({"name": m.group(3), "kind": kind, "location": {"uri": uri, "range": rng(n, m.start(3), 1)}})
    return out


def item_for(uri: str, name: str) -> dict[str, Any] | None:
    for symbol in symbols(uri):
        if symbol["name"] == name:
            r = symbol["location"]["range"]
            return {"name": name, "kind": 12, "uri": uri, "range": r, "selectionRange": r}
    return None


def enclosing(uri: str, line_no: int) -> str | None:
    name = None
    for n, line in enumerate(known().get(uri, "").split("\n")):
        if n > line_no:
            break
        m = DEFS.match(line)
        if m:
            name = m.group(3)
    return name


def publish(uri: str, version: int) -> None:
    items = [
        {"range": rng(n, line.index("BAD"), 3), "severity": 1, "message": f"BAD on line {n + 1}", "source": "fake"}
        for n, line in enumerate(docs[uri].split("\n"))
        if "BAD" in line
    ]
    send(
        {
            "jsonrpc": "2.0",
            "method": "textDocument/publishDiagnostics",
            "params": {"uri": uri, "version": version, "diagnostics": items},
        }
    )


def answer(method: str, params: dict[str, Any]) -> Any:
    if method == "initialize":
        index(params.get("rootUri"))
        report()
        providers = [
            "definition",
            "references",
            "hover",
            "documentSymbol",
            "workspaceSymbol",
            "implementation",
            "callHierarchy",
        ]
        caps = {f"{p}Provider": True for p in providers}
        return {"capabilities": {**caps, "textDocumentSync": 1, "positionEncoding": "utf-16"}}
    if method == "shutdown":
        return None
    doc = params.get("textDocument", {}).get("uri", "")
    pos = params.get("position", {"line": 0, "character": 0})
    if method in ("textDocument/definition", "textDocument/implementation"):
        return definitions(word_at(doc, pos))
    if method == "textDocument/references":
        name = word_at(doc, pos)
        return [
            {"uri": uri, "range": rng(n, m.start(), len(name))}
            for uri, text in known().items()
            for n, line in enumerate(text.split("\n"))
            for m in re.finditer(rf"\b{re.escape(name)}\b", line)
        ]
    if method == "textDocument/hover":
        if "HANG" in docs.get(doc, ""):
            return ...
        told = f"\ncancelled: {cancelled}" if cancelled else ""
        return {"contents": {"kind": "plaintext", "value": f"word: {word_at(doc, pos)}{told}"}}
    if method == "textDocument/documentSymbol":
        return symbols(doc)
    if method == "workspace/symbol":
        return [s for uri in known() for s in symbols(uri) if params["query"].lower() in s["name"].lower()]
    if method == "textDocument/prepareCallHierarchy":
        name = enclosing(doc, pos["line"])
        item = item_for(doc, name) if name else None
        return [item] if item else []
    if method in ("callHierarchy/incomingCalls", "callHierarchy/outgoingCalls"):
        target = params["item"]["name"]
        calls = []
        for uri, text in known().items():
            for n, line in enumerate(text.split("\n")):
                if DEFS.match(line):
                    continue
                outer = enclosing(uri, n)
                if method.endswith("incomingCalls") and re.search(rf"\b{target}\(", line) and outer:
                    item = item_for(uri, outer)
                    if item:
                        calls.append({"from": item, "fromRanges": [rng(n, line.index(target), len(target))]})
                if method.endswith("outgoingCalls") and outer == target:
                    for m in re.finditer(r"(\w+)\(", line):
                        found = definitions(m.group(1))
                        if found:
                            r = found[0]["range"]
                            to = {
                                "name": m.group(1),
                                "kind": 12,
                                "uri": found[0]["uri"],
                                "range": r,
                                "selectionRange": r,
                            }
                            calls.append({"to": to, "fromRanges": [rng(n, m.start(1), len(m.group(1)))]})
        return calls
    return None


def main() -> None:
    while (message := read()) is not None:
        method, params = message.get("method"), message.get("params") or {}
        if method in ("textDocument/didOpen", "textDocument/didChange"):
            uri = params["textDocument"]["uri"]
            docs[uri] = (
                params["textDocument"]["text"] if method.endswith("didOpen") else params["contentChanges"][-1]["text"]
            )
            if "CRASH" in docs[uri]:
                sys.exit(3)
            if "RELEASE" in docs[uri]:
                while held:
                    send(held.pop(0))
            if "SLOW" in docs[uri]:
                time.sleep(20)
            publish(uri, params["textDocument"]["version"])
            continue
        if method == "exit":
            return
        if method == "$/cancelRequest":
            cancelled.append(params["id"])
            continue
        if "id" not in message or method is None:
            continue
        result = answer(method, params)
        if method == "textDocument/hover" and "DEFER" in docs.get(params["textDocument"]["uri"], ""):
            held.append({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif result is not ...:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
