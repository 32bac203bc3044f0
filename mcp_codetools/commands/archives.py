"""Which files archivers, block copiers and downloaders read and write: a part of the operand table.

`tar`, `unzip`, `zip`, `7z`, `cpio`, `dd`, `curl` and `wget`, as `commands.operands` dispatches them.
"""

from __future__ import annotations

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


_CURL_VALUES = frozenset(
    {
        "-o",
        "--output",
        "-O",
        "--output-document",
        "-P",
        "--directory-prefix",
        "--output-dir",
        "-T",
        "--upload-file",
        "-d",
        "--data",
        "-F",
        "--form",
        "--data-binary",
        "-K",
        "--config",
        "-b",
        "--cookie",
        "-c",
        "--cookie-jar",
        "-D",
        "--dump-header",
        "--post-file",
        "--body-file",
    }
)


def curl(name: str, args: list[str], files: Files) -> None:
    """`curl`/`wget`: uploads and config read, downloads written."""
    # curl's -O names no file (the URL's last part is the name); wget's -O does
    _, options = option_values(args, _CURL_VALUES - {"-O"} if name == "curl" else _CURL_VALUES)
    letters = option_letters(args)
    for key, value in options:
        if key in ("-o", "--output", "--output-document", "-c", "--cookie-jar", "-D", "--dump-header") or (
            name == "wget" and key == "-O"
        ):
            files.writes.append(value)
        elif key in ("-T", "--upload-file", "-K", "--config", "-b", "--cookie", "--post-file", "--body-file"):
            files.reads.append(value)
        elif key in ("-d", "--data", "--data-binary", "-F", "--form") and "@" in value:
            files.reads.append(value.split("@", 1)[1].split(";", 1)[0])
        elif key in ("-P", "--directory-prefix", "--output-dir"):
            files.unknown_writes.append(value)
    if (name == "curl" and ("-O" in letters or "--remote-name" in letters or "--remote-name-all" in letters)) or (
        name == "wget" and not any(key in ("-O", "--output-document") for key, _ in options)
    ):
        operands, _ = option_values(args)  # the file is named after the URL's last part
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
