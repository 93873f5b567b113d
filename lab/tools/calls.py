"""Cut wheel_deltas.py bundles, cudnn-deltas.sh releases and whole wheels into one folder per device call.

    python3 calls.py resplit PART_MB BUNDLE...   re-cut every file over PART_MB into PART_MB pieces, in place
    python3 calls.py cut OUT CAP_MB SPEC... [| SPEC...]

resplit lets calls fill up to their cap (40 MiB pieces left a 62 MB call two thirds full). A wheel_deltas
bundle (manifest.json) lists its pieces in manifest['carried']; a cudnn-deltas release keeps their count in
NAME.parts; both join a file's pieces in name order where they are rebuilt.
cut packs first fit, largest file first, into OUT/call-NN/{wh,wd,cd}/<bundle>/<file>, each call at most
CAP_MB. SPEC is wh:FOLDER (its wheels, copied whole), wd:BUNDLE or cd:RELEASE; '|' starts a group whose calls
come after the last group's (torch 2.14.1's wheels before 2.15.0's, so that its run could start while the
rest travelled).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

META = ("manifest.json", "SHA256SUMS", "FROM", "SIZE")


def resplit(part: int, bundles: list[Path]) -> None:
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


def cut(out: Path, cap: int, specs: list[str]) -> None:
    groups: list[list[tuple[str, str, Path]]] = [[]]
    for spec in specs:
        if spec == "|":
            groups.append([])
            continue
        kind, _, path = spec.partition(":")
        folder = Path(path)
        if kind == "wh":
            groups[-1] += [("wh", "", f) for f in sorted(folder.glob("*.whl"))]
        else:
            groups[-1] += [(kind, folder.name, f) for f in sorted(folder.iterdir()) if f.is_file()]
    shutil.rmtree(out, ignore_errors=True)
    n = 0
    for group in groups:
        bins: list[tuple[list[int], list[tuple[str, str, Path]]]] = []
        for item in sorted(group, key=lambda i: -i[2].stat().st_size):
            size = item[2].stat().st_size
            fit = next((b for b in bins if b[0][0] + size <= cap), None)
            if fit is None:
                bins.append(([size], [item]))
            else:
                fit[0][0] += size
                fit[1].append(item)
        for (size,), items in bins:
            call = out / f"call-{n:02d}"
            for kind, bundle, f in items:
                (call / kind / bundle).mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, call / kind / bundle / f.name)
            print(f"{call.name}: {size / 1e6:.1f} MB, {len(items)} files")
            n += 1


if __name__ == "__main__":
    verb, rest = sys.argv[1], sys.argv[2:]
    if verb == "resplit":
        resplit(int(float(rest[0]) * 1e6), [Path(b) for b in rest[1:]])
    elif verb == "cut":
        cut(Path(rest[0]), int(float(rest[1]) * 1e6), rest[2:])
    else:
        sys.exit(f"unknown verb {verb}; see the docstring")
