"""Cut what a lease needs on the GPU machine into one folder per device call.

    python -m lab.tools.calls resplit PART_MB BUNDLE...
    python -m lab.tools.calls cut OUT CAP_MB SPEC... [| SPEC...] [--tree-mib N]

resplit re-cuts every file over PART_MB into PART_MB pieces, in place, so that calls fill up to their cap
(40 MiB pieces left a 62 MB call two thirds full). A wheel_deltas bundle (manifest.json) lists its pieces in
manifest['carried']; a cudnn-deltas.sh release keeps their count in NAME.parts; both join a file's pieces in
name order where they are rebuilt (``lab/tools/device.sh stage``).

cut packs first fit, largest file first (fewest calls: each costs seconds of a held machine whatever it
carries), into OUT/call-NN/{wh,wd,cd}/<bundle>/<file>, hard-linked where the file system allows, each call's
files at most CAP_MB. SPEC is
    wh:FOLDER    its wheels, copied whole
    wd:BUNDLE    a wheel_deltas.py bundle
    cd:RELEASE   one release folder of ../shared/tools/cudnn-deltas.sh's output
    cds:DELTAS   every release folder of that output (each with its FROM), in version order
and '|' starts a group whose calls come after the last group's (torch 2.14.1's wheels before 2.15.0's, so
that its run could start while the rest travelled). A call that carries the tracked tree too must stay within
64 MiB: ``--tree-mib`` (default 0: an orphan checkout carries none) is checked against that.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

META = ("manifest.json", "SHA256SUMS", "FROM", "SIZE")
CALL_LIMIT_MIB = 64  # what one device call carries, tree included
TOOLS_MIB = 2  # .carryT/tools (zstd, device.sh, wheel_deltas.py, cudnn-rebuild.sh), carried beside every call


@dataclass(frozen=True)
class Item:
    """One file a call carries: where it goes (kind/bundle/name) and where it is here."""

    kind: str  # wh, wd or cd
    bundle: str  # the bundle's or release's folder name ('' for a whole wheel)
    path: Path

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def resplit(part: int, bundles: Sequence[Path]) -> None:
    for bundle in bundles:
        groups: dict[str, list[Path]] = {}
        for f in sorted(f for f in bundle.iterdir() if f.is_file()):
            groups.setdefault(f.name.split(".part-")[0], []).append(f)
        manifest = bundle / "manifest.json"
        m = json.loads(manifest.read_text()) if manifest.exists() else None
        for base, pieces in groups.items():
            if base in META or base.endswith(".parts"):
                continue
            data = b"".join(p.read_bytes() for p in pieces)
            if len(data) <= part:
                continue
            for p in pieces:
                p.unlink()
            names = [f"{base}.part-{i // part:02d}" for i in range(0, len(data), part)]
            for i, name in zip(range(0, len(data), part), names, strict=True):
                (bundle / name).write_bytes(data[i : i + part])
            if m is not None:
                m["carried"] = sorted([c for c in m["carried"] if c.split(".part-")[0] != base] + names)
            else:
                (bundle / f"{base}.parts").write_text(f"{len(names)}\n")
        if m is not None:
            manifest.write_text(json.dumps(m, indent=1))


def releases(deltas: Path) -> list[Path]:
    """The release folders of cudnn-deltas.sh's output (each with its FROM), in version order."""
    found = [d for d in deltas.iterdir() if (d / "FROM").is_file()]
    return sorted(found, key=lambda d: tuple(int(p) for p in d.name.split(".")))


def groups_of(specs: Sequence[str]) -> list[list[Item]]:
    """The files each SPEC names, in groups split at '|'."""
    groups: list[list[Item]] = [[]]
    for spec in specs:
        if spec == "|":
            groups.append([])
            continue
        kind, _, where = spec.partition(":")
        folder = Path(where)
        if kind == "wh":
            groups[-1] += [Item("wh", "", f) for f in sorted(folder.glob("*.whl"))]
        elif kind in ("wd", "cd"):
            groups[-1] += [Item(kind, folder.name, f) for f in sorted(folder.iterdir()) if f.is_file()]
        elif kind == "cds":
            for release in releases(folder):
                groups[-1] += [Item("cd", release.name, f) for f in sorted(release.iterdir()) if f.is_file()]
        else:
            raise ValueError(f"{spec!r}: a SPEC starts wh:, wd:, cd: or cds:")
    return groups


def pack(items: Sequence[Item], cap: int) -> list[list[Item]]:
    """First fit, largest file first, each bin at most ``cap`` bytes."""
    bins: list[list[Item]] = []
    used: list[int] = []
    for item in sorted(items, key=lambda i: -i.size):
        if item.size > cap:
            raise ValueError(f"{item.path} ({item.size / 1e6:.1f} MB) is larger than a call; resplit it")
        fits = next((i for i, u in enumerate(used) if u + item.size <= cap), None)
        if fits is None:
            bins.append([])
            used.append(0)
            fits = len(bins) - 1
        bins[fits].append(item)
        used[fits] += item.size
    return bins


def cut(out: Path, cap: int, specs: Sequence[str]) -> list[list[Item]]:
    """Lay OUT/call-NN folders; returns each call's files."""
    calls = [call for group in groups_of(specs) for call in pack(group, cap)]
    shutil.rmtree(out, ignore_errors=True)
    for n, call in enumerate(calls):
        for item in call:
            target = out / f"call-{n:02d}" / item.kind / item.bundle / item.path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(item.path, target)
            except OSError:
                shutil.copy2(item.path, target)
    return calls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.tools.calls", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    re_ = verbs.add_parser("resplit", help="re-cut files over PART_MB, in place")
    re_.add_argument("part_mb", type=float)
    re_.add_argument("bundles", type=Path, nargs="+")
    cut_ = verbs.add_parser("cut", help="one folder per device call")
    cut_.add_argument("out", type=Path)
    cut_.add_argument("cap_mb", type=float)
    cut_.add_argument("specs", nargs="+")
    cut_.add_argument("--tree-mib", type=float, default=0.0, help="the tracked tree a call carries (MiB)")
    args = parser.parse_args(argv)
    if args.verb == "resplit":
        resplit(int(args.part_mb * 1e6), args.bundles)
        return 0
    if args.tree_mib + TOOLS_MIB + args.cap_mb * 1e6 / 2**20 > CALL_LIMIT_MIB:
        too_much = f"{args.cap_mb} MB a call beside a tree of {args.tree_mib} MiB passes {CALL_LIMIT_MIB} MiB"
        print(f"calls: {too_much}", file=sys.stderr)
        return 2
    try:
        calls = cut(args.out, int(args.cap_mb * 1e6), args.specs)
    except (ValueError, OSError) as e:
        print(f"calls: {e}", file=sys.stderr)
        return 2
    for n, call in enumerate(calls):
        bundles = " ".join(sorted({i.bundle or i.path.name for i in call}))
        print(f"call-{n:02d}: {sum(i.size for i in call) / 1e6:5.1f} MB, {len(call)} files  {bundles}")
    print(f"{len(calls)} calls, {sum(i.size for c in calls for i in c) / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
