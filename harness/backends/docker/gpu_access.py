"""How a docker cell's container reaches the GPUs: three modes, one least-privilege container.

- ``toolkit``: a device request, what ``docker run --gpus`` does; the NVIDIA Container Toolkit on the
  host injects the device nodes and the driver's libraries.
- ``cdi``: CDI device names (``nvidia.com/gpu=0``) through the engine's CDI driver (Docker 25+ with CDI
  enabled, Podman); the host's CDI spec says what to inject.
- ``devices``: no runtime help at all: the device nodes (``/dev/nvidiaN`` per GPU, ``/dev/nvidiactl``,
  ``/dev/nvidia-uvm``) and the host driver's user-space libraries, mounted read-only. For hosts without
  the toolkit.

Whatever the mode, the container keeps its non-root user, read-only root, no network, no capabilities
and no new privileges: a mode only adds devices, mounts and a library path.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.suite.document import GpuAccess, GpuAccessMode

MODES: tuple[GpuAccessMode, ...] = ("toolkit", "cdi", "devices")
DEFAULT_MODE: GpuAccessMode = "toolkit"
STAGE = "gpu-access"  # a failed run's stage when the host cannot give its container the GPUs
CONTAINER_DRIVER_DIR = "/usr/local/nvidia"  # where the driver's libraries appear in devices mode
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm")
OPTIONAL_NODES = ("/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
# the driver's user-space libraries, as the toolkit's list names them (libcuda, NVML, the PTX JIT, ...)
DRIVER_LIBRARY = re.compile(r"^lib(cuda|cudadebugger|nvidia-[a-z0-9-]+|nvcuvid|nvoptix)\.so[0-9.]*$")

NO_TOOLKIT = (
    "gpu_access toolkit: the Docker engine cannot attach GPUs ({error}). Install the NVIDIA Container "
    "Toolkit (nvidia-container-toolkit), run 'nvidia-ctk runtime configure --runtime=docker' and restart "
    "dockerd; or choose gpu_access: cdi (Docker 25+) or devices (no toolkit needed)"
)
NO_CDI = (
    "gpu_access cdi: the engine cannot resolve CDI devices ({error}). It needs Docker 25 or newer with "
    'CDI on ("features": {{"cdi": true}} in /etc/docker/daemon.json) and a CDI spec from '
    "'nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml'; or choose gpu_access: devices"
)


class GpuAccessError(Exception):
    """The host cannot serve the chosen mode; the message says what to install or set."""


@dataclass(frozen=True)
class Attachment:
    """What a container needs for its GPUs, and what the result records of it."""

    device_requests: list[Any] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # HOST:CONTAINER:rwm
    volumes: dict[str, dict[str, str]] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    record: GpuAccess = field(default_factory=lambda: GpuAccess(mode=DEFAULT_MODE))


def checked_mode(text: str) -> GpuAccessMode:
    """``text`` as a mode (the matrix schema and the command line allow only these)."""
    for mode in MODES:
        if mode == text:
            return mode
    raise GpuAccessError(f"unknown gpu_access {text!r}; choose one of {', '.join(MODES)}")


def attach(mode: GpuAccessMode, gpus: tuple[str, ...], driver_dir: str | None = None) -> Attachment:
    """The container settings that give it ``gpus`` (empty: every GPU) in ``mode``."""
    from docker.types import DeviceRequest

    if mode == "toolkit":
        request = (
            DeviceRequest(device_ids=list(gpus), capabilities=[["gpu"]])
            if gpus
            else DeviceRequest(count=-1, capabilities=[["gpu"]])
        )
        return Attachment(device_requests=[request], record={"mode": mode, "gpus": list(gpus) or ["all"]})
    if mode == "cdi":
        names = [f"nvidia.com/gpu={g}" for g in gpus] or ["nvidia.com/gpu=all"]
        return Attachment(
            device_requests=[DeviceRequest(driver="cdi", device_ids=names)],
            record={"mode": mode, "cdi_devices": names},
        )
    return _devices(gpus, driver_dir)


def explain_engine_error(mode: str, message: str) -> str | None:
    """The engine's refusal of a GPU request, said as what to install or set; None if it is not one."""
    if mode == "cdi" and ("cdi" in message.lower() or "could not select device driver" in message):
        return NO_CDI.format(error=message)
    if "could not select device driver" in message or "nvidia-container-cli" in message:
        return NO_TOOLKIT.format(error=message)
    return None


def _devices(gpus: tuple[str, ...], driver_dir: str | None) -> Attachment:
    if any(not g.isdigit() for g in gpus):
        raise GpuAccessError(
            f"gpu_access devices takes GPU indexes (such as 0,1), not {', '.join(gpus)}: "
            "it passes /dev/nvidiaN for each"
        )
    if gpus:
        nodes = [f"/dev/nvidia{g}" for g in gpus]
    else:
        nodes = sorted(glob.glob("/dev/nvidia[0-9]*"), key=lambda p: int(p.removeprefix("/dev/nvidia")))
    missing = [n for n in (*nodes, *CONTROL_NODES) if not os.path.exists(n)]
    if not nodes or missing:
        raise GpuAccessError(
            "gpu_access devices: "
            + (f"{', '.join(missing)} missing on this host" if missing else "no /dev/nvidiaN on this host")
            + "; load the NVIDIA driver (nvidia-smi must list the GPUs; 'nvidia-modprobe -u -c=0' creates "
            "/dev/nvidia-uvm), or run CPU-only cells"
        )
    nodes += [*CONTROL_NODES, *(n for n in OPTIONAL_NODES if os.path.exists(n))]
    source, volumes = _driver_mounts(driver_dir)
    lib_path = f"{CONTAINER_DRIVER_DIR}/lib64:{CONTAINER_DRIVER_DIR}/lib"
    return Attachment(
        devices=[f"{n}:{n}:rwm" for n in nodes],
        volumes=volumes,
        environment={"LD_LIBRARY_PATH": lib_path},
        record={"mode": "devices", "device_nodes": nodes, "driver_dir": source},
    )


def _driver_mounts(driver_dir: str | None) -> tuple[str, dict[str, dict[str, str]]]:
    """Read-only mounts that put the host driver's libraries under CONTAINER_DRIVER_DIR.

    A folder of the driver's own (as /usr/local/nvidia on GPU clouds) is mounted whole; from a shared
    system folder (/usr/lib/x86_64-linux-gnu) only the driver's files are, each on its own, so the
    image's other libraries are not shadowed.
    """
    chosen = driver_dir or (CONTAINER_DRIVER_DIR if _has_libcuda(Path(CONTAINER_DRIVER_DIR)) else None)
    if chosen is not None:
        folder = Path(chosen)
        if not _has_libcuda(folder):
            raise GpuAccessError(
                f"gpu_access devices: {folder} holds no libcuda.so.1 (looked in it, lib64/ and lib/); "
                "set docker.driver_dir to the folder of the host's NVIDIA driver libraries"
            )
        return str(folder), {str(folder): {"bind": CONTAINER_DRIVER_DIR, "mode": "ro"}}
    libcuda = _ldconfig_libcuda()
    if libcuda is None:
        raise GpuAccessError(
            "gpu_access devices: the host's NVIDIA driver library libcuda.so.1 was not found "
            "(not in /usr/local/nvidia, not in the ld.so cache); install the driver, or set "
            "docker.driver_dir to the folder that holds it"
        )
    folder = libcuda.parent
    volumes = {
        str(path): {"bind": f"{CONTAINER_DRIVER_DIR}/lib64/{path.name}", "mode": "ro"}
        for path in sorted(folder.iterdir())
        if DRIVER_LIBRARY.match(path.name)
    }
    return str(folder), volumes


def _has_libcuda(folder: Path) -> bool:
    return any((folder / sub / "libcuda.so.1").exists() for sub in ("", "lib64", "lib"))


def _ldconfig_libcuda() -> Path | None:
    try:
        listed = subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = [
        (name, Path(target))
        for name, _, target in (line.strip().partition(" => ") for line in listed.splitlines())
        if name.startswith("libcuda.so.1 ")
    ]
    native = [path for name, path in found if "x86-64" in name]  # not the 32-bit copy
    return next(iter(native or [path for _, path in found]), None)
