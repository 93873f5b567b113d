"""The base image a docker cell with ``base_image: auto`` starts from, per CUDA variant of PyTorch's wheels.

nvidia/cuda "base" flavours (cudart + compat, no cuDNN): the wheel or the apt layer brings cuDNN. A variant
not listed here has no ``auto`` base: the docker rules refuse its cells unless they name a base_image,
rather than build them on another CUDA.
"""

from __future__ import annotations

CUDA_BASES = {
    "cu118": "nvidia/cuda:11.8.0-base-ubuntu22.04",
    "cu121": "nvidia/cuda:12.1.1-base-ubuntu22.04",
    "cu124": "nvidia/cuda:12.4.1-base-ubuntu22.04",
    "cu126": "nvidia/cuda:12.6.3-base-ubuntu24.04",
    "cu128": "nvidia/cuda:12.8.1-base-ubuntu24.04",
    "cu129": "nvidia/cuda:12.9.1-base-ubuntu24.04",
    "cu130": "nvidia/cuda:13.0.1-base-ubuntu24.04",
}
CPU_BASE = "ubuntu:24.04"
