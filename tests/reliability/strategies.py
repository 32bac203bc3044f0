"""
Hypothesis strategies for hostile tool calls, built from each tool's advertised input schema.

`arguments_for(tool)` draws an arguments object for any tool: each property gets a value of
its schema's type most of the time (strings from the hostile pool, paths of every shape for the
tool's path fields) and a value of the wrong type otherwise; required properties are sometimes
missing and unknown ones sometimes added. A new tool is covered as soon as it is in
`default_tools()`. The one exception is a shell command: Bash runs whatever it is given by design and
is not confined to the roots, so its `command` comes from a list of harmless commands (which still
exercise exits, signals, cwd changes, floods, binary output, leftovers and timeouts).
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from tests.reliability.workspace import NAMES, SIBLING_NAMES

Args = dict[str, Any]

HOSTILE_TEXT: tuple[str, ...] = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\r\n",
    "\r",
    "\n\n\n",
    "\t",
    "\x1b[31mred\x1b[0m",
    "\x7f\x08\x0c",
    "\u202e",
    "\ufeff",
    "\u00e9",
    "e\u0301",
    "\U0001f600",
    "\ud800",
    "\udfff",
    "\udc80\udcff",
    "$1",
    "$&",
    "\\1",
    "\\g<0>",
    "%s%n",
    "--pre=sh",
    "--pre=./pre.sh",
    "--pre=pre.sh",
    "-f/etc/passwd",
    "--files",
    "-x",
    "--",
    "-",
    "*",
    "**/*",
    "**/**/**/*",
    "{a,b}",
    "[",
    "(",
    "(?",
    ".*",
    "%2e%2e%2f",
    "file:///etc/passwd",
    "~",
    "..",
    "/",
    "\\",
    "C:\\Windows\\win.ini",
    "\\\\server\\share",
    "NUL",
    "hello",
    "hello world",
    "line",
    "alpha",
    "\r\nbeta",
    "caf\u00e9",
    "line 17\n",
)

HUGE_TEXT: tuple[str, ...] = (
    "x" * 100_000,
    "\u00e9" * 40_000,
    "\n" * 50_000,
    "a/" * 2_000,
    "\x00" * 10_000,
)

HARMLESS_COMMANDS: tuple[str, ...] = (
    "true",
    "false",
    "exit 3",
    "echo hello",
    "pwd",
    "ls",
    "ls -la sub",
    "cat text.txt",
    "cd sub",
    "cd ..",
    "cd /",
    "cd link_dir_out",
    "cd link_dir_in",
    "echo out; echo err 1>&2",
    "printf 'no newline'",
    "printf '\\033[31mred\\r\\nbar\\r'",
    "head -c 3000 /dev/urandom",
    "yes | head -n 20000",
    "seq 1 40000",
    "sleep 0.05",
    "grep -r hello .",
    "grep nomatch text.txt",
    "test -f nope",
    "diff text.txt crlf.txt",
    "read x; echo got:$x",
    "cat",
    "kill -9 $$",
    "kill -TERM $$",
    "echo A && sleep 30 &",
    "sleep 30 & echo started",
    "exec 1>&-; echo closed",
    ": > scratch-out.txt",
    "echo appended >> scratch-out.txt",
    "env | wc -l",
    "for i in 1 2 3; do echo $i; done",
    "if then fi",
    "echo unterminated '",
)


@functools.cache  # strategies are immutable: built once, not on every draw
def hostile_text(*, huge: bool = True) -> st.SearchStrategy[str]:
    """Strings of every awkward kind: control characters, lone surrogates, escaped bytes, huge ones."""
    parts: list[st.SearchStrategy[str]] = [
        st.sampled_from(HOSTILE_TEXT),
        st.text(max_size=30),
        st.text(st.characters(min_codepoint=0, max_codepoint=0x1F), max_size=10),
        st.text(st.characters(categories=["Cs", "Co", "Cf", "Zs"]), min_size=1, max_size=6),
        st.binary(max_size=24).map(lambda b: b.decode("utf-8", "surrogateescape")),
    ]
    if huge:
        parts.append(st.sampled_from(HUGE_TEXT))
    base = st.one_of(*parts)
    return st.one_of(base, st.lists(base, min_size=2, max_size=4).map("".join))


@functools.cache
def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON value (the wrong-type pool)."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from([0, -1, 2**31, 2**63, -(2**63), 10**30]),
        st.floats(allow_nan=True, allow_infinity=True),
        hostile_text(huge=False),
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=max_leaves,
    )


@functools.cache
def paths() -> st.SearchStrategy[str]:
    """Paths of every shape: inside, outside, through links, relative, `..`, `~`, NUL, long, URL-ish.

    `{ROOT}`, `{OUT}` and `{TMP}` stand for the workspace's folders (`Layout.expand` fills them in).
    """
    root = "{ROOT}"
    out = "{OUT}"
    special = [
        "",
        " ",
        ".",
        "..",
        "/",
        "//",
        "~",
        "~/",
        "~/.ssh/id_rsa",
        "~/.bashrc",
        "~root/x",
        "~nosuchuser/x",
        "/etc/passwd",
        "/etc/shadow",
        "/proc/self/mem",
        "/proc/self/environ",
        "/proc/self/fd/0",
        "/proc/self/cwd/text.txt",
        f"/proc/self/root{root}/text.txt",
        "/dev/zero",
        "/dev/stdin",
        "/dev/null",
        root,
        root + "/",
        root + "//../outside/secret.txt",
        root + "/../outside/secret.txt",
        root + "/sub/../../outside/secret.txt",
        root + "/./text.txt",
        root + "/text.txt/",
        root + "/text.txt/.",
        "../outside/secret.txt",
        "./../outside",
        "../../../../../../etc/passwd",
        out,
        out + "/secret.txt",
        out + "/new.txt",
        f"file://{root}/text.txt",
        "file:///etc/passwd",
        "%2e%2e/outside/secret.txt",
        "..%2foutside%2fsecret.txt",
        "text.txt\x00.png",
        root + "/a\x00b",
        "a" * 300,
        root + "/" + "a" * 300 + "/f.txt",
        "/" + "x/" * 2_000,
        "q/" * 200 + "f",
        "\\..\\outside\\secret.txt",
        "C:\\Windows\\win.ini",
        "\\\\server\\share\\x",
        "text.txt:stream",
        "{TMP}/WS/text.txt",
        root + "\u202e/text.txt",
        root + "/unicode-\u00e9.txt",
        "\ud800/x",
        "text\udcff.txt",
    ]
    special += [f"{{TMP}}/{name}" for name in SIBLING_NAMES]
    special += [f"{{TMP}}/{name}/f.txt" for name in SIBLING_NAMES]
    names = st.sampled_from(NAMES)
    segment = st.one_of(
        names,
        st.sampled_from([".", "..", "", "...", " ", "sub", "new", "new.txt", "link_dir_out", "loop_a"]),
        hostile_text(huge=False),
    )
    prefix = st.sampled_from(["", root + "/", "./", "/", "~/", out + "/", "../"])
    suffix = st.sampled_from(["", "", "/", "/.", "//", "/.."])
    composed = st.builds(
        lambda p, segs, s: p + "/".join(segs) + s, prefix, st.lists(segment, min_size=1, max_size=5), suffix
    )
    return st.one_of(
        st.sampled_from(special), names, names.map(lambda n: f"{root}/{n}"), composed, hostile_text(huge=False)
    )


@functools.cache
def harmless_commands() -> st.SearchStrategy[str]:
    quoted = hostile_text().map(lambda s: f"printf '%s\\n' {shlex.quote(s)}")
    return st.one_of(st.sampled_from(HARMLESS_COMMANDS), quoted)


@functools.cache
def job_ids() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(1, 60).map(lambda n: f"bash_{n}"),
        st.sampled_from([" bash_1 ", "bash_999", "", "BASH_1", "bash_", "bash_-1"]),
        st.text(max_size=12),
    )


@functools.cache
def edit_strings() -> st.SearchStrategy[str]:
    """old_string candidates: text that occurs in the workspace's files, and hostile text."""
    present = ["hello", "hello world", "second line", "alpha\r\nbeta", "beta", "line 1\n", "line", "$1", "w" * 50, ""]
    return st.one_of(st.sampled_from(present), hostile_text())


EDITABLE: dict[str, tuple[str, ...]] = {
    "text.txt": ("hello", "second line", "world\nsecond", "third line\n"),
    "crlf.txt": ("alpha\r\nbeta", "alpha\nbeta", "beta", "gamma"),
    "mixed.txt": ("two", "one\r\ntwo", "three"),
    "bom.txt": ("with bom",),
    "latin1.txt": ("caf\u00e9", "cr\u00e8me"),
    "utf16.txt": ("sixteen",),
    "many.txt": ("line 17\n", "line 2999", "line 1"),
    "wide.txt": ("w" * 40,),
    "dollar.txt": ("$1", "\\1"),
    "sub/inner.py": ("return 1", "def f():"),
    "readonly.txt": ("read only",),
    "link_in": ("return 1",),
    "link_out": ("top secret",),
    "empty.txt": ("",),
    "new-file.txt": ("",),
}
"""Files of the workspace and text they hold when it is built, for edits that can succeed."""


def plausible_edit() -> st.SearchStrategy[list[tuple[str, Any]]]:
    """Read a file, then Edit text that is in it: the path most fuzzed edits never reach."""

    def pair(name: str) -> st.SearchStrategy[list[tuple[str, Any]]]:
        path = st.sampled_from([name, f"{{ROOT}}/{name}", f"./{name}"])
        edit = st.fixed_dictionaries(
            {"file_path": path, "old_string": st.sampled_from(EDITABLE[name]), "new_string": hostile_text()},
            optional={"replace_all": st.booleans()},
        )
        return edit.map(lambda args: [("Read", {"file_path": args["file_path"]}), ("Edit", args)])

    return st.sampled_from(sorted(EDITABLE)).flatmap(pair)


def plausible_write() -> st.SearchStrategy[list[tuple[str, Any]]]:
    """Read a file, then Write it whole."""
    name = st.sampled_from([*sorted(EDITABLE), "sub/new/deep.txt", "brand-new.txt"])
    return st.tuples(name, hostile_text()).map(
        lambda nc: [("Read", {"file_path": nc[0]}), ("Write", {"file_path": nc[0], "content": nc[1]})]
    )


def plausible_job(follow_up: str, field: str) -> st.SearchStrategy[list[tuple[str, Any]]]:
    """Start a background job, then ask BashOutput or KillShell about it (ids count up per session)."""
    start = st.fixed_dictionaries({"command": harmless_commands(), "run_in_background": st.just(True)})
    return st.tuples(start, job_ids(), st.one_of(st.none(), hostile_text(huge=False))).map(
        lambda sjf: [
            ("Bash", sjf[0]),
            (follow_up, {field: sjf[1]} if follow_up == "KillShell" else {field: sjf[1], "filter": sjf[2]}),
        ]
    )


def plausible_calls(tool_name: str) -> st.SearchStrategy[list[tuple[str, Any]]] | None:
    """Sequences that set up what `tool_name` needs to get past its state checks (None: nothing to set up)."""
    return {
        "Edit": plausible_edit,
        "Write": plausible_write,
        "BashOutput": lambda: plausible_job("BashOutput", "bash_id"),
        "KillShell": lambda: plausible_job("KillShell", "shell_id"),
    }.get(tool_name, lambda: None)()


def _schema_value(schema: Mapping[str, Any], text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    if "anyOf" in schema:
        return st.one_of(*(_schema_value(option, text) for option in schema["anyOf"]))
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "string":
        return text
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        edges = [v for v in (low, high) if v is not None]
        return st.one_of(
            st.integers(min_value=low, max_value=high),
            st.integers(-5, 5000),
            st.sampled_from([0, -1, 1, 2**31, 2**63, 10**30, *edges]),
        )
    if kind == "number":
        return st.floats()
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_schema_value(schema.get("items", {}), text), max_size=4)
    return json_values()


@functools.cache
def property_values(tool_name: str, field: str, path_fields: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """The right-typed pool for one field: paths for path fields, harmless commands for a shell command."""
    override: dict[tuple[str, str], Callable[[], st.SearchStrategy[str]]] = {
        ("Bash", "command"): harmless_commands,
        ("BashOutput", "bash_id"): job_ids,
        ("KillShell", "shell_id"): job_ids,
        ("Edit", "old_string"): edit_strings,
    }
    if (tool_name, field) in override:
        return override[(tool_name, field)]()
    if field in path_fields:
        return paths()
    return hostile_text()


_FIELDS: dict[str, tuple[list[str], set[str], dict[str, st.SearchStrategy[Any]]]] = {}


def _fields_of(tool: Any) -> tuple[list[str], set[str], dict[str, st.SearchStrategy[Any]]]:
    """The tool's fields, the required ones, and each one's well-typed strategy, made once per tool: made on
    every draw (the schema, then hypothesis validating new strategies) they were 3/4 of the fuzz tests' CPU."""
    known = _FIELDS.get(tool.name)
    if known is None:
        schema = tool.input_schema()
        props: dict[str, Any] = schema.get("properties", {})
        typed = {}
        for field, sub in props.items():
            text = property_values(tool.name, field, tool.path_fields)
            typed[field] = _schema_value(sub, text) if sub.get("type") != "string" else text
        known = _FIELDS[tool.name] = (list(props), set(schema.get("required", [])), typed)
    return known


@st.composite
def arguments_for(draw: st.DrawFn, tool: Any) -> Args | None:
    """An arguments object for `tool`: mostly well-typed, sometimes wrong, missing or extra."""
    shape = draw(st.integers(0, 59))
    if shape == 0:
        return None
    if shape == 1:
        return {}
    props, required, typed = _fields_of(tool)
    args: Args = {}
    for field in props:
        keep = draw(st.integers(0, 29))
        if field in required and keep == 0 or field not in required and keep < 15:
            continue
        if (tool.name, field) == ("Bash", "command") or draw(st.integers(0, 24)) > 0:
            value = draw(typed[field])
        else:
            value = draw(json_values())
        args[field] = value
    if draw(st.integers(0, 19)) == 0:
        args[draw(st.sampled_from(["extra", "file_path ", "FILE_PATH", "", "__proto__"]))] = draw(json_values())
    return args


def unknown_tool_names() -> st.SearchStrategy[str]:
    """Names no tool has."""
    return st.one_of(st.sampled_from(["read", "READ", "Read ", "", "Bash\x00", "tools/call", "Edit\n"]), st.text())
