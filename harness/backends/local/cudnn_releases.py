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
import io
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.backends import packages
from harness.backends.local import cache

Progress = Callable[[str], None]
_DEFINE = re.compile(r"^#define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)", re.M)
LIB_DIR = "nvidia/cudnn/lib"  # where a wheel puts its libraries, inside a release's folder
RECORD_BYTES = 16 * 1024 * 1024
HEADER_BYTES = 1024 * 1024  # cudnn_version.h is a few KB
VERSION_DIGITS = 6
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
    """'9.19.0' from the ``cudnn_version.h`` beside a wheel-layout ``lib/`` (``../include``). The header is
    read only where it is a regular file, and at most HEADER_BYTES of it; a part of more than VERSION_DIGITS
    digits is no cuDNN's (it would make a file name too long) and reads as no version."""
    for header in (lib_dir.parent / "include" / "cudnn_version.h", lib_dir / "cudnn_version.h"):
        try:
            text = jsonio.read_bytes(header, HEADER_BYTES, decompress=False).decode(errors="replace")
        except (OSError, ValueError):
            continue
        found = dict(_DEFINE.findall(text))
        if {"MAJOR", "MINOR", "PATCHLEVEL"} <= found.keys():
            parts = [found["MAJOR"], found["MINOR"], found["PATCHLEVEL"]]
            return ".".join(parts) if all(len(p) <= VERSION_DIGITS for p in parts) else None
    return None


def library_version(library: Path) -> str | None:
    """'9.19.0' from ``cudnnGetVersion`` of ``library``, loaded in a subprocess (never into this one); None
    where it is no regular file (a FIFO would hold the loader until its timeout)."""
    if not library.is_file():
        return None
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
    there whole. Raises ``packages.InstallError`` (a LookupError) where it cannot be had, and
    ``cache.CacheError`` (a LookupError too) naming the file where the cache itself cannot be used."""
    name = distribution(cuda_major)
    with cache.guarded(root):
        entry = cache.folder(root, "cudnn") / f"{name}-{version}"
        with cache.locked(entry):
            kept = _read(entry)
            if kept is not None:
                return kept
            if cache.present(entry):  # a link, a file or a FIFO planted in its place is removed too
                progress(f"cuDNN {version} in {entry} is damaged or half-built: installing it again")
                cache.clear(entry)
            building = entry.with_name(entry.name + ".partial")
            cache.clear(building)
            progress(packages.Milestone(f"installing cuDNN {version} ({name}) into {entry}"))
            log = entry.with_name(entry.name + ".log")
            cache.fresh_log(log)
            packages.install(
                [f"{name}=={version}"],
                source,
                log,
                python=sys.executable,
                target=building,
                no_deps=True,
                progress=progress,
                cache_root=root,
            )
            manifest = _manifest(building, name, version)
            jsonio.write_atomic(building / cache.MANIFEST, manifest)
            building.rename(entry)
        release = _read(entry)
    if release is None:
        raise packages.InstallError(f"cuDNN {version} was installed into {entry} but does not check out")
    return release


def _manifest(folder: Path, name: str, version: str) -> dict[str, object]:
    """Check every file of the wheel's RECORD against its sha256 and the headers' version against the
    wheel's; the manifest keeps each file's size for the quick check of later uses. A RECORD that names a
    file outside the folder, or one that is not a regular file of it, is refused."""
    records = sorted(folder.glob(f"{name.replace('-', '_')}-*.dist-info/RECORD"))
    if len(records) != 1:
        raise packages.InstallError(
            f"{name}=={version} in {folder}: expected one RECORD, found {len(records)}"
        )
    sizes: dict[str, int] = {}
    try:
        record = jsonio.read_bytes(records[0], RECORD_BYTES, decompress=False)
    except ValueError as exc:
        raise packages.InstallError(f"{records[0]}: {exc}") from None
    for row in csv.reader(io.StringIO(record.decode(errors="replace"), newline="")):
        if len(row) != 3 or not row[1].startswith("sha256="):
            continue  # RECORD itself, and files pip writes (INSTALLER, REQUESTED)
        path, digest = row[0], row[1]
        file = cache.inside(folder, path)
        if file is None or not file.is_file():
            raise packages.InstallError(f"{records[0]} names {path!r}, which is no file of {folder}")
        actual = base64.urlsafe_b64encode(jsonio.file_sha256(file)).rstrip(b"=")
        if actual.decode() != digest.removeprefix("sha256="):
            raise packages.InstallError(f"{file} does not match the sha256 its wheel's RECORD gives")
        sizes[path] = file.stat().st_size
    lib_dir = folder / LIB_DIR
    found = header_version(lib_dir)
    if found is None or version.split(".")[:3] != found.split("."):
        raise packages.InstallError(f"{name}=={version} in {folder}: its cudnn_version.h says {found}")
    return {
        "distribution": name,
        "version": version,
        "lib_dir": LIB_DIR,
        "record_sha256": hashlib.sha256(record).hexdigest(),
        "sizes": sizes,
    }


def _read(entry: Path) -> CudnnRelease | None:
    """The release in ``entry`` if it is a real folder whose manifest is there, every file it lists has its
    size and lies inside the entry (no link on the way), and every cuDNN library in its ``lib/`` is one it
    lists: a forged manifest never points a cell at a library outside the cache."""
    manifest = cache.read_manifest(entry)
    try:
        if manifest["lib_dir"] != LIB_DIR:
            return None
        for path, size in manifest["sizes"].items():
            file = cache.inside(entry, path)
            if file is None or not file.is_file() or file.stat().st_size != size:
                return None
        lib_dir = cache.inside(entry, LIB_DIR)
        if lib_dir is None or not lib_dir.is_dir():
            return None
        listed = {f"{LIB_DIR}/{p.name}" for p in lib_dir.iterdir() if p.name.startswith("libcudnn")}
        if not listed <= manifest["sizes"].keys():
            return None
        return CudnnRelease(
            str(manifest["distribution"]),
            str(manifest["version"]),
            lib_dir,
            str(manifest["record_sha256"]),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
