"""Capture the environment that decides the numbers: host, Python, torch, GPU, driver."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

import torch

from harness.suite.document import Environment, GpuFacts, HostFacts
from harness.suite.probes.gpu_state import nvml_device

# Variables that change which libraries load or how kernels behave; recorded verbatim.
RELEVANT_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "CUBLAS_WORKSPACE_CONFIG",
    "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "CUDNN_LOGLEVEL_DBG",
    "TORCH_CUDNN_V8_API_DISABLED",
    "NVIDIA_TF32_OVERRIDE",
    "OMP_NUM_THREADS",
)
NVIDIA_SMI_FIELDS = (
    "driver_version",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "power.limit",
    "temperature.gpu",
    "persistence_mode",
    "ecc.mode.current",
    "mig.mode.current",
    "pci.bus_id",
)


def collect(device: str) -> Environment:
    return {
        "host": _host(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "torch": {
            "version": torch.__version__,
            "git_version": getattr(torch.version, "git_version", None),
            "cuda": torch.version.cuda,
            "debug": bool(torch.version.debug),
            "path": os.path.dirname(torch.__file__),
            "num_threads": torch.get_num_threads(),
        },
        "gpu": _gpu() if device.startswith("cuda") else None,
        "env": {name: os.environ[name] for name in RELEVANT_ENV if name in os.environ},
    }


def torch_verification(wanted: str) -> tuple[bool, str]:
    """Whether the torch this process imported is the build the cell asks for: '2.13.0+cpu' is that build
    only, a bare '2.13.0' (PyPI's) any local variant of 2.13.0; 'installed' and 'image' take any."""
    have = torch.__version__
    if (
        wanted in ("installed", "image")
        or have == wanted
        or ("+" not in wanted and have.split("+")[0] == wanted)
    ):
        return True, f"torch {have} from {os.path.dirname(torch.__file__)}"
    return (
        False,
        f"the cell asks for torch {wanted}, but this process imported torch {have} from {torch.__file__}",
    )


def _host() -> HostFacts:
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
    }


def device_uuid(index: int) -> str | None:
    """The UUID CUDA gives its device ``index`` (what names it to NVML and nvidia-smi), None where the torch
    build gives none."""
    return str(getattr(torch.cuda.get_device_properties(index), "uuid", "")) or None


def _gpu() -> GpuFacts:
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    info: GpuFacts = {
        "index": index,
        "name": props.name,
        "uuid": device_uuid(index),
        "capability": f"{props.major}.{props.minor}",
        "total_memory_bytes": props.total_memory,
        "multiprocessors": props.multi_processor_count,
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "device_count": torch.cuda.device_count(),
    }
    # nvidia-smi numbers the host's GPUs, not CUDA's visible ones: the UUID names this one to it
    device = nvml_device(index, info["uuid"], os.environ.get("CUDA_VISIBLE_DEVICES"))
    info["nvidia_smi"] = _nvidia_smi(str(device)) if device is not None else None
    info["driver_version"] = (info["nvidia_smi"] or {}).get("driver_version")
    return info


def _nvidia_smi(device: str) -> dict[str, str] | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, f"--id={device}", f"--query-gpu={','.join(NVIDIA_SMI_FIELDS)}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    values = [v.strip() for v in out.split(",")]
    return (
        dict(zip(NVIDIA_SMI_FIELDS, values, strict=False)) if len(values) == len(NVIDIA_SMI_FIELDS) else None
    )
