"""The Grep corpus: real source distributions from PyPI and npm, downloaded once and extracted.

`python -m benchmarks.setup_corpus` fills benchmarks/.corpus/ (git-ignored): the archives in downloads/ and
the extracted tree in tree/ (about 80,000 files). Later runs reuse it. Downloads go through the ordinary
clients (`pip download`, `npm pack`), pinned so every run searches the same tree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / ".corpus"
PYPI_SDISTS = ("ansible==12.3.0", "Django==5.2.19", "botocore==1.44.8", "sympy==1.14.0")
NPM_TARBALLS = ("date-fns@4.4.0", "rxjs@7.8.2")
_DONE = "tree.complete"


def tree_dir(corpus: Path = CORPUS_DIR) -> Path:
    return corpus / "tree"


def is_ready(corpus: Path = CORPUS_DIR) -> bool:
    return (corpus / _DONE).exists()


def count_files(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


def _download(downloads: Path) -> None:
    downloads.mkdir(parents=True, exist_ok=True)
    have = {p.name for p in downloads.iterdir()}
    for spec in PYPI_SDISTS:
        name, ver = spec.split("==")
        if any(n.lower().startswith(f"{name.lower()}-{ver}") for n in have):
            continue
        print(f"corpus: pip download {spec} (sdist) ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                str(downloads),
                spec,
            ],
            check=True,
            stdin=subprocess.DEVNULL,
        )
    npm = shutil.which("npm")
    for spec in NPM_TARBALLS:
        name, ver = spec.rsplit("@", 1)
        if f"{name.replace('@', '').replace('/', '-')}-{ver}.tgz" in have:
            continue
        if npm is None:
            print(f"corpus: npm not found, skipping {spec}")
            continue
        print(f"corpus: npm pack {spec} ...", flush=True)
        subprocess.run([npm, "pack", "--silent", spec], cwd=downloads, check=True, stdin=subprocess.DEVNULL)


def _extract(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # Python before 3.11.4: the members come from the registries we asked, still refuse escapes
            safe = [m for m in tar.getmembers() if not (m.name.startswith("/") or ".." in Path(m.name).parts)]
            tar.extractall(dest, members=safe)


def setup(corpus: Path = CORPUS_DIR) -> Path:
    """Download and extract the corpus if needed; return the tree folder."""
    tree = tree_dir(corpus)
    if is_ready(corpus):
        return tree
    downloads = corpus / "downloads"
    _download(downloads)
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for archive in sorted(downloads.iterdir()):
        if archive.name.endswith((".tar.gz", ".tgz")):
            stem = archive.name.removesuffix(".tar.gz").removesuffix(".tgz")
            print(f"corpus: extracting {archive.name}", flush=True)
            _extract(archive, tree / stem)
    total = count_files(tree)
    (corpus / _DONE).write_text(f"{total}\n")
    print(f"corpus: {total} files in {tree}")
    return tree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="extract again even if the tree is there")
    args = parser.parse_args()
    if args.force:
        (CORPUS_DIR / _DONE).unlink(missing_ok=True)
    setup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
