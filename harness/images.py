"""Render a cell's Dockerfile from the templates in ``images/``, and name its build by content.

Rendering is pure: the same cell and build options give the same Dockerfile, the same build
context and so the same tag, which is how an unchanged cell becomes a cache hit.
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

import harness
from harness import resources
from harness.errors import InputError, Problem
from harness.plan.cuda_bases import CPU_BASE, CUDA_BASES
from harness.plan.model import DEFAULT_IMAGE_PYTHON, Cell, Plan

TEMPLATES = resources.data_dir("images")
SUITE_DIR = Path(__file__).resolve().parent / "suite"
IMAGE_REPO = "cudnn-harness-cell"
FACTS_FILE = "/opt/harness/image.json"  # written at build time by 'python -m harness.suite facts'
LABEL_NS = "io.cudnn-harness"
INDEX_URL = "https://download.pytorch.org/whl/{variant}"
BUILD_DIR = "/tmp/harness-build"  # build stages only; never in the final image
_SAFE = re.compile(r"^[A-Za-z0-9/][A-Za-z0-9_.:/@+-]*$")  # a second guard behind the matrix schema


@dataclass(frozen=True)
class BuildOptions:
    index_url: str | None = None  # default: PyTorch's index for the torch build's CUDA variant
    wheelhouse: Path | None = None  # offline: pip --no-index --find-links
    ca_bundle: Path | None = None  # extra CA bundle for a TLS-intercepting proxy


@dataclass(frozen=True)
class RenderedImage:
    cell: Cell
    dockerfile: str
    context: dict[str, Path] = field(default_factory=dict)  # path in the build context -> file here
    tag: str = ""
    base_image: str = ""
    expect_cudnn: dict[str, str] = field(default_factory=dict)  # what the suite must find inside

    @property
    def reference(self) -> str:
        return f"{IMAGE_REPO}:{self.tag}"


def base_image(cell: Cell) -> str:
    if cell.base_image != "auto":
        return cell.base_image
    variant = cell.torch.split("+")[1]
    return CPU_BASE if variant == "cpu" else CUDA_BASES[variant]  # the docker rules refused any other


def render(
    cell: Cell,
    options: BuildOptions,
    image_python: str = DEFAULT_IMAGE_PYTHON,
    final: str = "cell",
    extra: dict[str, str] | None = None,
) -> RenderedImage:
    """The Dockerfile, build context and content-derived tag of ``cell``'s image.

    ``image_python``: for a ``torch: image`` cell, the base image's Python that holds torch. ``final``: the
    last stage's template, ``cell`` (runs the suite) or ``repro`` (runs a reproducer; ``extra`` fills it).
    """
    if cell.torch == "image":
        return _render_image_torch(cell, image_python)
    if cell.torch == "installed" or cell.python == "installed":
        raise InputError(
            [Problem("matrix", "axes", f"cell {cell.id}: docker cells need a concrete torch and python")]
        )
    _version, variant = cell.torch.split("+")
    base = base_image(cell)
    site = f"/opt/venv/lib/python{cell.python}/site-packages"
    cuda_major = variant[2:-1] if variant.startswith("cu") else ""
    values = {
        "base_image": base,
        "python": cell.python,
        "torch": cell.torch,
        "cuda_major": cuda_major,
        "cudnn_version": cell.cudnn.value or "",
        "site": site,
    }
    for name, value in values.items():
        if value and not _SAFE.match(value):
            raise InputError([Problem("matrix", name, f"{value!r} cannot go into a Dockerfile")])

    context: dict[str, Path] = {}
    inputs = ""
    if options.wheelhouse is not None:
        for wheel in sorted(options.wheelhouse.glob("*.whl")):
            context[f"wheelhouse/{wheel.name}"] = wheel
        inputs += f"COPY wheelhouse/ {BUILD_DIR}/wheelhouse/\n"
        pip_source = f"--no-index --find-links {BUILD_DIR}/wheelhouse"
    else:
        index = options.index_url or INDEX_URL.format(variant=variant)
        if not re.match(r"^https?://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+$", index) or "'" in index:
            raise InputError([Problem("--index-url", "", f"{index!r} is not a plain http(s) URL")])
        pip_source = f"--index-url {index} --extra-index-url https://pypi.org/simple"
    apt_options = ""
    if options.ca_bundle is not None:
        context["ca-bundle.pem"] = options.ca_bundle
        inputs += f"COPY ca-bundle.pem {BUILD_DIR}/ca.pem\nENV PIP_CERT={BUILD_DIR}/ca.pem\n"
        apt_options = f"-o Acquire::https::CAInfo={BUILD_DIR}/ca.pem "

    stanzas = [_template("python", values)]
    stanzas.append(_template("torch", {**values, "build_inputs": inputs, "pip_source": pip_source}))
    kind = cell.cudnn.kind
    expect: dict[str, str] = {"source": kind}
    cudnn_layer = ""
    if kind in ("wheel", "system") and not cuda_major:
        raise InputError(
            [
                Problem(
                    "matrix",
                    "axes.cudnn",
                    f"cell {cell.id}: a CPU build of torch has no cuDNN "
                    f"to replace; use cudnn: bundled or disabled with {cell.torch}",
                )
            ]
        )
    if kind == "wheel":
        stanzas.append(_template("cudnn-wheel", {**values, "pip_source": pip_source}))
        dist = f"nvidia_cudnn_cu{cuda_major}-{cell.cudnn.value}.dist-info"
        cudnn_layer = (
            f"RUN rm -rf {site}/nvidia/cudnn {site}/nvidia_cudnn_cu{cuda_major}-*.dist-info\n"
            f"COPY --from=cudnn {site}/nvidia/cudnn {site}/nvidia/cudnn\n"
            f"COPY --from=cudnn {site}/{dist} {site}/{dist}\n"
        )
        expect["version"] = str(cell.cudnn.value)
    elif kind == "system" and cell.cudnn.value == "image":
        cudnn_layer = _drop_wheel_cudnn(f"{site}/nvidia/cudnn {site}/nvidia_cudnn_cu{cuda_major}-*.dist-info")
    elif kind == "system":
        stanzas.append(
            _template("cudnn-system", {**values, "build_inputs": inputs, "apt_options": apt_options})
        )
        # Exactly one cuDNN: the wheel's copy goes, the apt libraries come in through the ld.so cache.
        cudnn_layer = (
            f"RUN rm -rf {site}/nvidia/cudnn {site}/nvidia_cudnn_cu{cuda_major}-*.dist-info\n"
            "COPY --from=cudnn /opt/cudnn/lib/ /opt/cudnn/lib/\n"
            "RUN echo /opt/cudnn/lib > /etc/ld.so.conf.d/000-harness-cudnn.conf && ldconfig\n"
        )
        expect.update(lib_dir="/opt/cudnn/lib", version=str(cell.cudnn.value))
    stanzas.append(_template(final, {**values, **(extra or {}), "cudnn_layer": cudnn_layer}))
    return _finish(cell, stanzas, context, base, expect, suite=final == "cell")


def _render_image_torch(cell: Cell, image_python: str) -> RenderedImage:
    """A cell on a base that already holds torch (NGC PyTorch, in-house images): no torch layer is built."""
    base = cell.base_image
    values = {"base_image": base, "image_python": image_python}
    for name, value in values.items():
        if not _SAFE.match(value):
            raise InputError([Problem("matrix", name, f"{value!r} cannot go into a Dockerfile")])
    cudnn_layer = ""
    if cell.cudnn.kind == "system":  # the matrix allows only {system: image} with torch: image
        find_site = (
            f"site=$({image_python} -c 'import os, torch; "
            "print(os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__))))')"
        )
        cudnn_layer = _drop_wheel_cudnn('"$site/nvidia/cudnn" "$site"/nvidia_cudnn_cu*.dist-info', find_site)
    stanza = _template("image-torch", {**values, "cudnn_layer": cudnn_layer})
    return _finish(cell, [stanza], {}, base, {"source": cell.cudnn.kind})


def _drop_wheel_cudnn(paths: str, find_site: str = "") -> str:
    """{system: image}: exactly one cuDNN, the base image's; the torch wheel's copy goes."""
    return (
        "RUN set -eu; " + (find_site + "; " if find_site else "") + f"rm -rf {paths}; ldconfig; \\\n"
        "    ldconfig -p | grep -q 'libcudnn[.]so[.]9 ' || { echo 'cudnn {system: image}: the base image "
        "has no NVIDIA cuDNN in its ld.so cache (use an nvidia/cuda:*-cudnn-* or NGC base)' >&2; exit 1; }\n"
    )


def _finish(
    cell: Cell,
    stanzas: list[str],
    context: dict[str, Path],
    base: str,
    expect: dict[str, str],
    suite: bool = True,
) -> RenderedImage:
    header = (
        f"# cell {cell.id}: torch {cell.torch}, cuDNN {cell.cudnn.label}, Python {cell.python}\n"
        f"# rendered by harness {harness.__version__} from images/*.Dockerfile; do not edit\n"
    )
    dockerfile = header + "\n".join(stanzas)
    if suite:  # the cell image runs the suite; a reproducer's image (final="repro") runs repro.py only
        for path in sorted(SUITE_DIR.rglob("*.py")):
            context[f"harness/{path.relative_to(SUITE_DIR.parent)}"] = path
        context["harness/__init__.py"] = SUITE_DIR.parent / "__init__.py"
    digest = _content_hash(dockerfile, context)
    return RenderedImage(cell, dockerfile, context, f"{cell.id}-{digest[:12]}", base, expect)


def labels(image: RenderedImage, plan: Plan) -> dict[str, str]:
    """OCI annotations plus our own: what the image is for, and what built it."""
    return {
        "org.opencontainers.image.title": f"cudnn-harness cell {image.cell.id}",
        "org.opencontainers.image.version": image.tag,
        "org.opencontainers.image.base.name": image.base_image,
        "org.opencontainers.image.source": "cudnn-matrix-harness",
        f"{LABEL_NS}.cell": image.cell.id,
        f"{LABEL_NS}.cell-spec": _canonical(image.cell.to_json()),
        f"{LABEL_NS}.matrix-sha256": plan.matrix_sha256,
        f"{LABEL_NS}.harness-version": harness.__version__,
    }


def _template(name: str, values: dict[str, str]) -> str:
    return string.Template((TEMPLATES / f"{name}.Dockerfile").read_text()).substitute(values)


def _content_hash(dockerfile: str, context: dict[str, Path]) -> str:
    digest = hashlib.sha256(dockerfile.encode())
    for name in sorted(context):
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(context[name].read_bytes()).digest())
    return digest.hexdigest()


def _canonical(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"))
