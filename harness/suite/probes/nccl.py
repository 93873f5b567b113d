"""Which NCCL did torch load, and is it the one torch pins?

PyPI's CUDA builds of torch require an ``nvidia-nccl-cuNN`` wheel at one version and load it through an
RPATH to ``nvidia/nccl/lib`` beside torch. Where torch requires such a wheel, the NCCL it reports and every
``libnccl`` file mapped into this process (``/proc/self/maps``) must be that wheel's; where it requires
none (a build on the system's NCCL, or one that links NCCL in), what was loaded is recorded and not judged.
A probe that cannot read something says so in its verification and checks nothing; it never raises.
"""

from __future__ import annotations

import importlib.metadata
import os
import re

import torch

from harness.suite.document import NcclRecord
from harness.suite.probes import mapped

_NCCL_FILE = re.compile(r"/libnccl[A-Za-z0-9_]*\.so[0-9.]*$")
_WHEEL = re.compile(r"^nvidia-nccl-cu[0-9]+$")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")
_SAID = 4000  # the schema's bound on a verification


def mapped_nccl_files() -> list[str]:
    """Real paths of every NCCL library mapped into this process, sorted."""
    return mapped.mapped_files(_NCCL_FILE)


def _runtime_version() -> str | None:
    """NCCL's version as torch reports it; None where torch was built without NCCL (CPU builds)."""
    if getattr(torch._C, "_nccl_version", None) is None:
        return None
    from torch.cuda import nccl

    return ".".join(str(part) for part in nccl.version()[:3])


def _pinned_wheel() -> tuple[str, str, str] | None:
    """(name, version, library folder) of the NCCL wheel torch requires, as installed beside it; None where
    torch requires none. A required wheel that is not installed there has version ''."""
    try:
        requires = importlib.metadata.distribution("torch").requires or []
    except importlib.metadata.PackageNotFoundError:  # a torch without metadata (a source build): no pin known
        return None
    names = {re.split(r"[\s<>=!~;\[(]", r.strip(), maxsplit=1)[0].lower() for r in requires}
    wanted = sorted(n for n in names if _WHEEL.match(n))
    if not wanted:
        return None
    site_packages = os.path.realpath(os.path.join(os.path.dirname(torch.__file__), ".."))
    lib_dir = os.path.join(site_packages, "nvidia", "nccl", "lib")
    for dist in importlib.metadata.distributions(path=[site_packages]):
        if (dist.name or "").lower() == wanted[0]:
            return wanted[0], str(dist.version or "")[:64], lib_dir
    return wanted[0], "", lib_dir


def probe() -> NcclRecord:
    """What NCCL this torch loaded, checked against the NCCL wheel torch requires."""
    files = mapped_nccl_files()[:64]
    record: NcclRecord = {
        "runtime_version": None,
        "wheel_version": None,
        "loaded_libraries": files,
        "verified": False,
        "verification": "",
    }
    try:
        record["runtime_version"] = _runtime_version()
        wheel = _pinned_wheel()
    except (
        Exception
    ) as exc:  # a torch or a metadata that cannot be read: said, not checked, never a lost cell
        said = f"NCCL could not be read, so it is not checked: {type(exc).__name__}: {exc}"
        record["verified"], record["verification"] = True, said[:_SAID]
        return record
    record["wheel_version"] = wheel[1] if wheel else None
    verified, said = _verify(record["runtime_version"], files, wheel)
    record["verified"], record["verification"] = verified, said[:_SAID]
    return record


def _verify(runtime: str | None, files: list[str], wheel: tuple[str, str, str] | None) -> tuple[bool, str]:
    where = sorted({os.path.dirname(f) for f in files})
    if runtime is None:
        return True, "torch was built without NCCL"
    if wheel is None:
        place = ", ".join(where[:4]) or "linked into torch"
        return True, f"NCCL {runtime} ({place}); torch requires no NCCL wheel to check it against"
    name, version, lib_dir = wheel
    if not version:
        return False, f"torch requires {name}, but it is not installed beside torch"
    wanted = os.path.realpath(lib_dir)
    stray = [d for d in where if d != wanted]
    if stray:
        more = f" and {len(stray) - 4} more" if len(stray) > 4 else ""
        return (
            False,
            f"expected NCCL from {name} beside torch ({wanted}), but it came from "
            f"{', '.join(stray[:4])}{more}",
        )
    if _numbers(version) != _numbers(runtime):
        return False, f"torch requires {name}, installed at {version}, but reports NCCL {runtime}"
    if not files:
        return True, f"NCCL {runtime}, as {name} {version} (no libnccl file mapped: linked in)"
    return True, f"NCCL {runtime} loaded from {wanted} only ({name} {version})"


def _numbers(version: str) -> tuple[int, int, int] | None:
    """major, minor, patch of '2.29.7', '2.29.7.post1' or '2.29.7+cu13' (a missing patch is 0)."""
    found = _VERSION.match(version.strip())
    return (int(found[1]), int(found[2]), int(found[3] or 0)) if found else None
