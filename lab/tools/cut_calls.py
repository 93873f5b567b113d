"""Cut ../shared/tools/cudnn-deltas.sh's output into one folder per device call (issue 40's transport).

    python lab/tools/cut_calls.py DELTAS OUT [--mib 40] [--tree-mib N]

DELTAS: cudnn-deltas.sh's OUTDIR (one folder per release: patches, SHA256SUMS, FROM, rest.tar.gz, SIZE).
Writes OUT/call-NN/cd/<version>/<file> (hard links where the file system allows), each call's files at
most ``--mib`` MiB in all, packed first fit, largest file first (fewest calls: each costs seconds of a
held machine whatever it carries); ``device-call.sh stage`` rebuilds a release once all of its files
and its source have arrived, whatever the order. A device call carries the tracked
tree too, within 64 MiB: ``--tree-mib`` (default: the tree's size, read from git) is checked against that.
Prints one line a call and the total.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

CALL_LIMIT_MIB = 64  # what one device call carries, tree included
TOOLS_MIB = 2  # .carryT/tools (zstd, cudnn-rebuild.sh, wheel-join.sh), carried beside every stage call


def tree_mib() -> float:
    """The tracked tree's size in MiB."""
    files = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout.split(b"\0")
    return sum(os.path.getsize(f) for f in files if f and os.path.isfile(f)) / 2**20


def releases(deltas: Path) -> list[str]:
    """The release folders of ``deltas`` (each with its FROM), in version order."""
    found = [d.name for d in deltas.iterdir() if (d / "FROM").is_file()]
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("deltas", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--mib", type=float, default=40.0, help="the most a call's files take (MiB)")
    parser.add_argument("--tree-mib", type=float, default=None, help="the tracked tree's size (MiB)")
    args = parser.parse_args()
    tree = tree_mib() if args.tree_mib is None else args.tree_mib
    if tree + TOOLS_MIB + args.mib > CALL_LIMIT_MIB:
        print(
            f"cut_calls: {args.mib} MiB a call beside a tree of {tree:.1f} MiB passes {CALL_LIMIT_MIB} MiB",
            file=sys.stderr,
        )
        return 2
    files = [
        (version, path)
        for version in releases(args.deltas)
        for path in sorted((args.deltas / version).iterdir())
        if path.is_file()
    ]
    limit = args.mib * 2**20
    calls: list[list[tuple[str, Path]]] = []
    used: list[int] = []
    for version, path in sorted(files, key=lambda f: -f[1].stat().st_size):
        size = path.stat().st_size
        if size > limit:
            print(
                f"cut_calls: {path} ({size / 2**20:.1f} MiB) is larger than a call; cut it smaller",
                file=sys.stderr,
            )
            return 2
        fits = next((i for i, u in enumerate(used) if u + size <= limit), None)
        if fits is None:
            calls.append([])
            used.append(0)
            fits = len(calls) - 1
        calls[fits].append((version, path))
        used[fits] += size
    if args.out.exists():
        shutil.rmtree(args.out)
    total = 0
    for index, call in enumerate(calls):
        folder = args.out / f"call-{index:02d}" / "cd"
        for version, path in call:
            target = folder / version / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy2(path, target)
        size = sum(p.stat().st_size for _, p in call)
        total += size
        versions = sorted({v for v, _ in call})
        print(f"call-{index:02d}: {size / 2**20:5.1f} MiB  {' '.join(versions)}")
    print(f"{len(calls)} calls, {total / 2**20:.0f} MiB; tree {tree:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
