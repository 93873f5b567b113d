"""cuDNN releases from PyPI's ``nvidia-cudnn-cuNN`` wheels, each installed once into a folder of its own.

A wheel holds only ``libcudnn*.so.N`` files (no ``.so.N.N.N`` names), so a release's version is read from
the release itself: its ``cudnn_version.h``, else ``cudnnGetVersion`` in a subprocess. A release folder is
complete once every file of the wheel's RECORD matched its sha256; later uses check the sizes, and a
folder that fails (damaged) or has no manifest (half-built) is removed and installed again.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.environments import cache, packages

Progress = Callable[[str], None]
_DEFINE = re.compile(r"^#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)", re.M)
_GET_VERSION = (
    "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).cudnnGetVersion())"  # e.g. 91900 for 9.19.0
)


@dataclass(frozen=True)
class CudnnRelease:
    distribution: str  # nvidia-cudnn-cu13
    version: str  # the wheel's, e.g. 9.18.1.3
    lib_dir: Path  # the folder of its libcudnn*.so.N files
    record_sha256: str  # the sha256 of the wheel's RECORD, which lists every file's hash: the build


def distribution(cuda_major: str) -> str:
    return f"nvidia-cudnn-cu{cuda_major}"


def header_version(lib_dir: Path) -> str | None:
    """'9.19.0' from the ``cudnn_version.h`` beside a wheel-layout ``lib/`` (``../include``)."""
    for header in (lib_dir.parent / "include" / "cudnn_version.h", lib_dir / "cudnn_version.h"):
        try:
            found = dict(_DEFINE.findall(header.read_text(errors="replace")))
        except OSError:
            continue
        if {"MAJOR", "MINOR", "PATCHLEVEL"} <= found.keys():
            return f"{found['MAJOR']}.{found['MINOR']}.{found['PATCHLEVEL']}"
    return None


def library_version(library: Path) -> str | None:
    """'9.19.0' from ``cudnnGetVersion`` of ``library``, loaded in a subprocess (never into this one)."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", _GET_VERSION, str(library)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
        number = int(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    major, rest = divmod(number, 10000) if number >= 10000 else divmod(number, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def ensure(
    root: Path, cuda_major: str, version: str, source: packages.PackageSource, progress: Progress
) -> CudnnRelease:
    """The release ``version`` of ``nvidia-cudnn-cu<cuda_major>``, installed under ``root`` if it is not
    there whole. Raises ``packages.InstallError`` (a LookupError) where it cannot be had."""
    name = distribution(cuda_major)
    entry = root / "cudnn" / f"{name}-{version}"
    with cache.locked(entry):
        kept = _read(entry)
        if kept is not None:
            return kept
        if entry.exists():
            progress(f"cuDNN {version} in {entry} is damaged or half-built: installing it again")
            cache.clear(entry)
        building = entry.with_name(entry.name + ".partial")
        cache.clear(building)
        packages.install(
            [f"{name}=={version}"],
            source,
            entry.with_name(entry.name + ".log"),
            python=sys.executable,
            target=building,
            no_deps=True,
            progress=progress,
            cache_root=root,
        )
        manifest = _manifest(building, name, version)
        (building / cache.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        building.rename(entry)
    release = _read(entry)
    if release is None:
        raise packages.InstallError(f"cuDNN {version} was installed into {entry} but does not check out")
    return release


def _manifest(folder: Path, name: str, version: str) -> dict[str, object]:
    """Check every file of the wheel's RECORD against its sha256 and the headers' version against the
    wheel's; the manifest keeps each file's size for the quick check of later uses."""
    records = sorted(folder.glob(f"{name.replace('-', '_')}-*.dist-info/RECORD"))
    if len(records) != 1:
        raise packages.InstallError(
            f"{name}=={version} in {folder}: expected one RECORD, found {len(records)}"
        )
    sizes: dict[str, int] = {}
    with records[0].open(newline="") as rows:
        for path, digest, _size in csv.reader(rows):
            if not digest.startswith("sha256="):
                continue  # RECORD itself, and files pip writes (INSTALLER, REQUESTED)
            file = folder / path
            actual = base64.urlsafe_b64encode(hashlib.sha256(file.read_bytes()).digest()).rstrip(b"=")
            if actual.decode() != digest.removeprefix("sha256="):
                raise packages.InstallError(f"{file} does not match the sha256 its wheel's RECORD gives")
            sizes[path] = file.stat().st_size
    lib_dir = folder / "nvidia" / "cudnn" / "lib"
    found = header_version(lib_dir)
    if found is None or version.split(".")[:3] != found.split("."):
        raise packages.InstallError(f"{name}=={version} in {folder}: its cudnn_version.h says {found}")
    return {
        "distribution": name,
        "version": version,
        "lib_dir": "nvidia/cudnn/lib",
        "record_sha256": hashlib.sha256(records[0].read_bytes()).hexdigest(),
        "sizes": sizes,
    }


def _read(entry: Path) -> CudnnRelease | None:
    """The release in ``entry`` if its manifest is there and every file it lists has its size."""
    try:
        manifest = json.loads((entry / cache.MANIFEST).read_text())
        for path, size in manifest["sizes"].items():
            if (entry / path).stat().st_size != size:
                return None
        return CudnnRelease(
            manifest["distribution"],
            manifest["version"],
            entry / manifest["lib_dir"],
            manifest["record_sha256"],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
