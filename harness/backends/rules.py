"""What each backend can realize of a matrix's cells: the registry's rules, checked before anything runs."""

from __future__ import annotations

from collections.abc import Sequence

from harness.backends.docker.dockerfile import PLAIN_CUDNN_FIX
from harness.plan.cuda_bases import CUDA_BASES
from harness.plan.model import Cell, CellProblem


def local(cells: Sequence[Cell]) -> list[CellProblem]:
    """The local backend runs the suite in an interpreter that exists: it builds nothing, runs no image."""
    found = []
    named_images: set[str] = set()
    for cell in cells:
        if cell.base_image != "auto" and cell.base_image not in named_images:
            named_images.add(cell.base_image)
            found.append(
                CellProblem(
                    "base_image",
                    f"{cell.base_image!r}: the local backend runs no image, so a "
                    "base_image changes nothing; it needs backend: docker",
                )
            )
        if cell.torch == "image" or cell.cudnn.value == "image":
            what = "torch: image" if cell.torch == "image" else f"cudnn {cell.cudnn.label}"
            found.append(
                CellProblem(
                    "torch" if cell.torch == "image" else "cudnn",
                    f"cell {cell.id}: {what} needs backend: docker; the local backend realizes "
                    "torch: installed or a version (an environment of its own) with cudnn bundled, "
                    "wheel, system (a version, auto or a folder), disabled",
                )
            )
    return found


def docker(cells: Sequence[Cell]) -> list[CellProblem]:
    """The docker backend builds an image per cell: concrete versions, a known or named base image."""
    found = []
    for cell in cells:
        kind, value = cell.cudnn.kind, cell.cudnn.value or ""
        if cell.torch == "image":
            found += _image_torch(cell)
            continue
        if "installed" in (cell.torch, cell.python):
            found.append(
                CellProblem(
                    None,
                    f"cell {cell.id}: 'installed' is for the local backend; backend: docker needs a "
                    "concrete torch (e.g. '2.11.0+cu130', or PyPI's '2.11.0') and python (e.g. '3.12')",
                )
            )
        elif "+" not in cell.torch:
            found += _plain_version(cell)
        elif cell.base_image == "auto" and cell.torch.split("+")[1] not in ("cpu", *CUDA_BASES):
            found.append(
                CellProblem(
                    "torch",
                    f"cell {cell.id}: no CUDA base image is known for "
                    f"{cell.torch.split('+')[1]} (known: {', '.join(CUDA_BASES)}); name one as "
                    "base_image, or pick a known variant",
                )
            )
        elif cell.torch.endswith("+cpu") and kind in ("wheel", "system"):
            found.append(
                CellProblem(
                    "cudnn",
                    f"cell {cell.id}: a CPU build of torch loads no cuDNN; "
                    "pair it with cudnn: bundled or disabled (rules: exclude)",
                )
            )
        if (
            kind == "system"
            and value != "image"
            and (value == "auto" or value.startswith("/") or value.count(".") != 3)
        ):
            found.append(
                CellProblem(
                    "cudnn",
                    f"cell {cell.id}: backend: docker installs NVIDIA's apt package, so system needs its "
                    "full version, e.g. {system: '9.14.0.64'}, or 'image' for the cuDNN already in the base",
                )
            )
    return found


def _plain_version(cell: Cell) -> list[CellProblem]:
    """A plain VERSION is PyPI's default build: pip installs torch==VERSION, but no variant says its CUDA."""
    found = []
    if cell.base_image == "auto":
        found.append(
            CellProblem(
                "base_image",
                f"cell {cell.id}: torch {cell.torch} (PyPI's default build) names no CUDA variant, so "
                "base_image: auto has no image to pick; name a base_image (e.g. nvidia/cuda:13.0.1-base-"
                "ubuntu24.04), or write torch as VERSION+VARIANT such as '2.11.0+cu130'",
            )
        )
    if cell.cudnn.kind == "wheel" or (cell.cudnn.kind == "system" and cell.cudnn.value != "image"):
        found.append(
            CellProblem(
                "cudnn",
                f"cell {cell.id}: cudnn {cell.cudnn.label} needs the CUDA major of torch's build "
                f"(nvidia-cudnn-cuNN, libcudnn9-cuda-NN), which a plain torch {cell.torch} does not say; "
                + PLAIN_CUDNN_FIX,
            )
        )
    return found


def _image_torch(cell: Cell) -> list[CellProblem]:
    """torch: image runs the torch a base image already holds, with that image's own Python."""
    found = []
    if cell.base_image == "auto":
        found.append(
            CellProblem(
                "base_image",
                f"cell {cell.id}: torch: image takes the torch already in the base image, so base_image "
                "must name that image (e.g. nvcr.io/nvidia/pytorch:25.10-py3), not auto",
            )
        )
    if cell.python != "installed":
        found.append(
            CellProblem(
                "python",
                f"cell {cell.id}: torch: image runs the base image's own Python; leave python out and "
                "set docker.image_python if it is not /usr/bin/python3",
            )
        )
    if cell.cudnn.kind == "system" and cell.cudnn.value != "image":
        found.append(
            CellProblem(
                "cudnn",
                f"cell {cell.id}: torch: image takes cudnn bundled (the image's torch as it is), disabled, "
                "{wheel: X} (that release installed over the image's torch's own) or {system: image} "
                "(NVIDIA's cuDNN installed in the image)",
            )
        )
    return found
