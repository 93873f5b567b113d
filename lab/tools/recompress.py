"""Re-encode committed result files (``*.json.gz``) with zopfli: the same gzip format and the same JSON bytes
inside, about a tenth smaller, so more evidence fits the tree's 20 MiB.

    pip install zopfli && python lab/tools/recompress.py FOLDER [FOLDER ...]

A file is replaced only when its new form decompresses to exactly the bytes of the old one; a file
already smaller than zopfli's form is left as it is.
"""

from __future__ import annotations

import gzip
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import zopfli.gzip


def recompress(path: Path) -> tuple[Path, int, int]:
    old = path.read_bytes()
    raw = gzip.decompress(old)
    new = zopfli.gzip.compress(raw, numiterations=1)
    if gzip.decompress(new) != raw:
        raise SystemExit(f"{path}: zopfli's form does not decompress to the same bytes")
    if len(new) < len(old):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(new)
        tmp.replace(path)
    return path, len(old), min(len(new), len(old))


def main(folders: list[str]) -> None:
    files = sorted(p for f in folders for p in Path(f).rglob("*.json.gz"))
    with ProcessPoolExecutor() as pool:
        before = after = 0
        for path, old, new in pool.map(recompress, files):
            before, after = before + old, after + new
            print(f"{path}: {old} -> {new} bytes", flush=True)
    print(f"{len(files)} files: {before} -> {after} bytes ({after / max(before, 1):.3f})")


if __name__ == "__main__":
    main(sys.argv[1:])
