"""Which cuDNN did torch really load, and is it the one the cell asked for?

Read from the process itself: the runtime version torch reports, and every ``libcudnn*`` file
mapped into this process (``/proc/self/maps``). We never trust the environment we set up.
"""

from __future__ import annotations

import json
import os
import re
from typing import get_args

import torch
import torch.nn.functional as F

from harness.suite.document import CudnnRecord, CudnnRequest, CudnnSourceKind, Measurement
from harness.suite.probes import mapped

_CUDNN_FILE = re.compile(r"/libcudnn[A-Za-z0-9_]*\.so[0-9.]*$")


def mapped_cudnn_files() -> list[str]:
    """Real paths of every cuDNN library mapped into this process, sorted."""
    return mapped.mapped_files(_CUDNN_FILE)


def _version_text(number: int | None) -> str | None:
    if not number:
        return None
    major, rest = divmod(number, 10000) if number >= 10000 else divmod(number, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def _versions() -> tuple[str | None, str | None]:
    """(runtime, compile-time) cuDNN versions, read without torch's compatibility check raising."""
    cudnn_c = getattr(torch._C, "_cudnn", None)
    if cudnn_c is None:
        return None, None
    runtime = ".".join(map(str, cudnn_c.getRuntimeVersion()))
    compiled = ".".join(map(str, cudnn_c.getCompileVersion()))
    return runtime, compiled


def bundled_lib_dir() -> str:
    """Where the pinned ``nvidia-cudnn-cuNN`` wheel sits, next to torch (torch's RPATH points here)."""
    return os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cudnn", "lib"))


def request(text: str) -> CudnnRequest:
    """The cuDNN the cell expects, as the orchestrator sent it (JSON), checked: ``source`` one of the
    kinds, ``lib_dir`` and ``version`` strings where given; it raises ValueError on anything else."""
    raw = json.loads(text)
    if not isinstance(raw, dict) or raw.get("source") not in get_args(CudnnSourceKind):
        raise ValueError(
            f"the cuDNN expectation needs a source of {', '.join(get_args(CudnnSourceKind))}: {text}"
        )
    unknown = set(raw) - set(CudnnRequest.__annotations__)
    wrong = [k for k in ("lib_dir", "version") if k in raw and not isinstance(raw[k], str)]
    if unknown or wrong:
        raise ValueError(
            f"the cuDNN expectation holds unknown or non-string keys {sorted(unknown) + wrong}: {text}"
        )
    found = CudnnRequest(source=raw["source"])
    if "lib_dir" in raw:
        found["lib_dir"] = raw["lib_dir"]
    if "version" in raw:
        found["version"] = raw["version"]
    return found


def probe(expect: CudnnRequest, device: str) -> CudnnRecord:
    """Load cuDNN the way a workload would, then check it against ``expect``.

    ``expect``: {"source": "bundled" | "wheel" | "system" | "disabled", "lib_dir"?: str, "version"?: str}.
    A ``wheel`` source without ``lib_dir`` is the cuDNN wheel beside torch, replaced by the requested
    version (an image); with ``lib_dir`` it is that release's own folder (the local backend's shadow).
    """
    source = expect["source"]
    torch.backends.cudnn.enabled = source != "disabled"
    cuda_build = torch.version.cuda is not None
    on_gpu = device.startswith("cuda")
    if on_gpu and source != "disabled":
        # A small conv maps the cuDNN sub-libraries (graph, engines) that import alone does not.
        x = torch.ones(1, 8, 16, 16, device=device)
        F.conv2d(x, torch.ones(8, 8, 3, 3, device=device), padding=1)
        torch.cuda.synchronize()
    runtime, compiled = _versions() if cuda_build else (None, None)
    files = mapped_cudnn_files()
    main_libs = [f for f in files if re.search(r"/libcudnn\.so", f)]
    dirs = sorted({os.path.dirname(f) for f in files})
    compatible = None
    if runtime and compiled:
        (rmaj, rmin), (cmaj, cmin) = (tuple(int(p) for p in v.split(".")[:2]) for v in (runtime, compiled))
        compatible = rmaj == cmaj and rmin >= cmin
    result: CudnnRecord = {
        "requested": expect,
        "enabled": bool(torch.backends.cudnn.enabled),
        "available": bool(torch.backends.cudnn.is_available()),
        "runtime_version": runtime,
        "compile_version": compiled,
        "compatible_by_torch_rule": compatible,
        "compat_check_overridden": os.environ.get("PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK") == "1",
        "loaded_libraries": files,
        "loaded_dirs": dirs,
        "distinct_builds": len(main_libs) if main_libs else len(dirs),
        "verified": False,  # until checked, just below
        "verification": "",
    }
    result["verified"], result["verification"] = _verify(expect, result, cuda_build)
    return result


def used_anyway(record: CudnnRecord, measurements: list[Measurement]) -> str | None:
    """In a cell that disabled cuDNN, what used cuDNN all the same (None: nothing did, or not disabled):
    measurements whose profiled call ran a cuDNN operator or kernel, and cuDNN libraries first mapped
    while the workloads ran (the engine sub-libraries load lazily, when something calls into them).

    ``torch.backends.cudnn.enabled = False`` reaches convolutions, batch norm and RNNs, but torch sends
    ``scaled_dot_product_attention`` to cuDNN's kernel regardless (seen with torch 2.11).
    """
    if record["requested"].get("source") != "disabled":
        return None
    used = [f"{m['workload']} {m['dtype']}" for m in measurements if m.get("what_ran", {}).get("cudnn_used")]
    before = {os.path.basename(p) for p in record.get("loaded_libraries", [])}
    loaded = sorted({os.path.basename(p) for p in record.get("loaded_after_run", [])} - before)
    said = []
    if used:
        listed = ", ".join(used[:5]) + (f" and {len(used) - 5} more" if len(used) > 5 else "")
        said.append(f"{len(used)} measurement(s) ran cuDNN all the same: {listed}")
    if loaded:
        said.append(f"cuDNN libraries were first mapped while the workloads ran: {', '.join(loaded)}")
    return "cuDNN was disabled, yet " + "; and ".join(said) if said else None


def _verify(expect: CudnnRequest, seen: CudnnRecord, cuda_build: bool) -> tuple[bool, str]:
    source, dirs = expect["source"], seen["loaded_dirs"]
    if source == "disabled":
        if seen["enabled"]:
            return False, "cuDNN was to be disabled but torch.backends.cudnn.enabled is True"
        return True, "cuDNN disabled (torch.backends.cudnn.enabled = False)"
    if not cuda_build:
        if source == "bundled":
            return True, "CPU build of torch: there is no cuDNN to load"
        return False, f"asked for a {source} cuDNN, but this torch is a CPU build and loads no cuDNN"
    if not dirs:
        return False, f"asked for a {source} cuDNN, but no libcudnn file is mapped into the process"
    if "lib_dir" not in expect:  # bundled, or (docker) a wheel installed over the pinned one beside torch
        wanted = bundled_lib_dir()
        if source == "bundled" and not os.path.isdir(wanted):
            if len(dirs) == 1:
                return True, f"torch has no cuDNN wheel beside it; it loaded the cuDNN in {dirs[0]}"
            return False, f"torch has no cuDNN wheel and loaded cuDNN from several places: {', '.join(dirs)}"
    else:
        wanted = os.path.realpath(expect["lib_dir"])
    stray = [d for d in dirs if d != wanted]
    if stray:
        return False, f"expected every cuDNN library from {wanted}, but some came from {', '.join(stray)}"
    version = expect.get("version")
    if version and not _same_version(version, seen["runtime_version"]):
        return False, f"expected cuDNN {version}, torch reports {seen['runtime_version']}"
    return True, f"cuDNN {seen['runtime_version']} loaded from {wanted} only"


def _same_version(wanted: str, runtime: str | None) -> bool:
    """'9.14' and '9.14.0.64' both name runtime 9.14.0; '9.1' does not."""
    have = (runtime or "").split(".")
    want = wanted.split(".")
    n = min(len(want), len(have))
    return n > 0 and want[:n] == have[:n] and len(want) >= 2
