"""The code `dataclasses` generates, compiled once per start snapshot key (issue 38: the time to the first result).

A start with a snapshot plan gives `dataclasses` a stand-in for `exec` that takes each text's code from the file
kept beside the snapshot and compiles only the texts not there; the start-up then writes back what it compiled.
A class made from the kept code is the class made from its text; a file of another key, one anyone else could
write, or a corrupt one is not used; the builtin is back once the start-up is done; the cache folder keeps as
many codes as snapshots; and once the code is kept, a start compiles no text at all.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mcp_codetools.protocol import fast_start
from mcp_codetools.protocol.generated_code import GeneratedCode, code_path
from tests.protocol.snapshot_runs import handshake, run

CLASS_SOURCE = textwrap.dedent(
    """
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: str = "y"
        tags: list[str] = dataclasses.field(default_factory=list, hash=False)

    @dataclasses.dataclass(order=True)
    class Mutable:
        value: float
    """
)


def _classes() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(CLASS_SOURCE, namespace)
    return namespace


def _made_with(generated: GeneratedCode) -> dict[str, Any]:
    generated.install()
    try:
        return _classes()
    finally:
        generated.remove()


def test_a_class_made_from_the_kept_code_is_the_class_made_from_its_text(tmp_path: Path) -> None:
    path = str(tmp_path / "k.code")
    first = GeneratedCode(path, "k")
    _made_with(first)
    first.save()
    assert first.loaded == 0 and first.compiled > 0

    second = GeneratedCode(path, "k")
    kept = _made_with(second)
    assert second.loaded == first.compiled and second.compiled == 0, "every text came from the file"
    plain = _classes()
    for name in ("Point", "Mutable"):
        made, reference = kept[name], plain[name]
        assert inspect.signature(made) == inspect.signature(reference)
        assert made.__init__.__annotations__ == reference.__init__.__annotations__  # types, not strings
    point = kept["Point"](1)
    assert point == kept["Point"](1, "y") and repr(point) == "Point(x=1, y='y', tags=[])"
    assert hash(point) == hash(kept["Point"](1))
    assert point.tags is not kept["Point"](1).tags, "a default factory still runs per instance"
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    assert kept["Mutable"](1.0) < kept["Mutable"](2.0)


def test_the_builtin_is_back_once_the_start_up_is_done(tmp_path: Path) -> None:
    generated = GeneratedCode(str(tmp_path / "k.code"), "k")
    generated.install()
    assert vars(dataclasses)["exec"] == generated.exec
    _classes()
    generated.finish()
    assert "exec" not in vars(dataclasses)
    assert Path(generated.path).exists()


def test_the_stand_in_runs_text_and_code_as_the_builtin_does(tmp_path: Path) -> None:
    generated = GeneratedCode(str(tmp_path / "k.code"), "k")
    namespace: dict[str, Any] = {}
    generated.exec("from __future__ import annotations\ndef f(a: int) -> None: pass", namespace)
    generated.exec("def g(a: int) -> None: pass", namespace)
    generated.exec(compile("h = 3", "<string>", "exec"), namespace)
    assert namespace["f"].__annotations__ == {"a": "int", "return": "None"}
    assert namespace["g"].__annotations__ == {"a": int, "return": None}, "no flag of the stand-in's own module"
    assert namespace["h"] == 3
    with pytest.raises(TypeError, match="cannot use a closure"):  # the builtin's own check: the option passed on
        generated.exec("k = 4", namespace, closure=(1,))


@pytest.mark.parametrize("kind", ["another key", "writable by others", "corrupt", "a folder"])
def test_a_file_of_another_key_or_that_others_could_write_or_corrupt_is_not_used(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "k.code"
    _made_with(writer := GeneratedCode(str(path), "k"))
    writer.save()
    key = "k"
    if kind == "another key":
        key = "other"
    elif kind == "writable by others":
        path.chmod(0o666)
    elif kind == "corrupt":
        path.write_bytes(path.read_bytes()[:100])
    else:
        path.unlink()
        path.mkdir()
    reader = GeneratedCode(str(path), key)
    _made_with(reader)
    assert reader.loaded == 0 and reader.compiled == writer.compiled


def test_the_cache_folder_keeps_as_many_codes_as_snapshots(tmp_path: Path) -> None:
    folder = tmp_path / "start"
    folder.mkdir()
    count = fast_start.KEPT_SNAPSHOTS + 3
    for index in range(count):
        for suffix in (".json", ".code"):
            path = folder / f"{index:064x}{suffix}"
            path.write_bytes(b"{}")
            os.utime(path, ns=(index * 10**9, index * 10**9))
    fast_start._prune(str(folder), keep=str(folder / f"{count - 1:064x}.json"))
    left = sorted(path.name for path in folder.iterdir())
    assert len(left) == 2 * fast_start.KEPT_SNAPSHOTS
    assert f"{count - 1:064x}.code" in left and f"{0:064x}.code" not in left


def test_a_start_with_a_key_whose_code_is_kept_compiles_no_text(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n", encoding="utf-8")
    read = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "Read", "arguments": {"file_path": str(root / "a.txt")}},
    }
    lines = [*handshake("2025-11-25"), read]
    assert run(tmp_path, root, lines).from_snapshot == 0  # the first start records the snapshot and the code
    [snapshot] = (tmp_path / "cache" / "mcp-codetools" / "start").glob("*.json")
    code = Path(code_path(str(snapshot)))
    assert code.exists()
    assert run(tmp_path, root, lines).from_snapshot == 2  # adds what only the early path creates
    written = code.stat().st_mtime_ns
    os.utime(code, ns=(written - 10**9, written - 10**9))  # a rewrite could not keep this time
    third = run(tmp_path, root, lines)
    assert third.returncode == 0 and third.from_snapshot == 2 and third.early == 1
    assert "two" in third.answers[3]["result"]["content"][0]["text"]
    assert code.stat().st_mtime_ns == written - 10**9, "a start compiled a text the ones before it had kept"
