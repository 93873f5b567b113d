"""Which NCCL did torch load, and is it the one its environment holds?

PyPI's CUDA builds of torch link NCCL from the ``nvidia-nccl-cuNN`` wheel beside torch (an RPATH to
``nvidia/nccl/lib``) and pin its version. An NCCL older than the pin fails at import (torch 2.13.0 on NCCL
2.28.9: ``undefined symbol: ncclCommResume``); one that imports from elsewhere would put every multi-GPU row
on a library nobody asked for. Read from the process itself: the version torch reports and every
``libnccl`` file mapped into it (``/proc/self/maps``).
"""

from __future__ import annotations

import importlib.metadata
import os
import re

import torch

from harness.suite.document import NcclRecord

_NCCL_FILE = re.compile(r"/libnccl[A-Za-z0-9_]*\.so[0-9.]*$")
_WHEEL = re.compile(r"^nvidia-nccl-cu[0-9]+$")


def mapped_nccl_files() -> list[str]:
    """Real paths of every NCCL library mapped into this process, sorted."""
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and _NCCL_FILE.search(parts[5].strip()):
                    found.add(os.path.realpath(parts[5].strip()))
    except OSError:
        pass
    return sorted(found)


def _runtime_version() -> str | None:
    """NCCL's version as torch reports it; None where torch was built without NCCL (CPU builds)."""
    if getattr(torch._C, "_nccl_version", None) is None:
        return None
    from torch.cuda import nccl

    return ".".join(str(part) for part in nccl.version()[:3])


def _wheel_beside_torch() -> tuple[str, str] | None:
    """(version, library folder) of the NCCL wheel in torch's own site-packages, where there is one."""
    site_packages = os.path.realpath(os.path.join(os.path.dirname(torch.__file__), ".."))
    lib_dir = os.path.join(site_packages, "nvidia", "nccl", "lib")
    for dist in importlib.metadata.distributions(path=[site_packages]):
        if _WHEEL.match((dist.metadata["Name"] or "").lower()):
            return dist.version[:64], lib_dir
    return None


def probe() -> NcclRecord:
    """What NCCL this torch loaded, checked against the NCCL wheel its environment holds."""
    runtime = _runtime_version()
    files = mapped_nccl_files()
    wheel = _wheel_beside_torch()
    record: NcclRecord = {
        "runtime_version": runtime,
        "wheel_version": wheel[0] if wheel else None,
        "loaded_libraries": files[:64],
        "verified": True,
        "verification": "",
    }
    record["verified"], record["verification"] = _verify(runtime, files, wheel)
    return record


def _verify(runtime: str | None, files: list[str], wheel: tuple[str, str] | None) -> tuple[bool, str]:
    if runtime is None:
        return True, "torch was built without NCCL"
    if wheel is None:
        where = ", ".join(sorted({os.path.dirname(f) for f in files})) or "linked into torch"
        return True, f"NCCL {runtime} ({where}); no NCCL wheel beside torch to check it against"
    version, lib_dir = wheel
    wanted = os.path.realpath(lib_dir)
    stray = sorted({os.path.dirname(f) for f in files} - {wanted})
    if stray:
        return (
            False,
            f"expected NCCL from the wheel beside torch ({wanted}), but it came from {', '.join(stray)}",
        )
    if version.split(".")[:3] != runtime.split("."):
        return False, f"the environment holds the NCCL wheel {version}, but torch reports NCCL {runtime}"
    return True, f"NCCL {runtime} loaded from {wanted} only (the wheel {version})"
