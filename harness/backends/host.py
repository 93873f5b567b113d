"""What this host makes of a matrix's conditional cuDNN sources (``plan.model.Host``): where a cell's suite
runs, whether NVIDIA's system cuDNN is installed, and which PyPI releases the package source holds.

The default matrix compares PyTorch's cuDNN with NVIDIA's system cuDNN and PyPI's newest release where the
suite runs on a GPU, and leaves out (naming why) what this host cannot make: planning asks these questions
once, before anything runs, and nothing here installs or downloads a wheel. On a host without an NVIDIA GPU
a source marked for the GPU is decided without a probe or a network request.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.backends import packages
from harness.backends.local import backend as local_backend
from harness.backends.local import cudnn_dirs, cudnn_releases
from harness.errors import Remembered
from harness.plan.axes import NEWEST, CudnnSource
from harness.plan.model import Cell

_UNKNOWN = ""  # a torch build whose CUDA is not known before it is installed (PyPI's default, an image's)


def has_nvidia_gpu() -> bool:
    """Whether this host has an NVIDIA GPU: its driver's tool or its control device is there."""
    return bool(shutil.which("nvidia-smi")) or os.path.exists("/dev/nvidiactl")


def without_a_gpu(cells: Sequence[Cell]) -> str | None:
    """Why ``cells`` cannot show anything on a host with no NVIDIA GPU, where the local backend runs the
    suite on the CPU: a cell of a cuDNN release or a system cuDNN (torch never calls cuDNN there, and a
    CPU build of torch has none to replace); None where none of them is such a cell."""
    chosen = sorted({c.cudnn.label for c in cells if c.cudnn.kind in ("wheel", "system")})
    if not chosen:
        return None
    return (
        f"this host has no NVIDIA GPU: the cells of cuDNN {', '.join(chosen)} need one (on a CPU torch never "
        "calls cuDNN, and a CPU build of torch has none to replace); run this matrix on a GPU host"
    )


@dataclass
class ThisHost:
    """This machine, as a plan asks it (``plan.model.Host``). ``python``: the interpreter of ``torch:
    installed`` cells (default: this one); ``wheels``: where cuDNN wheels come from (the run's index or
    wheelhouse); ``gpu``: whether it has an NVIDIA GPU (default: ``has_nvidia_gpu``)."""

    wheels: packages.PackageSource = field(default_factory=packages.PackageSource)
    python: str = field(default_factory=lambda: sys.executable)
    gpu: bool = field(default_factory=has_nvidia_gpu)
    _probed: local_backend.ProbeAnswer | None = field(default=None, init=False)
    _releases: Remembered[str, packages.Releases] = field(default_factory=Remembered, init=False)

    def device(self, cell: Cell) -> tuple[str, str]:
        if not self.gpu:
            return "cpu", "this host has no NVIDIA GPU"
        build, cuda = self._build(cell)
        if cuda is None:
            return "cpu", f"torch {build} is a CPU build"
        return "cuda", "this host has an NVIDIA GPU" + (
            f" and torch {build} is a CUDA {cuda} build" if cuda else ""
        )

    def source(self, cell: Cell) -> tuple[CudnnSource, str]:
        wanted = cell.cudnn
        if wanted.kind in ("bundled", "disabled"):
            return wanted, ""
        build, cuda = self._build(cell)
        if cuda is None:
            raise LookupError(f"torch {build} is a CPU build: it loads no cuDNN to replace")
        if wanted.kind == "system":
            return wanted, self._system(wanted.value or "auto")
        if cuda == _UNKNOWN:
            raise LookupError(
                f"torch {build} names no CUDA variant, so the cuDNN wheel it takes (nvidia-cudnn-cuNN) is "
                f"not known before it is installed; write it with its variant, e.g. {build}+cu130"
            )
        found = self._available(cudnn_releases.distribution(cuda.split(".")[0]))
        if wanted.value == NEWEST:
            count = f"of {len(found.versions)} releases" if len(found.versions) > 1 else "the only release"
            newest = CudnnSource("wheel", found.newest)
            return newest, f"the newest {found.distribution} ({count}) in {found.where}"
        if wanted.value not in found.versions:
            raise LookupError(
                f"{found.where} holds no {found.distribution} {wanted.value} wheel for this machine "
                f"(it holds {', '.join(found.versions[-6:])})"
            )
        return wanted, f"{found.distribution} {wanted.value} in {found.where}"

    def missing_torch(self, cells: Sequence[Cell]) -> str | None:
        """Why the ``torch: installed`` cells among ``cells`` cannot run here: the interpreter that runs
        them has no torch; None where it has one, or no cell asks for it."""
        asking = sum(cell.torch == "installed" for cell in cells)
        if not asking:
            return None
        if self._probed is None:
            self._probed = local_backend.probe(self.python)
        if self._probed["torch_version"] is not None:
            return None
        which = "every cell asks" if asking == len(cells) else f"{asking} of the {len(cells)} cells ask"
        return (
            f"{self.python} has no torch, and {which} for torch: installed; install torch there, run with "
            "an interpreter that has it, or name a torch build (an environment of its own)"
        )

    def _build(self, cell: Cell) -> tuple[str, str | None]:
        """The cell's torch build in words, and the CUDA it was built for: None for a CPU build, ``_UNKNOWN``
        where only its installation would say. ``torch: installed`` asks the interpreter, once."""
        torch = cell.torch
        if torch == "installed":
            if self._probed is None:
                self._probed = local_backend.probe(self.python)
            version = self._probed["torch_version"]
            if version is None:
                raise LookupError(f"{self.python} has no torch (the cell asks for torch: installed)")
            return f"{version} (installed)", self._probed["torch_cuda"]
        variant = torch.partition("+")[2]
        if variant == "cpu":
            return torch, None
        if variant.startswith("cu") and variant[2:].isdigit():
            return torch, f"{variant[2:-1]}.{variant[-1]}"
        return ("in the image" if torch == "image" else torch), _UNKNOWN

    def _system(self, wanted: str) -> str:
        """Where NVIDIA's system cuDNN ``wanted`` is, in words; LookupError saying where it was looked for."""
        installed = cudnn_dirs.find_system(wanted)
        return f"{installed.version} in {installed.lib_dir}"

    def _available(self, distribution: str) -> packages.Releases:
        """The releases the package source holds, asked once per distribution (a failure too)."""
        return self._releases.get(distribution, lambda: packages.releases(distribution, self.wheels))
