"""Which files a recognised command reads and writes, from its words.

Read and Edit rules hold for Bash through this table: `cat .env` reads `.env`, `cp -t src x` writes
`src/x`, `grep -r k .` reads everything under `.`, `tar -C src -x` writes what the archive holds under
`src` (not known: an `unknown` write under `src`). Operands are read generously (a word that is an option's
value may count as a path): a path counted in excess can only refuse more, never less.

A command not in the table is not known to read or write files; its plain words are still checked as
reads (`python3 x.py .env`), except for commands known to only name paths (`echo .env`, `ls`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_codetools.commands import archives, git_files, programs, sed
from mcp_codetools.commands.checks import given, long_option
from mcp_codetools.commands.diffnames import diff_names, stripped
from mcp_codetools.commands.filesets import Files, joined, literal_folder, option_letters, option_values, strip_level

_ALL_READ = frozenset(
    """
    cat tac head tail less more most nl paste cut wc od xxd hexdump strings base64 base32 basenc diff diff3 sdiff
    cmp file md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum fold fmt rev column expand
    unexpand comm join pr iconv tsort shuf source . bat batcat xz xzcat zcat bzcat gzip gunzip bzip2 bunzip2
    zless zmore lz4 zstd unzstd md5 shasum openssl gpg sort uniq split csplit csvlook jless
    """.split()
)
"""Every operand is a file read (option values included, which can only refuse more)."""
_PATTERN_FIRST: dict[str, frozenset[str]] = {
    # name: options that give the pattern or program (then no operand is the pattern)
    **dict.fromkeys(
        ("grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack"), frozenset({"-e", "-f", "--regexp", "--file"})
    ),
    **dict.fromkeys(("sed", "gsed"), frozenset({"-e", "-f", "--expression", "--file"})),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), frozenset({"-f", "--file", "-E", "--exec"})),
    **dict.fromkeys(("jq", "yq", "gojq"), frozenset({"-f", "--from-file"})),
    "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}),
}
"""The first operand is a pattern or a program; the others are files read."""
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "grep": frozenset("-e -m -A -B -C -d -D --regexp --max-count --label --color --colour --binary-files".split()),
    "rg": frozenset(
        "-e -m -A -B -C -g -t -T -j -M -E -d -r --glob --iglob --type --type-not --type-add "
        "--max-depth --threads --max-columns --encoding --sort --sortr --colors --color --replace "
        "--engine --max-filesize --context-separator --path-separator --pre --pre-glob".split()
    ),
    "sed": frozenset({"-e", "--expression", "-l", "--line-length"}),
    "awk": frozenset({"-v", "--assign", "-F", "--field-separator"}),
    "jq": frozenset({"--arg", "--argjson", "--indent", "--tab"}),
    "perl": frozenset({"-e", "-E", "-M", "-m", "-I", "-i"}),
}
_RECURSIVE_ALWAYS = frozenset({"rg", "ag", "ack"})
_NAMES_ONLY = frozenset(
    """
    echo printf test [ true false ls stat cd pushd popd which type command realpath readlink basename dirname
    export unset local declare typeset readonly alias unalias trap exit return set shopt hash wait kill sleep
    seq date pwd env printenv id whoami hostname uname true mkdir rmdir touch rm chmod chown chgrp ln mv cp
    install tee truncate shred dd find fd du df tree
    """.split()
)
"""Commands that only name paths, or whose file operands the table below already places."""
_WRITES_ALL = frozenset(
    {
        "tee",
        "rm",
        "rmdir",
        "touch",
        "mkdir",
        "truncate",
        "shred",
        "mkfifo",
        "mknod",
        "chmod",
        "chown",
        "chgrp",
        "chattr",
        "setfacl",
        "unlink",
        "ed",
        "ex",
        "vi",
        "vim",
        "nvim",
        "nano",
        "emacs",
        "pico",
        "joe",
        "mcedit",
        "sponge",
    }
)
"""Every operand may be written (modes and owners counted too, which can only refuse more)."""
_COPIERS = frozenset({"cp", "mv", "ln", "install", "scp", "rsync", "link"})
_COPY_VALUES = frozenset(
    {
        "-t",
        "--target-directory",
        "-S",
        "--suffix",
        "-m",
        "--mode",
        "-o",
        "--owner",
        "-g",
        "--group",
        "-e",
        "--rsh",
        "-P",
        "-i",
        "-F",
        "-l",
        "-c",
    }
)
_IN_PLACE = re.compile(r"^-[a-zA-Z0-9]*i")
_COMPRESSORS = {
    "gzip": ".gz",
    "gunzip": ".gz",
    "bzip2": ".bz2",
    "bunzip2": ".bz2",
    "xz": ".xz",
    "zstd": ".zst",
    "unzstd": ".zst",
    "lz4": ".lz4",
}
_SPLIT_VALUES = {"-l", "-b", "-C", "-n", "-a", "-t", "-f", "--prefix", "--suffix-length", "--additional-suffix"}
_HIDDEN_TOO = frozenset({"--hidden", "-.", "-uu", "-uuu", "--no-ignore-dot"})


def learn(
    words: Sequence[str],
    known: Sequence[bool],
    files: Files,
    globbed: frozenset[int] = frozenset(),
    *,
    appended: bool = False,
    stdin: str | None = None,
) -> None:
    """Add what the command `words` reads and writes to `files` (paths relative to its folder).

    An operand whose text is not known (an expansion) is an unknown read or write under its literal folder;
    one with a glob (`globbed`: indices into `words`) is a pattern matched on disk later. `appended`: more
    operands follow that are not known (xargs adds its input). `stdin`: the command's input when it is text
    the command line holds (a here-document), "" when it is a file or nothing, None when it is not known.
    """
    if not words:
        return
    name = words[0] if known[0] else ""  # a name not known: read like a program not in the table
    args = list(words[1:])
    writer = name in _WRITES_ALL or name in _COPIERS or name in ("sed", "perl", "dd", "tar", "ruby")
    for i in sorted(globbed):
        if 0 < i < len(words) and known[i] and not words[i].startswith("-"):
            if name not in _NAMES_ONLY or writer:
                files.glob_reads.append(words[i])
            if writer:
                files.glob_writes.append(words[i])
    unknown = {i - 1 for i, k in enumerate(known) if i > 0 and (not k or i in globbed)}
    if unknown:
        for i in sorted(unknown):
            if i + 1 in globbed:
                continue
            folder = literal_folder(args[i])
            files.unknown_reads.append(folder)
            if writer:
                files.unknown_writes.append(folder)
        args = [a for i, a in enumerate(args) if i not in unknown]
    if appended and name not in _NAMES_ONLY:
        files.unknown_reads.append(None)  # `xargs cat`: the input names the files
    if appended and writer:
        files.unknown_writes.append(None)
    program = programs.PROGRAMS.get(name)
    if program is not None and program.writes:  # `sort -o F`, `sort --outp=F`, `strace -o F cmd`
        files.writes.extend(value for _, value in given(args, program.writes, program.values) if value)
    if program is not None and program.output_operand:  # `uniq IN OUT`: OUT is written, not read
        args = _written_operand(args, program, files)
    fed = _FED_HANDLERS.get(name)
    handler = _HANDLERS.get(name)
    if fed is not None:
        fed(name, args, files, stdin)
    elif handler is not None:
        handler(name, args, files)
    elif name in _ALL_READ:
        _all_read(name, args, files)
    elif name in _PATTERN_FIRST:
        _pattern_first(name, args, files)
    elif name in _WRITES_ALL:
        operands, _ = option_values(args)
        files.writes.extend(operands)
        files.reads.extend(operands)
    elif name in _COPIERS:
        _copy(name, args, files)
    elif name not in _NAMES_ONLY:
        operands, options = option_values(args)
        files.reads.extend(operands)
        files.reads.extend(value for _, value in options)


def _written_operand(args: list[str], program: programs.Program, files: Files) -> list[str]:
    """Record the operand the program writes (its `output_operand`); the words without it, for the reads."""
    operands, _ = option_values(args, frozenset(program.takes_value))
    place = program.output_operand - 1
    if len(operands) <= place:
        return args
    written = operands[place]
    files.writes.append(written)
    if args.count(written) != operands.count(written):
        return args  # an option's value is the same word: it stays a read too (more is asked, never less)
    nth = operands[:place].count(written)
    at = [i for i, word in enumerate(args) if word == written][nth]
    return [*args[:at], *args[at + 1 :]]


def _all_read(name: str, args: list[str], files: Files) -> None:
    # sort's output is in its entry of `programs.PROGRAMS` (with the letters after which `o` is a value: `-ko1`)
    own = set() if name in programs.PROGRAMS else {"-o", "--output"}
    values = own | (_SPLIT_VALUES if name in ("split", "csplit") else set())
    operands, options = option_values(args, frozenset(values))
    outputs = [value for key, value in options if key in ("-o", "--output")]
    if name in ("split", "csplit", "iconv", "shuf"):
        files.writes.extend(outputs)
        if name in ("split", "csplit"):  # files named by a prefix (`xaa`, `xab`, …)
            prefix = next((value for key, value in options if key in ("-f", "--prefix")), None)
            files.writes.append(prefix or (operands.pop(1) if len(operands) > 1 else "x" if name == "split" else "xx"))
    suffix = _COMPRESSORS.get(name)
    if suffix is not None and not (option_letters(args) & {"-c", "--stdout", "-t", "--test", "-l", "--list"}):
        for op in operands:  # the file is replaced by the (de)compressed one beside it
            files.writes.extend((op, op + suffix, op.rsplit(".", 1)[0]))
    if name in ("diff", "diff3") and option_letters(args) & {"-r", "--recursive"}:
        files.trees.extend(operands)
    files.reads.extend(operands)
    files.reads.extend(value for key, value in options if key not in ("-o", "--output"))


def _pattern_first(name: str, args: list[str], files: Files) -> None:
    family = "grep" if name in ("egrep", "fgrep", "zgrep", "ag", "ack") else name
    family = {"gsed": "sed", "gawk": "awk", "mawk": "awk", "nawk": "awk", "yq": "jq", "gojq": "jq"}.get(family, family)
    giving = _PATTERN_FIRST[name]
    values = _VALUE_OPTIONS.get(family, frozenset()) | giving
    operands, options = option_values(args, values)
    if not any(key in giving for key, _ in options) and operands:
        operands = operands[1:]  # the pattern, script or program
    files.reads.extend(value for key, value in options if key in ("-f", "--file", "--from-file"))
    letters = option_letters(args)
    if family == "awk" and any(
        key in ("-i", "--include") for key, _ in option_values(args, frozenset({"-i", "--include"}))[1]
    ):
        files.writes.extend(operands)  # `gawk -i inplace`: an included library may rewrite the files
    if family == "sed":
        done = sed.effects(args)
        if done is None:  # a script in a file, or one sed's reader cannot place: it may write anything
            files.unknown_writes.append(None)
        else:
            files.writes.extend(done.writes)
            files.reads.extend(done.reads)
    if family in ("sed", "perl", "ruby") and (
        any(long_option(a, ("--in-place",)) for a in args)
        or any(_IN_PLACE.match(a) for a in args if not a.startswith("--"))
    ):
        files.writes.extend(operands)
    recursive = (
        name in _RECURSIVE_ALWAYS
        or (family == "grep" and bool(letters & {"-r", "-R", "--recursive", "--dereference-recursive"}))
        or ("-d", "recurse") in options
        or ("--directories", "recurse") in options
    )
    if family == "rg" and "--files" in letters:
        recursive = True
    if recursive and name in ("rg", "ag") and not _finds_hidden(args):
        files.visible_trees.extend(operands or ["."])  # rg and ag skip hidden names unless told
    elif recursive:
        files.trees.extend(operands or ["."])
    else:
        files.reads.extend(operands)


def _finds_hidden(args: list[str]) -> bool:
    short_u = sum(a.count("u") for a in args if a.startswith("-") and not a.startswith("--"))
    return short_u >= 2 or any(a in _HIDDEN_TOO or (a.startswith("-") and "." in a[1:2]) for a in args)


def _copy(name: str, args: list[str], files: Files) -> None:
    operands, options = option_values(args, _COPY_VALUES)
    target_dirs = [value for key, value in options if key in ("-t", "--target-directory")]
    letters = option_letters(args)
    if name == "install" and ("-d" in letters or "--directory" in letters):
        files.writes.extend(operands)
        return
    if name in ("scp", "rsync"):
        operands = [op for op in operands if ":" not in op.split("/", 1)[0]]  # host:path is not here
    sources = operands if target_dirs else operands[:-1]
    destinations = target_dirs or operands[-1:]
    if name in ("ln", "link") and len(operands) == 1 and not target_dirs:
        sources, destinations = operands, ["."]  # `ln -s ../src`: a link named after its target, here
    if name in ("ln", "link"):
        _linked(sources, destinations, symbolic=bool(letters & {"-s", "--symbolic"}), files=files)
    recursive = name in ("rsync", "scp") or bool(letters & {"-r", "-R", "-a", "--recursive", "--archive"})
    (files.trees if recursive else files.reads).extend(sources)
    if name == "mv":
        files.writes.extend(sources)  # moved away: the source changes too
    for dest in destinations:
        files.writes.append(dest)
        files.writes.extend(f"{dest.rstrip('/')}/{src.rstrip('/').rsplit('/', 1)[-1]}" for src in sources)
        if recursive:
            files.unknown_writes.append(dest)


def _linked(sources: list[str], destinations: list[str], *, symbolic: bool, files: Files) -> None:
    """A link is another name for its target: writing through it writes the target (and, for a folder, under it).

    A symbolic link's target is relative to the link's folder, which is the destination or the folder it is in.
    """
    for src in sources:
        targets = [src]
        if symbolic and not src.startswith(("/", "~")):
            for dest in destinations:
                targets.extend(f"{folder}/{src}" for folder in (dest.rstrip("/"), dest.rsplit("/", 1)[0]) if folder)
                targets.extend([src] if "/" not in dest.rstrip("/") else [])
        for target in dict.fromkeys(targets):
            files.writes.append(target)
            files.unknown_writes.append(target)


def _patch(name: str, args: list[str], files: Files, stdin: str | None) -> None:
    operands, options = option_values(
        args,
        frozenset(
            {"-d", "--directory", "-i", "--input", "-o", "--output", "-p", "--strip", "-B", "--prefix", "-r",
             "--reject-file", "-z", "--suffix", "-D", "--ifdef", "-F", "--fuzz", "-V", "--version-control", "-Y",
             "--basename-prefix"}
        ),
    )  # fmt: skip
    folder = next((value for key, value in options if key in ("-d", "--directory")), "")
    letters = option_letters(args)
    source = next((value for key, value in options if key in ("-i", "--input")), None)
    if source is not None:
        files.reads.append(source)
    files.reads.extend(operands[1:])
    if {"--dry-run", "-C", "--check"} & letters:
        return
    files.writes.extend(joined(folder, op) for op in operands[:1])
    files.writes.extend(value for key, value in options if key in ("-o", "--output", "-r", "--reject-file"))
    for key, value in options:
        if key in ("-B", "--prefix", "-Y", "--basename-prefix"):
            files.unknown_writes.append(literal_folder(value + "x"))  # backups named by a prefix
    names = None
    if source is None and len(operands) < 2 and stdin and not {"-e", "--ed", "-n", "--normal"} & letters:
        names = diff_names(stdin)
    if names is None:  # the diff is a file (it may change before patch runs) or not known
        files.unknown_writes.append(folder)
        return
    strip = strip_level(options)
    prefixed, top = names
    for target in dict.fromkeys([*(c for n in prefixed for c in stripped(n, strip)), *top]):
        files.writes.extend(joined(folder, t) for t in (target, target + ".orig", target + ".rej"))


def _find(name: str, args: list[str], files: Files) -> None:
    """`find src -delete` removes what it finds under `src`; `-fprint FILE` writes FILE."""
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P", "-D", "-O") or (i < len(args) and args[i][:2] == "-O"):
        i += 2 if args[i] == "-D" else 1
    starts: list[str] = []
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!", ","):
        starts.append(args[i])
        i += 1
    if programs.FIND_DELETES in args[i:]:
        files.unknown_writes.extend(starts or ["."])
    for key, value in zip(args[i:], args[i + 1 :], strict=False):
        if key in programs.FIND_WRITES:
            files.writes.append(value)


def _ssh_keygen(name: str, args: list[str], files: Files) -> None:
    _, options = option_values(
        args, frozenset({"-f", "-t", "-b", "-C", "-N", "-P", "-a", "-m", "-n", "-I", "-V", "-O"})
    )
    for key, value in options:
        if key == "-f":
            files.writes.extend((value, value + ".pub"))


def _mktemp(name: str, args: list[str], files: Files) -> None:
    operands, options = option_values(args, frozenset({"-p", "--tmpdir", "--suffix"}))
    folder = next((value for key, value in options if key in ("-p", "--tmpdir") and value), None)
    for template in operands[:1]:
        where = template.rsplit("/", 1)[0] if "/" in template else ""
        files.unknown_writes.append(f"{folder}/{where}".rstrip("/") if folder else where or "")
    if not operands and folder:
        files.unknown_writes.append(folder)


def _ss(name: str, args: list[str], files: Files) -> None:
    """The filter file it reads (what it writes is in its entry of `programs.PROGRAMS`)."""
    _, options = option_values(args, frozenset({"-D", "--diag", "-F", "--filter"}))
    files.reads.extend(value for key, value in options if key in ("-F", "--filter"))


def _script(name: str, args: list[str], files: Files) -> None:
    """Its files are in its entry of `programs.PROGRAMS`; with no typescript operand it writes `typescript`."""
    operands, _ = option_values(args, frozenset(programs.PROGRAMS[name].takes_value))
    if not operands:
        files.writes.append("typescript")


def _shell(name: str, args: list[str], files: Files) -> None:
    operands, _ = option_values(args, frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}))
    if not any(a.startswith("-") and "c" in a[1:] and not a.startswith("--") for a in args):
        files.reads.extend(operands[:1])  # the script it runs


def _names_only(name: str, args: list[str], files: Files) -> None:
    """Its operands are names, not files it opens (`tree src`, `time -f FORMAT cmd`); its writes are in its entry."""


_FED_HANDLERS = {"patch": _patch, "git": git_files.learn}
"""Handlers that read the command's input (a diff in a here-document)."""
_HANDLERS = {
    "dd": archives.dd,
    "tar": archives.tar,
    "bsdtar": archives.tar,
    "gtar": archives.tar,
    "unzip": archives.unzip,
    "zip": archives.zip_,
    "curl": archives.curl,
    "wget": archives.curl,
    "ss": _ss,
    "tree": _names_only,
    "script": _script,
    "time": _names_only,
    "find": _find,
    "7z": archives.seven_zip,
    "7za": archives.seven_zip,
    "7zr": archives.seven_zip,
    "cpio": archives.cpio,
    "ssh-keygen": _ssh_keygen,
    "mktemp": _mktemp,
    **dict.fromkeys(("bash", "sh", "zsh", "dash", "ksh", "fish"), _shell),
}

KNOWN = frozenset(
    {*_ALL_READ, *_PATTERN_FIRST, *_NAMES_ONLY, *_WRITES_ALL, *_COPIERS, *_FED_HANDLERS, *_HANDLERS, *_COMPRESSORS}
)
"""Programs whose files this table places: a wrapper rule need not guess what they run."""
