"""Render a cell's Dockerfile from the templates in ``images/``, and name its build by content.

Rendering is pure: the same cell and build options give the same Dockerfile, the same build
context and so the same tag, which is how an unchanged cell becomes a cache hit.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import string
from dataclasses import dataclass, field
from pathlib import Path

import harness
from harness import jsonio, resources
from harness.backends import packages
from harness.backends.packages import PackageSource
from harness.errors import InputError, Problem
from harness.plan.axes import CudnnExpectation
from harness.plan.cuda_bases import CPU_BASE, CUDA_BASES
from harness.plan.model import DEFAULT_IMAGE_PYTHON, Cell, Plan

TEMPLATES = resources.data_dir("images")
SUITE_DIR = resources.PACKAGE / "suite"
IMAGE_REPO = "cudnn-harness-cell"
FACTS_FILE = "/opt/harness/image.json"  # written at build time by 'python -m harness.suite facts'
LABEL_NS = "io.cudnn-harness"
INDEX_URL = "https://download.pytorch.org/whl/{variant}"
PYPI_URL = "https://pypi.org/simple"  # a plain torch version (no +VARIANT) is PyPI's default build
BUILD_DIR = "/tmp/harness-build"  # build stages only; never in the final image
# Every value a Dockerfile gets is checked whole (fullmatch: Python's '$' lets a trailing newline through, and
# a line break ends an instruction); the matrix schema checked them first, this is the guard at the file.
_SAFE = re.compile(r"[A-Za-z0-9/][A-Za-z0-9_.:/@+-]*")
_SAFE_FIX = "use the matrix's form: letters, digits and . _ : / @ + - (no spaces, quotes or line breaks)"
# An index URL goes into RUN lines, quoted for the shell there; beyond that, only RFC 3986's characters less
# those a shell or a Dockerfile reads even in quotes or that a URL need not hold as they are.
INDEX_URL_FORM = re.compile(r"https?://[A-Za-z0-9._~:/?#\[\]@!&()*+,;=%-]+")
INDEX_URL_FIX = "http(s)://host/path, with spaces, quotes, '$', '`', '\\' and non-ASCII percent-encoded"
# {wheel: X} and {system: X} need the CUDA major of torch's build; a plain version hides it
PLAIN_CUDNN_FIX = "name the variant, e.g. '2.11.0+cu130', to choose a cuDNN wheel or system package"


@dataclass(frozen=True)
class BuildOptions:
    # the index (default: PyTorch's for torch's variant; PyPI for a plain version) or, offline, a wheelhouse
    packages: PackageSource = field(default_factory=PackageSource)
    ca_bundle: Path | None = None  # extra CA bundle for a TLS-intercepting proxy


@dataclass(frozen=True)
class RenderedImage:
    cell: Cell
    dockerfile: str
    context: dict[str, Path]  # path in the build context -> file here
    tag: str
    base_image: str
    expect_cudnn: CudnnExpectation  # what the suite must find inside

    @property
    def reference(self) -> str:
        return f"{IMAGE_REPO}:{self.tag}"


def base_image(cell: Cell) -> str:
    if cell.base_image != "auto":
        return cell.base_image
    variant = cell.torch.partition("+")[2]
    if variant != "cpu" and variant not in CUDA_BASES:  # the docker rules refused it: a library caller
        why = f"cell {cell.id}: no base image known for torch {cell.torch}; name one as base_image"
        raise InputError([Problem("matrix", "base_image", why)])
    return CPU_BASE if variant == "cpu" else CUDA_BASES[variant]


def _check(values: dict[str, str]) -> None:
    bad = [
        Problem("matrix", name, f"{value!r} cannot go into a Dockerfile: {_SAFE_FIX}")
        for name, value in values.items()
        if value and not _SAFE.fullmatch(value)
    ]
    if bad:
        raise InputError(bad)


def _index_url(url: str) -> str:
    """``url`` as one word of a RUN line's shell command."""
    if not INDEX_URL_FORM.fullmatch(url):
        why = f"{url!r} is not a plain http(s) URL: {INDEX_URL_FIX}"
        raise InputError([Problem("index_url", "", why, setting="index_url")])
    return shlex.quote(url)


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
    given = {"torch": cell.torch, "python": cell.python, "base_image": cell.base_image}
    _check({**given, "cudnn_version": cell.cudnn.value or "", **(extra or {})})
    if cell.torch == "image":
        return _render_image_torch(cell, options, image_python)
    if "installed" in (cell.torch, cell.python):
        why = f"cell {cell.id}: docker cells need a concrete torch (VERSION or VERSION+VARIANT) and python"
        raise InputError([Problem("matrix", "axes", why)])
    variant = cell.torch.partition("+")[2]  # '' for a plain version: PyPI's default build
    _check_cudnn(cell, variant)
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
    _check(values)

    context: dict[str, Path] = {}
    inputs = ""
    if options.packages.wheelhouse is not None:
        for wheel in packages.wheels(options.packages.wheelhouse):  # regular files only: hashed, then copied
            context[f"wheelhouse/{wheel.name}"] = wheel
        inputs += f"COPY wheelhouse/ {BUILD_DIR}/wheelhouse/\n"
    pip_source = _pip_source(variant, options)
    apt_options = ""
    if options.ca_bundle is not None:
        context["ca-bundle.pem"] = options.ca_bundle
        inputs += f"COPY ca-bundle.pem {BUILD_DIR}/ca.pem\nENV PIP_CERT={BUILD_DIR}/ca.pem\n"
        apt_options = f"-o Acquire::https::CAInfo={BUILD_DIR}/ca.pem "

    stanzas = [_template("python", values)]
    stanzas.append(_template("torch", {**values, "build_inputs": inputs, "pip_source": pip_source}))
    kind = cell.cudnn.kind
    expect = CudnnExpectation(kind)
    cudnn_layer = ""
    if kind == "wheel":
        stanzas.append(_template("cudnn-wheel", {**values, "pip_source": pip_source}))
        dist = f"nvidia_cudnn_cu{cuda_major}-{cell.cudnn.value}.dist-info"
        cudnn_layer = (
            f"RUN rm -rf {site}/nvidia/cudnn {site}/nvidia_cudnn_cu{cuda_major}-*.dist-info\n"
            f"COPY --from=cudnn {site}/nvidia/cudnn {site}/nvidia/cudnn\n"
            f"COPY --from=cudnn {site}/{dist} {site}/{dist}\n"
        )
        expect = CudnnExpectation(kind, version=str(cell.cudnn.value))
    elif kind == "system" and cell.cudnn.value == "image":
        wheels = f"nvidia_cudnn_cu{cuda_major or '*'}-*.dist-info"  # a plain version's CUDA major is unsaid
        cudnn_layer = _drop_wheel_cudnn(f"{site}/nvidia/cudnn {site}/{wheels}")
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
        expect = CudnnExpectation(kind, "/opt/cudnn/lib", str(cell.cudnn.value))
    stanzas.append(_template(final, {**values, **(extra or {}), "cudnn_layer": cudnn_layer}))
    return _finish(cell, stanzas, context, base, expect, suite=final == "cell")


def _pip_source(variant: str, options: BuildOptions) -> str:
    """Where pip finds torch: the wheelhouse alone; else PyTorch's index for ``variant`` with PyPI beside it
    (the dependencies), or for a plain version (no variant) PyPI, whose default build it is. ``index_url``
    replaces either index."""
    if options.packages.wheelhouse is not None:
        return f"--no-index --find-links {BUILD_DIR}/wheelhouse"
    if not variant:
        return f"--index-url {_index_url(options.packages.index_url or PYPI_URL)}"
    index = _index_url(options.packages.index_url or INDEX_URL.format(variant=variant))
    return f"--index-url {index} --extra-index-url {PYPI_URL}"


def _check_cudnn(cell: Cell, variant: str) -> None:
    """{wheel: X} and {system: X} need the CUDA major of torch's build (nvidia-cudnn-cuNN,
    libcudnn9-cuda-NN): a CPU build has no cuDNN to replace, a plain version does not say it."""
    if cell.cudnn.kind not in ("wheel", "system") or variant.startswith("cu"):
        return
    if not variant and cell.cudnn.value == "image":  # removes whichever cuDNN wheel torch pinned
        return
    why = (
        f"a CPU build of torch has no cuDNN to replace; use cudnn: bundled or disabled with {cell.torch}"
        if variant
        else f"a plain torch {cell.torch} does not say its CUDA major; {PLAIN_CUDNN_FIX}"
    )
    raise InputError([Problem("matrix", "axes.cudnn", f"cell {cell.id}: {why}")])


def _render_image_torch(cell: Cell, options: BuildOptions, image_python: str) -> RenderedImage:
    """A cell on a base that already holds torch (NGC PyTorch, in-house images): no torch layer is built."""
    base = cell.base_image
    values = {"base_image": base, "image_python": image_python, "cudnn_version": cell.cudnn.value or ""}
    _check(values)
    find_site = (
        f"site=$({image_python} -c 'import os, torch; "
        "print(os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__))))')"
    )
    cudnn_layer = ""
    context: dict[str, Path] = {}
    expect = CudnnExpectation(cell.cudnn.kind)
    if cell.cudnn.kind == "system":  # the matrix allows only {system: image} with torch: image
        cudnn_layer = _drop_wheel_cudnn('"$site/nvidia/cudnn" "$site"/nvidia_cudnn_cu*.dist-info', find_site)
    elif cell.cudnn.kind == "wheel":
        cudnn_layer, context = _image_torch_wheel(str(cell.cudnn.value), options, image_python, find_site)
        expect = CudnnExpectation("wheel", version=str(cell.cudnn.value))
    stanza = _template("image-torch", {**values, "cudnn_layer": cudnn_layer})
    return _finish(cell, [stanza], context, base, expect)


def _image_torch_wheel(
    version: str, options: BuildOptions, image_python: str, find_site: str
) -> tuple[str, dict[str, Path]]:
    """{wheel: X} over a base image's own torch: the release's wheel (from the wheelhouse, else downloaded
    with the image's pip) unpacked in place of the cuDNN wheel beside that torch, so exactly one cuDNN
    is there. The CUDA major (cu12, cu13) is the image's torch's."""
    context: dict[str, Path] = {}
    wheels = f"{BUILD_DIR}/cudnn-wheel"
    if options.packages.wheelhouse is not None:
        found = packages.wheels(options.packages.wheelhouse, f"nvidia_cudnn_cu*-{version}-*.whl")
        if not found:
            raise InputError(
                [
                    Problem(
                        str(options.packages.wheelhouse),
                        "wheelhouse",
                        f"holds no nvidia_cudnn_cuNN-{version}-*.whl for cudnn {{wheel: {version}}}; "
                        f"add it (pip download --no-deps nvidia-cudnn-cu13=={version} -d DIR)",
                        setting="wheelhouse",
                    )
                ]
            )
        context = {f"cudnn-wheel/{wheel.name}": wheel for wheel in found}
        fetch = f"COPY cudnn-wheel/ {wheels}/\n"
        download = ""
    else:
        index = f"--index-url {_index_url(options.packages.index_url)} " if options.packages.index_url else ""
        fetch = ""
        download = (
            f"{image_python} -m pip download --no-cache-dir --disable-pip-version-check --no-deps "
            f'--only-binary=:all: {index}-d {wheels} "nvidia-cudnn-cu$cu=={version}"; '
        )
    layer = (
        fetch + "RUN set -eu; " + find_site + "; "
        f"cu=$({image_python} -c 'import torch; print(torch.version.cuda.split(\".\")[0])'); "
        + download
        + f"wheel=$(ls {wheels}/nvidia_cudnn_cu$cu-{version}-*.whl | head -n 1); "
        '[ -n "$wheel" ] || { echo "no nvidia-cudnn-cu$cu '
        + version
        + " wheel for this image's torch\" >&2; exit 1; }; \\\n"
        '    rm -rf "$site/nvidia/cudnn" "$site"/nvidia_cudnn_cu*.dist-info; '
        f'{image_python} -m zipfile -e "$wheel" "$site"; rm -rf {wheels}\n'
    )
    return layer, context


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
    expect: CudnnExpectation,
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
        digest.update(jsonio.file_sha256(context[name]))  # in chunks: a torch wheel is never read whole
    return digest.hexdigest()


def _canonical(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"))
