"""Which files archivers, block copiers and downloaders read and write: a part of the operand table.

`tar`, `unzip`, `zip`, `7z`, `cpio`, `dd`, `curl` and `wget`, as `commands.operands` dispatches them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_codetools.commands.filesets import Files, option_letters, option_values, url_name


def dd(name: str, args: list[str], files: Files) -> None:
    """`dd if=… of=…`."""
    for arg in args:
        key, eq, value = arg.partition("=")
        if eq and key == "if":
            files.reads.append(value)
        elif eq and key == "of":
            files.writes.append(value)


def tar(name: str, args: list[str], files: Files) -> None:
    """`tar`: the archive, and what extracting writes under `-C`."""
    folder = ""
    archive: str | None = None
    mode = ""
    i = 0
    operands: list[str] = []
    first = True
    while i < len(args):
        arg = args[i]
        if first and not arg.startswith("-"):
            arg = "-" + arg  # `tar xzf a.tgz`: the old form, options without a dash
        first = False
        if arg in ("-C", "--directory") and i + 1 < len(args):
            folder = args[i + 1]
            i += 2
            continue
        if arg.startswith("--directory="):
            folder = arg.partition("=")[2]
        elif arg.startswith("--file="):
            archive = arg.partition("=")[2]
        elif arg in ("--extract", "--get", "--create", "--append", "--update", "--list"):
            mode = {"--extract": "x", "--get": "x", "--create": "c", "--append": "r", "--update": "u"}.get(arg, "t")
        elif arg.startswith("-") and not arg.startswith("--"):
            for pos, letter in enumerate(arg[1:], start=1):
                if letter in "xcrutA":
                    mode = mode or letter
                elif letter == "f":
                    archive = arg[pos + 1 :] or (args[i + 1] if i + 1 < len(args) else None)
                    if not arg[pos + 1 :]:
                        i += 1
                    break
                elif letter == "C":
                    folder = arg[pos + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                    if not arg[pos + 1 :]:
                        i += 1
                    break
        elif not arg.startswith("-"):
            operands.append(arg)
        i += 1

    def join(path: str) -> str:
        return path if path.startswith(("/", "~")) or not folder else f"{folder}/{path}"

    if mode == "x":
        files.unknown_writes.append(folder)
        if archive:
            files.reads.append(archive)
        files.writes.extend(join(op) for op in operands)
    elif mode in ("c", "r", "u", "A"):
        files.trees.extend(join(op) for op in operands)
        if archive and archive != "-":
            files.writes.append(archive)
    elif archive:
        files.reads.append(archive)


def unzip(name: str, args: list[str], files: Files) -> None:
    """`unzip`: the archive read, its files written under `-d`."""
    operands, options = option_values(args, frozenset({"-d", "-x", "-P"}))
    folder = next((value for key, value in options if key == "-d"), "")
    if not {"-l", "-t", "-v", "-p", "-Z"} & option_letters(args):
        files.unknown_writes.append(folder)
    files.reads.extend(operands[:1])


def zip_(name: str, args: list[str], files: Files) -> None:
    """`zip ARCHIVE FILES`."""
    operands, _ = option_values(args, frozenset({"-b", "-n", "-t", "-tt", "-x", "-i", "-P", "-O", "--out"}))
    if operands:
        files.writes.append(operands[0])
        (files.trees if {"-r", "-R"} & option_letters(args) else files.reads).extend(operands[1:])


@dataclass(frozen=True, slots=True)
class Downloader:
    """One downloader's options that name a file or folder.

    One table per program: the same letter means another thing in the other (`curl -o` is the download,
    `wget -o` its log; `curl -c` writes cookies, `wget -c` continues).
    """

    writes: frozenset[str]
    reads: frozenset[str]
    folders: frozenset[str]
    """Options naming the folder it saves into (the files' names come from the URLs)."""
    data: frozenset[str] = frozenset()
    """Options whose value reads a file when it starts with `@` (`-d @body.json`)."""
    named_by_url: frozenset[str] = frozenset()
    """Flags that save to a file named after the URL (curl's `-O`)."""
    inert: frozenset[str] = frozenset()
    """Options whose value is a path that only selects or sockets, not a file read or written here."""

    @property
    def values(self) -> frozenset[str]:
        """Every option that takes a value."""
        return self.writes | self.reads | self.folders | self.data | self.inert


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


DOWNLOADERS: dict[str, Downloader] = {
    "curl": Downloader(
        writes=_words(
            "-o --output -c --cookie-jar -D --dump-header --trace --trace-ascii --stderr --libcurl --etag-save "
            "--hsts --alt-svc"
        ),
        reads=_words(
            "-T --upload-file -K --config -b --cookie --etag-compare --netrc-file --cacert --crlfile --egd-file "
            "--random-file --proxy-cacert --proxy-crlfile --key --cert --proxy-key --proxy-cert --pinnedpubkey "
            "--hsts --alt-svc"
        ),
        folders=_words("--output-dir --capath --proxy-capath"),
        data=_words("-d --data --data-binary --data-urlencode --json -F --form"),
        named_by_url=_words("-O --remote-name --remote-name-all"),
        inert=_words("--abstract-unix-socket --unix-socket --request-target"),
    ),
    "wget": Downloader(
        writes=_words(
            "-O --output-document -o --output-file -a --append-output --rejected-log --save-cookies --warc-file "
            "--hsts-file"
        ),
        reads=_words(
            "-i --input-file --config --load-cookies --post-file --body-file --certificate --private-key "
            "--ca-certificate --crl-file --pinnedpubkey --warc-dedup --hsts-file"
        ),
        folders=_words("-P --directory-prefix --ca-directory --warc-tempdir"),
    ),
}
"""curl's and wget's entries: every option `--help` lists with a file or folder for its value
(tests/test_program_options.py)."""


def curl(name: str, args: list[str], files: Files) -> None:
    """`curl`/`wget`: what its options name (its entry in `DOWNLOADERS`), and the files named after URLs."""
    entry = DOWNLOADERS[name]
    operands, options = option_values(args, entry.values)
    for key, value in options:
        if key in entry.writes:
            files.writes.append(value)
        if key in entry.reads:
            files.reads.append(value)
        if key in entry.folders:
            files.unknown_writes.append(value)
        if key in entry.data and "@" in value:
            files.reads.append(value.split("@", 1)[1].split(";", 1)[0])
    saves_by_url = (
        bool(option_letters(args) & entry.named_by_url)
        if name == "curl"
        else not any(key in ("-O", "--output-document") for key, _ in options)
    )
    if saves_by_url:  # the file is named after the URL's last part
        files.writes.extend(url_name(url) for url in operands if "://" in url)


def seven_zip(name: str, args: list[str], files: Files) -> None:
    """`7z x|a …`."""
    command = next((a for a in args if not a.startswith("-")), "")
    operands = [a for a in args if not a.startswith("-")][1:]
    if command in ("x", "e"):
        out = next((a[2:] for a in args if a.startswith("-o")), "")
        files.unknown_writes.append(out)
        files.reads.extend(operands[:1])
    elif command in ("a", "u", "d", "rn") and operands:
        files.writes.append(operands[0])
        files.trees.extend(operands[1:])
    else:
        files.reads.extend(operands[:1])


def cpio(name: str, args: list[str], files: Files) -> None:
    """`cpio -i|-o|-p`."""
    operands, options = option_values(
        args, frozenset({"-D", "--directory", "-F", "--file", "-E", "-H", "-R", "-I", "-O"})
    )
    folder = next((value for key, value in options if key in ("-D", "--directory")), "")
    letters = option_letters(args)
    if letters & {"-i", "--extract"}:
        files.unknown_writes.append(folder)
    elif letters & {"-p", "--pass-through"}:
        files.unknown_writes.extend(operands[:1] or [folder])
    files.writes.extend(value for key, value in options if key in ("-O",))
    files.reads.extend(value for key, value in options if key in ("-I", "-E"))
