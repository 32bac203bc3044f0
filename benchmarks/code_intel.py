"""What the edit checks and the LSP tool cost: `python -m benchmarks.code_intel [--rounds N]`.

1. Syntax check: Edit of a 2,000-line Python file (this package's modules, joined) with `syntax_check`
   "report" against "off", calls alternating in the same run; the p50 difference is the check's cost.
2. findReferences of `is_within` (used all over this package) with the built-in Python server: the cold
   call (server start and first analysis) and the warm median.
3. Diagnostics after an edit with the Python server running and asked for them (`diagnostics = true`; by
   default edits do not wait for jedi): p50 and max of the Edit call, and of its text sync and wait alone (the
   span the `lsp.diagnostics_wait_s` cap bounds), alternating an edit that breaks the file and one that fixes it.
4. A real 26,607-line package, `rich` (real_package.py downloads it): the first call to a cold server
   (findReferences of `Console.print`: answered within `lsp.first_call_s`, or "still indexing" and the
   retries until answered), then warm findReferences of 25 definitions spread over the package (p50, p90,
   wall time and the server's CPU time) and of `Console.print` (10 calls), and documentSymbol of the
   2,661-line `rich/console.py` (10 calls). The baseline, same run: jedi-language-server as it comes (a
   `python` server table running its own entry, no kept analysis), asked the same; its references are the
   reference the built-in server's recall is counted against.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks import real_package
from mcp_codetools.lsp.servers import python_server
from mcp_codetools.pipeline import Pipeline
from mcp_codetools.session import CodeSession
from mcp_codetools.settings import Settings
from mcp_codetools.tools import default_tools, edit_checks

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_codetools"
REFUSED: list[str] = []
"""Requests a server answered with an error, asked again once."""
_PLACE = re.compile(r"^(\S+:\d+:\d+)(?:: | \()", re.MULTILINE)


def big_module(lines: int) -> str:
    """About `lines` lines of real Python: this package's modules, joined (future imports dropped)."""
    out: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        out += [line for line in path.read_text(encoding="utf-8").split("\n") if "from __future__" not in line]
        if len(out) >= lines:
            break
    return "\n".join(out[:lines]) + "\n"


def toggle_site(text: str) -> tuple[str, str]:
    """A line inside a function near the middle of the file, and the same line changed."""
    lines = text.split("\n")
    for n in range(len(lines) // 2, len(lines)):
        line = lines[n]
        if line.startswith("    ") and line.lstrip().startswith("return ") and text.count(line) == 1:
            return line, line + "  # changed"
    raise SystemExit("no unique return line found")


async def ms(call: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await call
    return (time.perf_counter() - start) * 1000, result


async def syntax_overhead(workdir: Path, rounds: int) -> dict[str, float]:
    pipeline = Pipeline(default_tools())
    timings: dict[str, list[float]] = {"report": [], "off": []}
    sessions = {}
    for mode in timings:
        root = workdir / f"syntax-{mode}"
        root.mkdir()
        (root / "big.py").write_text(big_module(2000), encoding="utf-8")
        sessions[mode] = CodeSession(Settings(roots=(root,), syntax_check=mode))  # type: ignore[arg-type]
        await pipeline.run(sessions[mode], "Read", {"file_path": str(root / "big.py")})
    try:
        text = (workdir / "syntax-off" / "big.py").read_text(encoding="utf-8")
        old, new = toggle_site(text)
        for i in range(rounds):
            for mode, session in sessions.items():
                path = session.settings.roots[0] / "big.py"
                a, b = (old, new) if i % 2 == 0 else (new, old)
                took, out = await ms(
                    pipeline.run(session, "Edit", {"file_path": str(path), "old_string": a, "new_string": b})
                )
                assert not out.is_error, out.text
                timings[mode].append(took)
    finally:
        for session in sessions.values():
            await session.aclose()
    report, off = statistics.median(timings["report"]), statistics.median(timings["off"])
    return {"report_p50_ms": report, "off_p50_ms": off, "overhead_p50_ms": report - off}


async def references(workdir: Path, warm_rounds: int) -> dict[str, float]:
    root = workdir / "repo"
    shutil.copytree(PACKAGE, root / "mcp_codetools", ignore=shutil.ignore_patterns("__pycache__"))
    target = root / "mcp_codetools" / "files" / "paths.py"
    line = next(n for n, text in enumerate(target.read_text().split("\n"), 1) if text.startswith("def is_within"))
    args = {"operation": "findReferences", "file_path": str(target), "line": line, "character": 5}
    pipeline = Pipeline(default_tools())
    session = CodeSession(Settings(roots=(root,)))
    try:
        cold = await first_call(pipeline, session, args)
        warm = [(await ms(pipeline.run(session, "LSP", args)))[0] for _ in range(warm_rounds)]
        status = session.language_servers.status()
    finally:
        await session.aclose()
    return {
        "cold_ms": cold["answered_after_ms"],
        "warm_p50_ms": statistics.median(warm),
        "found": cold["found"],
        "rss_mib": status[0]["rssMiB"],
    }


async def diagnostics(workdir: Path, rounds: int) -> dict[str, Any]:
    root = workdir / "diag"
    root.mkdir()
    path = root / "mod.py"
    path.write_text(big_module(400), encoding="utf-8")
    pipeline = Pipeline(default_tools())
    spec = python_server()
    assert spec is not None, "jedi-language-server is not installed"
    # The built-in server is not waited for (its diagnostics repeat the syntax check); ask for them here.
    table = {"python": {"command": list(spec.command), "extensions": [".py"], "diagnostics": True}}
    session = CodeSession(Settings(roots=(root,), lsp_servers=table))  # type: ignore[arg-type]
    timings, answered = [], 0
    # The bound's own span: from the start of the text sync to the diagnostics note's end (the edit before it
    # is not the wait's).
    spans: list[float] = []
    plain = edit_checks.add_diagnostics_note

    async def timed(*args: Any, **kwargs: Any) -> None:
        took, _ = await ms(plain(*args, **kwargs))
        spans.append(took)

    edit_checks.add_diagnostics_note = timed  # type: ignore[assignment]
    try:
        await pipeline.run(session, "Read", {"file_path": str(path)})
        await pipeline.run(session, "LSP", {"operation": "documentSymbol", "file_path": str(path)})
        old, _ = toggle_site(path.read_text(encoding="utf-8"))
        broken = old + " +"
        for i in range(rounds):
            a, b = (old, broken) if i % 2 == 0 else (broken, old)
            took, out = await ms(
                pipeline.run(session, "Edit", {"file_path": str(path), "old_string": a, "new_string": b})
            )
            assert not out.is_error, out.text
            timings.append(took)
            answered += bool(out.meta.get("diagnostics", {}).get("answered"))
    finally:
        edit_checks.add_diagnostics_note = plain  # type: ignore[assignment]
        await session.aclose()
    cap = Settings().lsp_diagnostics_wait_s * 1000
    return {
        "p50_ms": statistics.median(timings),
        "max_ms": max(timings),
        "wait_p50_ms": statistics.median(spans),
        "wait_max_ms": max(spans),
        "cap_ms": cap,
        "answered": answered,
        "n": rounds,
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def first_call(pipeline: Pipeline, session: CodeSession, args: dict[str, Any]) -> dict[str, Any]:
    """The first call to a cold server, then the retries its "still indexing" answer asks for."""
    notes: list[str | None] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        notes.append(message)

    began = time.perf_counter()
    took, out = await ms(pipeline.run(session, "LSP", args, progress=progress))
    first = {"ms": took, "indexing": bool(out.meta.get("indexing")), "retry_s": out.meta.get("retryAfterS")}
    retries: list[float] = []
    while out.meta.get("indexing") and len(retries) < 20:
        await anyio.sleep(out.meta["retryAfterS"])
        took, out = await ms(pipeline.run(session, "LSP", args))
        retries.append(took)
    assert not out.is_error and not out.meta.get("indexing"), out.text
    return {
        **first,
        "progress": len(notes),
        "retries": retries,
        "answered_after_ms": (time.perf_counter() - began) * 1000,
        "found": out.text.split("\n", 1)[0],
    }


def _places(text: str) -> set[str]:
    """The `path:line:col` of each location an LSP answer lists."""
    return {m.group(1) for m in _PLACE.finditer(text)}


def _group_cpu_ms(group: int) -> float | None:
    """CPU time so far of the processes in a process group (a server and jedi's helper), from /proc (Linux)."""
    total = 0
    try:
        names = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for name in names:
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:
            total += int(fields[11]) + int(fields[12])
    return total * 1000 / os.sysconf("SC_CLK_TCK")


async def _references(pipeline: Pipeline, session: CodeSession, symbol: Any) -> tuple[float, float | None, set[str]]:
    """A symbol's findReferences (all of its references on one page): time, the server's CPU time, places."""
    at = {"file_path": str(symbol.path), "line": symbol.line, "character": symbol.character, "limit": 500}
    client = session.language_servers.running(symbol.path, session.settings.roots[0])
    assert client is not None
    before = _group_cpu_ms(client.conn.pid)
    took, out = await ms(pipeline.run(session, "LSP", {"operation": "findReferences", **at}))
    if out.is_error and "refused" in out.text:  # the server failed the request (seen once from the stock one)
        REFUSED.append(f"{symbol.name}: {out.text}")
        took, out = await ms(pipeline.run(session, "LSP", {"operation": "findReferences", **at}))
    after = _group_cpu_ms(client.conn.pid)
    assert not out.is_error and not out.meta.get("indexing"), out.text
    return took, None if before is None or after is None else after - before, _places(out.text)


async def rich_package(workdir: Path, symbols: int) -> dict[str, Any]:
    root = real_package.fetch(workdir)
    console = root / "rich" / "console.py"
    line, column = real_package.method_line(console, "print")
    print_refs = {"operation": "findReferences", "file_path": str(console), "line": line, "character": column}
    outline = {"operation": "documentSymbol", "file_path": str(console)}
    chosen = real_package.definitions(root, symbols)
    pipeline = Pipeline(default_tools())
    session = CodeSession(Settings(roots=(root,)))
    # The baseline, running beside it: jedi-language-server as it comes (a new analysis for every request).
    stock_command = [sys.executable, "-I", "-c", "from jedi_language_server.cli import cli; cli()"]
    table = {"python": {"command": stock_command, "extensions": [".py"]}}
    bounds = {"lsp_first_call_s": 120.0, "lsp_timeout_s": 120.0}
    stock = CodeSession(Settings(roots=(root,), lsp_servers=table, **bounds))  # type: ignore[arg-type]
    warm, stock_warm = [], []
    try:
        cold = await first_call(pipeline, session, print_refs)
        await first_call(pipeline, stock, print_refs)
        # Alternating, so that the machine's load and the disk's caches weigh on both alike.
        for symbol in chosen:
            warm.append(await _references(pipeline, session, symbol))
            stock_warm.append(await _references(pipeline, stock, symbol))
        same, stock_print = [], []
        for _ in range(10):
            same.append((await ms(pipeline.run(session, "LSP", print_refs)))[0])
            stock_print.append((await ms(pipeline.run(stock, "LSP", print_refs)))[0])
        ours = [(await ms(pipeline.run(session, "LSP", outline)))[0] for _ in range(10)]
        rss = session.language_servers.status()[0]["rssMiB"]
        stock_rss = stock.language_servers.status()[0]["rssMiB"]
        await pipeline.run(stock, "LSP", outline)
        jedi = [(await ms(pipeline.run(stock, "LSP", outline)))[0] for _ in range(3)]
    finally:
        await session.aclose()
        await stock.aclose()
    return {
        "lines": real_package.python_lines(root),
        "console_lines": len(console.read_text(encoding="utf-8").split("\n")),
        "cold": cold,
        "symbols": [s.name for s in chosen],
        "warm": [t for t, _, _ in warm],
        "cpu": [c for _, c, _ in warm],
        "found": [p for _, _, p in warm],
        "stock_warm": [t for t, _, _ in stock_warm],
        "stock_cpu": [c for _, c, _ in stock_warm],
        "stock_found": [p for _, _, p in stock_warm],
        "rss": rss,
        "stock_rss": stock_rss,
        "print": same,
        "stock_print": stock_print,
        "outline": ours,
        "jedi_outline": jedi,
    }


async def main(rounds: int, parts: str) -> None:
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="mcp-codetools-bench-intel-") as tmp:
        work = Path(tmp)
        if "1" in parts:
            await _print_syntax(work, rounds)
        if "2" in parts:
            await _print_references(work)
        if "3" in parts:
            await _print_diagnostics(work, rounds)
        if "4" in parts:
            await _print_rich(work)
    print(f"load average (1 min) at start {load[0]:.2f}, at end {os.getloadavg()[0]:.2f}")


async def _print_syntax(work: Path, rounds: int) -> None:
    s = await syntax_overhead(work, rounds)
    print("1. Syntax check on Edit of a 2,000-line Python file")
    print(
        f"   report p50 {s['report_p50_ms']:.2f} ms, off p50 {s['off_p50_ms']:.2f} ms, "
        f"overhead p50 {s['overhead_p50_ms']:.2f} ms (target <= 2 ms), {rounds} calls each"
    )


async def _print_references(work: Path) -> None:
    r = await references(work, 10)
    print("2. findReferences of is_within in this package (jedi-language-server)")
    print(
        f"   cold {r['cold_ms']:.0f} ms (server start + first analysis), warm p50 {r['warm_p50_ms']:.0f} ms "
        f"(target <= 500 ms); {r['found']}; server RSS {r['rss_mib']} MiB"
    )


async def _print_diagnostics(work: Path, rounds: int) -> None:
    d = await diagnostics(work, max(10, rounds // 5))
    print("3. Edit with the Python server running (diagnostics of the new text)")
    print(
        f"   whole Edit p50 {d['p50_ms']:.0f} ms, max {d['max_ms']:.0f} ms; text sync and wait p50 "
        f"{d['wait_p50_ms']:.0f} ms, max {d['wait_max_ms']:.0f} ms (cap {d['cap_ms']:.0f} ms); "
        f"answered {d['answered']}/{d['n']}"
    )


async def _print_rich(work: Path) -> None:
    p = await rich_package(work, 25)
    c = p["cold"]
    print(f"4. {real_package.PACKAGE}: {p['lines']:,} lines of Python; built-in server (jedi-language-server)")
    first = f"still indexing, ask again in {c['retry_s']} s" if c["indexing"] else c["found"]
    print(
        f"   first call (cold, findReferences of Console.print): {c['ms']:.0f} ms (target <= 5,000 ms or an "
        f"indexing answer): {first}; {c['progress']} progress notifications"
    )
    if c["retries"]:
        retries = ", ".join(f"{t:.0f}" for t in c["retries"])
        print(f"   retries: {retries} ms; answered {c['answered_after_ms']:.0f} ms after the first call: {c['found']}")
    w, b = p["warm"], p["stock_warm"]
    print(
        f"   warm findReferences, {len(w)} definitions once each: p50 {statistics.median(w):.0f} ms "
        f"(target <= 300), p90 {_quantile(w, 0.9):.0f} ms (target <= 800), max {max(w):.0f} ms; "
        f"jedi-language-server as it comes: p50 {statistics.median(b):.0f} ms, p90 {_quantile(b, 0.9):.0f} ms, "
        f"max {max(b):.0f} ms"
    )
    if None not in p["cpu"] + p["stock_cpu"]:
        c, d = p["cpu"], p["stock_cpu"]
        print(
            f"   the server's CPU time for them (its process group): p50 {statistics.median(c):.0f} ms, "
            f"p90 {_quantile(c, 0.9):.0f} ms; as it comes: p50 {statistics.median(d):.0f} ms, "
            f"p90 {_quantile(d, 0.9):.0f} ms"
        )
    pairs = list(zip(p["found"], p["stock_found"], strict=True))
    reference = sum(len(known) for _, known in pairs)
    kept = sum(len(found & known) for found, known in pairs)
    extra = sum(len(found - known) for found, known in pairs)
    print(f"   recall against jedi-language-server as it comes: {kept}/{reference} references, {extra} more")
    for name, took, base, (found, known) in zip(p["symbols"], w, b, pairs, strict=True):
        if found != known or max(took, base) > 800:
            print(f"     {name}: {took:.0f} ms against {base:.0f} ms, {len(found)} references against {len(known)}")
    print(
        f"   warm findReferences of Console.print, 10 calls: p50 {statistics.median(p['print']):.0f} ms; "
        f"as it comes: p50 {statistics.median(p['stock_print']):.0f} ms"
    )
    print(f"   server memory after them: {p['rss']} MiB; as it comes: {p['stock_rss']} MiB")
    for refused in REFUSED:
        print(f"   asked again after an error: {refused}")
    ours, jedi = statistics.median(p["outline"]), statistics.median(p["jedi_outline"])
    print(
        f"   documentSymbol of rich/console.py ({p['console_lines']:,} lines), 10 calls: p50 {ours:.0f} ms, "
        f"max {max(p['outline']):.0f} ms (target <= 1,000); jedi's own, 3 warm calls: p50 {jedi:.0f} ms "
        f"({ours / jedi:.2f}x)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--parts", default="1234", help="which of the four parts to run, e.g. 4")
    arguments = parser.parse_args()
    anyio.run(main, arguments.rounds, arguments.parts)
