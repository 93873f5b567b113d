"""What a cell image holds, read inside it at build time: ``python -m harness.suite facts``.

Written into the image as ``/opt/harness/image.json``, so the orchestrator learns the image's Python,
its torch and the NVIDIA cuDNN installed system-wide without starting a container (it copies the file
out of a created one). Standard library and torch only, like the rest of the suite.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from typing import TypedDict

_CUDNN_MAIN = re.compile(r"^\s*libcudnn\.so\.(\d+) \(([^)]*)\) => (\S+)$")


class HeldFacts(TypedDict, total=False):
    """What an image holds, as its build wrote it (``python -m harness.suite facts``, into
    ``dockerfile.FACTS_FILE``)."""

    python: str
    python_version: str
    torch: str | None
    torch_dir: str | None
    torch_cuda: str | None
    system_cudnn: dict[str, str] | None  # lib_dir, version: the image's own cuDNN (its apt package)


def collect() -> HeldFacts:
    facts: HeldFacts = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "torch": None,
        "torch_dir": None,
        "torch_cuda": None,
        "system_cudnn": system_cudnn(),
    }
    try:
        import torch
    except ImportError:
        return facts
    facts.update(
        {
            "torch": torch.__version__,
            "torch_dir": os.path.dirname(os.path.realpath(torch.__file__)),
            "torch_cuda": torch.version.cuda,
        }
    )
    return facts


def system_cudnn() -> dict[str, str] | None:
    """NVIDIA's cuDNN as the ld.so cache finds it (its apt package), or None: folder and version.

    The version is read off the library's real file name (libcudnn.so.9.14.0), as its package installs it.
    """
    try:
        listed = subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = [m for m in map(_CUDNN_MAIN.match, listed.splitlines()) if m]
    found.sort(key=lambda m: "x86-64" not in m.group(2))  # the native build before a 32-bit one
    if not found:
        return None
    real = os.path.realpath(found[0].group(3))
    version = re.search(r"\.so\.(\d+\.\d+\.\d+)$", real)
    return {"lib_dir": os.path.dirname(real), "version": version.group(1) if version else ""}
