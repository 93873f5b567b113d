"""Carry PyPI wheels to the GPU machine as deltas against the distributions its Python already holds.

That machine has no network and takes 64 MiB a call. Its torch 2.11 environment holds most of the CUDA 13
stack that later torch builds pin, at the same or a nearby version: nvidia-cublas 13.1.0.3 -> 13.1.1.3
is a 9 MB patch of a 423 MB wheel. Each file of the new wheel travels as one of:
  same     byte-identical to the installed file at the same path (nothing travels)
  patch    a zstd patch from the installed file at the same path (zstd --patch-from)
  literal  the file itself (in literal.tar)
and is checked against its sha256 in the new wheel when it is rebuilt there (the rebuilt wheel holds the same
files and modes, stored rather than compressed, so its own sha256 is not PyPI's). The bundles before
2026-11-26 16:20 UTC recorded no file modes: a wheel rebuilt from them had every file 0o600 (torch 2.14.1's
`torch/bin/torch_shm_manager` lost its execute bit; no measured row runs it).

usage:
  here:   python3 wheel_deltas.py pack OUTDIR NEW.whl=OLD.whl...   (OLD: the wheel of what the machine has
          installed; NEW=NEW where the machine holds that very version) -> OUTDIR/<new wheel>/: manifest.json,
          literal.tar, patches (files over 40 MB cut into .part-NN)
          python3 wheel_deltas.py squeeze OUTDIR        each bundle's literal.tar zstd-compressed (-19) into
                                                        literal.tar.zst (torch 2.14.1: 446 -> 381 MB)
          python3 wheel_deltas.py batch OUTDIR CAP_MB   -> OUTDIR/batch-NN/<new wheel>/... (first fit)
  there:  python3 wheel_deltas.py rebuild DEST ZSTD BATCH...   collects each batch into DEST/parts and
          rebuilds every wheel whose files have all arrived into DEST/wheelhouse/<new wheel> (stored zip),
          from the files installed beside python3's torch. A wheel whose base files do not match fails
          with the path that differs, and nothing is written for it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

PART = 40 * 1024 * 1024
PATCH_MIN = 1024 * 1024  # smaller files travel whole


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack(out: Path, pairs: list[str]) -> None:
    for pair in pairs:
        new_path, _, old_path = pair.partition("=")
        new, old = zipfile.ZipFile(new_path), zipfile.ZipFile(old_path or new_path)
        bundle = out / Path(new_path).name
        shutil.rmtree(bundle, ignore_errors=True)
        bundle.mkdir(parents=True)
        old_names = set(old.namelist())
        entries, literal = [], io.BytesIO()
        with tarfile.open(fileobj=literal, mode="w") as tar, tempfile.TemporaryDirectory() as tmp:
            for index, name in enumerate(n for n in new.namelist() if not n.endswith("/")):
                data = new.read(name)
                entry = {
                    "path": name,
                    "sha256": _sha(data),
                    "size": len(data),
                    "attr": new.getinfo(name).external_attr,
                }
                # an installed dist-info differs from the wheel (pip adds INSTALLER, RECORD lines): it travels
                base = old.read(name) if name in old_names and ".dist-info/" not in name else None
                if base is not None and _sha(base) == entry["sha256"]:
                    entry["how"] = "same"
                elif base is not None and len(data) >= PATCH_MIN:
                    Path(tmp, "old").write_bytes(base)
                    Path(tmp, "new").write_bytes(data)
                    patch = bundle / f"{index}.zst"
                    subprocess.run(
                        [
                            "zstd",
                            "-q",
                            "-f",
                            "-12",
                            "--long=31",
                            f"--patch-from={tmp}/old",
                            f"{tmp}/new",
                            "-o",
                            str(patch),
                        ],
                        check=True,
                    )
                    entry.update(how="patch", file=patch.name, base_sha256=_sha(base))
                else:
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                    entry["how"] = "literal"
                entries.append(entry)
        (bundle / "literal.tar").write_bytes(literal.getvalue())
        carried = []
        for f in sorted(bundle.iterdir()):
            if f.stat().st_size > PART:
                data = f.read_bytes()
                for i in range(0, len(data), PART):
                    part = bundle / f"{f.name}.part-{i // PART:02d}"
                    part.write_bytes(data[i : i + PART])
                    carried.append(part.name)
                f.unlink()
            else:
                carried.append(f.name)
        manifest = {"wheel": Path(new_path).name, "entries": entries, "carried": sorted(carried)}
        (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1))
        size = sum(f.stat().st_size for f in bundle.iterdir())
        counts = {h: sum(e["how"] == h for e in entries) for h in ("same", "patch", "literal")}
        print(
            f"{bundle.name}: {Path(new_path).stat().st_size / 1e6:.1f} MB wheel -> {size / 1e6:.1f} MB",
            counts,
        )


def squeeze(out: Path) -> None:
    """Compress each bundle's literal.tar (files that travel whole, stored) into literal.tar.zst."""
    for bundle in sorted(b for b in out.iterdir() if b.is_dir() and not b.name.startswith("batch-")):
        manifest = json.loads((bundle / "manifest.json").read_text())
        if any(c.startswith("literal.tar.zst") for c in manifest["carried"]):
            continue
        whole = _joined(bundle, "literal.tar")
        subprocess.run(
            [
                "zstd",
                "-q",
                "-f",
                "-19",
                "-T2",
                "--long=27",
                str(whole),
                "-o",
                str(bundle / "literal.tar.zst"),
            ],
            check=True,
        )
        for f in [*bundle.glob("literal.tar.part-*"), whole]:
            f.unlink()
        carried = [c for c in manifest["carried"] if not c.startswith("literal.tar")]
        zst = bundle / "literal.tar.zst"
        data = zst.read_bytes()
        if len(data) > PART:
            for i in range(0, len(data), PART):
                (bundle / f"literal.tar.zst.part-{i // PART:02d}").write_bytes(data[i : i + PART])
                carried.append(f"literal.tar.zst.part-{i // PART:02d}")
            zst.unlink()
        else:
            carried.append("literal.tar.zst")
        manifest["carried"] = sorted(carried)
        (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1))
        size = sum(f.stat().st_size for f in bundle.iterdir())
        print(f"{bundle.name}: {size / 1e6:.1f} MB")


def batch(out: Path, cap_mb: int) -> None:
    files = sorted(
        (f for b in out.iterdir() if b.is_dir() and not b.name.startswith("batch-") for f in b.iterdir()),
        key=lambda f: -f.stat().st_size,
    )
    batches: list[tuple[list[int], list[Path]]] = []  # ([bytes], files)
    for f in files:
        size = f.stat().st_size
        for b in batches:
            if b[0][0] + size <= cap_mb * 1e6:
                b[0][0] += size
                b[1].append(f)
                break
        else:
            batches.append(([size], [f]))
    for i, ((size,), members) in enumerate(batches):
        folder = out / f"batch-{i:02d}"
        for f in members:
            (folder / f.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, folder / f.parent.name / f.name)
        print(f"{folder}: {size / 1e6:.1f} MB, {len(members)} file(s)")


def rebuild(dest: Path, zstd: str, batches: list[Path]) -> int:
    parts, house = dest / "parts", dest / "wheelhouse"
    house.mkdir(parents=True, exist_ok=True)
    for b in batches:
        for bundle in b.iterdir():
            (parts / bundle.name).mkdir(parents=True, exist_ok=True)
            for f in bundle.iterdir():
                shutil.copy2(f, parts / bundle.name / f.name)
    site = Path(os.environ.get("WHEEL_DELTAS_SITE") or _torch_site())
    failed = 0
    for bundle in sorted(parts.iterdir()):
        target = house / bundle.name
        if target.exists() or not (bundle / "manifest.json").exists():
            continue
        manifest = json.loads((bundle / "manifest.json").read_text())
        missing = [c for c in manifest["carried"] if not (bundle / c).exists()]
        if missing:
            print(f"waits {bundle.name}: {len(missing)} file(s) to come")
            continue
        try:
            _rebuild_one(bundle, manifest, site, zstd, target)
            print(
                f"rebuilt {bundle.name} ({target.stat().st_size / 1e6:.0f} MB, every file's sha256 checked)"
            )
        except (OSError, ValueError, subprocess.CalledProcessError) as exc:
            failed += 1
            print(f"FAILED {bundle.name}: {exc}")
    return 1 if failed else 0


def _torch_site() -> str:
    import torch

    return str(Path(torch.__file__).resolve().parent.parent)


def _joined(bundle: Path, name: str) -> Path:
    whole = bundle / name
    if not whole.exists():
        with whole.open("wb") as out:
            for part in sorted(bundle.glob(f"{name}.part-*")):
                out.write(part.read_bytes())
    return whole


def _rebuild_one(bundle: Path, manifest: dict[str, Any], site: Path, zstd: str, target: Path) -> None:
    if any(c.startswith("literal.tar.zst") for c in manifest["carried"]):
        packed = _joined(bundle, "literal.tar.zst")
        subprocess.run(
            [zstd, "-q", "-d", "-f", "--long=27", str(packed), "-o", str(bundle / "literal.tar")], check=True
        )
    partial = target.with_name(target.name + ".partial")
    with (
        tarfile.open(_joined(bundle, "literal.tar")) as literal,
        zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as wheel,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for entry in manifest["entries"]:
            how, path = entry["how"], entry["path"]
            if how == "literal":
                member = literal.extractfile(path)
                data = member.read() if member else b""
            elif how == "same":
                data = (site / path).read_bytes()
            else:
                base = site / path
                if _sha(base.read_bytes()) != entry["base_sha256"]:
                    raise ValueError(f"the installed {base} is not the file the patch was made from")
                out = Path(tmp) / "new"
                subprocess.run(
                    [
                        zstd,
                        "-q",
                        "-d",
                        "-f",
                        "--long=31",
                        f"--patch-from={base}",
                        str(_joined(bundle, entry["file"])),
                        "-o",
                        str(out),
                    ],
                    check=True,
                )
                data = out.read_bytes()
            if _sha(data) != entry["sha256"]:
                raise ValueError(
                    f"{path}: sha256 differs from the wheel's ({how}; installed at {site / path})"
                )
            info = zipfile.ZipInfo(path, (2026, 1, 1, 0, 0, 0))
            info.external_attr = entry.get("attr", 0o644 << 16)  # a script keeps its execute bit
            wheel.writestr(info, data)
    os.replace(partial, target)


if __name__ == "__main__":
    verb, rest = sys.argv[1], sys.argv[2:]
    if verb == "pack":
        pack(Path(rest[0]), rest[1:])
    elif verb == "squeeze":
        squeeze(Path(rest[0]))
    elif verb == "batch":
        batch(Path(rest[0]), int(rest[1]))
    elif verb == "rebuild":
        sys.exit(rebuild(Path(rest[0]), rest[1], [Path(b) for b in rest[2:]]))
    else:
        sys.exit(f"unknown verb {verb}; see the docstring")
