"""Find NVIDIA's system cuDNN on this machine and shadow torch's site-packages to load it.

torch's ``libtorch_cuda.so`` finds cuDNN through an RPATH (``$ORIGIN/../../nvidia/cudnn/lib``), so
``LD_LIBRARY_PATH`` cannot switch it, and ``LD_PRELOAD`` leaves the wheel's copy mapped too. A shadow
of site-packages does it cleanly: symlinks to every entry except ``nvidia/cudnn``, whose ``lib/``
holds links to the chosen library files. With the shadow first on ``PYTHONPATH``, torch loads from
the shadow, ``$ORIGIN`` follows the symlinked path, and exactly one cuDNN is mapped.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.backends.local import cudnn_releases

SYSTEM_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/lib",
    "/usr/local/lib",
)
_VERSIONED = re.compile(r"^libcudnn\.so\.(\d+)\.(\d+)\.(\d+)$")


@dataclass(frozen=True)
class CudnnInstall:
    lib_dir: Path
    version: str  # e.g. 9.14.0: from the library's file name, else its header or cudnnGetVersion


def read_install(folder: Path) -> CudnnInstall | None:
    """The cuDNN in ``folder``: a library folder, or a wheel's layout (``nvidia/cudnn/lib`` or
    ``lib/`` inside it). NVIDIA's packages name the version in a file name (``libcudnn.so.9.14.0``); a
    wheel has only ``libcudnn.so.9``, so its version comes from its header or from the library itself."""
    for lib_dir in (folder, folder / "lib", folder / "nvidia" / "cudnn" / "lib"):
        sonames = sorted(lib_dir.glob("libcudnn.so.[0-9]*"), reverse=True)
        for soname in sonames:
            match = _VERSIONED.match(jsonio.real_path(soname).name)  # a link loop: no error
            if match:
                return CudnnInstall(lib_dir, ".".join(match.groups()))
        if sonames:
            version = cudnn_releases.header_version(lib_dir) or cudnn_releases.library_version(sonames[0])
            return CudnnInstall(lib_dir, version) if version else None
    return None


def find_system(wanted: str) -> CudnnInstall:
    """``wanted``: 'auto' (the newest system cuDNN), a version prefix ('9.14'), or a directory."""
    if wanted.startswith("/"):
        found = read_install(Path(wanted))
        if found is None:
            raise LookupError(
                f"no cuDNN in {wanted}: give the folder of libcudnn.so.N (NVIDIA's package) or of an "
                "unpacked nvidia-cudnn-cuNN wheel (the folder that holds nvidia/cudnn/lib)"
            )
        return found
    installs = {jsonio.real_path(i.lib_dir): i for i in map(read_install, _candidate_dirs()) if i is not None}
    matching = [i for i in installs.values() if wanted == "auto" or _same_version(wanted, i.version)]
    if not matching:
        seen = "; found: " + ", ".join(f"{i.version} in {i.lib_dir}" for i in installs.values())
        which = "" if wanted == "auto" else f" {wanted}"
        raise LookupError(
            f"no system cuDNN{which} found in {', '.join(SYSTEM_DIRS)} or the ld.so cache"
            f"{seen if installs else ''}; install NVIDIA's cuDNN package (libcudnn9-cuda-NN) or give "
            "system: /path/to/lib"
        )
    return max(matching, key=lambda i: tuple(int(p) for p in i.version.split(".")))


def _candidate_dirs() -> list[Path]:
    dirs = [Path(d) for d in SYSTEM_DIRS]
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
        dirs += [
            Path(line.split("=>")[-1].strip()).parent for line in cache.splitlines() if "libcudnn.so" in line
        ]
    except (OSError, subprocess.SubprocessError):
        pass
    # A pip wheel's copy is never "the system cuDNN".
    return [d for d in dict.fromkeys(dirs) if d.is_dir() and "site-packages" not in str(d)]


def _same_version(wanted: str, have: str) -> bool:
    want = wanted.split(".")
    return want == have.split(".")[: len(want)]


def build_shadow(site_packages: Path, lib_dir: Path, dest: Path, version: str | None = None) -> Path:
    """Make ``dest`` a view of ``site_packages`` whose ``nvidia/cudnn/lib`` is ``lib_dir``'s cuDNN.

    ``version`` (e.g. 9.14.0): each ``libcudnn*.so.N`` also gets the alias ``.so.9.14.0``. cuDNN opens
    its sub-libraries by that name first (through its RUNPATH ``$ORIGIN``, then the ld.so cache); a wheel
    has only ``.so.N``, so without the alias a system cuDNN of the same release would be found first
    (two builds in one process)."""
    dest.mkdir(parents=True, exist_ok=True)
    for entry in site_packages.iterdir():
        if entry.name != "nvidia":
            (dest / entry.name).symlink_to(entry)
    nvidia = dest / "nvidia"
    nvidia.mkdir()
    if (site_packages / "nvidia").is_dir():
        for entry in (site_packages / "nvidia").iterdir():
            if entry.name != "cudnn":
                (nvidia / entry.name).symlink_to(entry)
    lib = nvidia / "cudnn" / "lib"
    lib.mkdir(parents=True)
    for library in sorted(lib_dir.glob("libcudnn*.so*")):
        (lib / library.name).symlink_to(jsonio.real_path(library))
    if version:
        for library in sorted(lib_dir.glob("libcudnn*.so.[0-9]")):
            alias = lib / f"{library.name.rsplit('.', 1)[0]}.{'.'.join(version.split('.')[:3])}"
            if not alias.exists():
                alias.symlink_to(jsonio.real_path(library))
    return dest
