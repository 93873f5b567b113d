"""The cells' images on one Docker engine: rendered once, built once, and what each holds.

Builds go through the docker SDK (the classic builder: the build-only inputs stay in build stages, so
no BuildKit secret is needed). An image is tagged by the hash of its Dockerfile and build context: an
unchanged cell finds its tag and builds nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from harness import jsonio
from harness.backends.docker import dockerfile
from harness.backends.records import log_tail
from harness.plan.axes import CudnnExpectation
from harness.plan.model import Cell, Plan
from harness.suite.probes.image_facts import HeldFacts

with contextlib.suppress(ImportError):  # no docker SDK: docker_engine.connect refuses first
    import docker.errors

if TYPE_CHECKING:
    from docker import DockerClient


class ImageFacts(TypedDict):
    """A built image's provenance, as a result's ``run.image`` records it."""

    reference: str
    id: str
    repo_digests: list[str]
    size_bytes: int | None
    cached: bool
    build_s: float
    base: str
    base_id: str | None
    base_repo_digests: list[str]
    python: str | None
    python_version: str | None
    torch: str | None
    system_cudnn: dict[str, str] | None


@dataclass
class Build:
    """What building one cell's image gave."""

    image: dockerfile.RenderedImage
    image_id: str | None = None
    cached: bool = False
    seconds: float = 0.0
    error: str | None = None
    log_tail: str = ""

    @property
    def cell_id(self) -> str:
        return self.image.cell.id

    @property
    def state(self) -> str:
        return "FAILED" if self.error else ("cached" if self.cached else "built")


class CellImages:
    """Every cell's image on one engine; what each build gave and what each image holds, asked once."""

    def __init__(
        self, client: DockerClient, options: dockerfile.BuildOptions, progress: Callable[[str], None]
    ) -> None:
        self.client = client
        self.options = options
        self.progress = progress
        self.builds: dict[str, Build] = {}
        self._rendered: dict[str, dockerfile.RenderedImage] = {}
        self._facts: dict[str, HeldFacts] = {}

    def render(self, cell: Cell, plan: Plan) -> dockerfile.RenderedImage:
        """The cell's image, rendered once: rendering hashes the whole build context (the wheelhouse too)."""
        if cell.id not in self._rendered:
            self._rendered[cell.id] = dockerfile.render(cell, self.options, plan.image_python)
        return self._rendered[cell.id]

    def build(self, cell: Cell, plan: Plan, log_path: Path) -> Build:
        """Build ``cell``'s image unless an image with its content tag exists already."""
        if cell.id in self.builds:
            return self.builds[cell.id]
        rendered = self.render(cell, plan)
        build = self.builds[cell.id] = Build(rendered)
        start = time.monotonic()
        try:
            build.image_id = _id(self.client.images.get(rendered.reference))
            build.cached = True
            return build
        except docker.errors.ImageNotFound:
            pass
        log_path.parent.parent.mkdir(parents=True, exist_ok=True)
        jsonio.real_folder(log_path.parent)  # where the log is about to be written: never through a link
        with tempfile.TemporaryFile() as context, jsonio.open_for_writing(log_path, "w") as log:
            _write_context(context, rendered)
            context.seek(0)
            try:
                for chunk in self.client.api.build(
                    fileobj=context,
                    custom_context=True,
                    tag=rendered.reference,
                    labels=dockerfile.labels(rendered, plan),
                    network_mode="host",
                    rm=True,
                    forcerm=True,
                    pull=False,
                    decode=True,
                ):
                    text = chunk.get("stream") or chunk.get("status") or ""
                    if text:
                        log.write(text)
                        for line in text.splitlines():
                            if line.startswith("Step ") or line.startswith("Successfully"):
                                self.progress(line)
                    if "error" in chunk:
                        build.error = str(chunk["error"]).strip()
                        log.write(build.error + "\n")
            except docker.errors.APIError as exc:
                build.error = str(exc)
                log.write(build.error + "\n")
        build.seconds = time.monotonic() - start
        if build.error is None:
            try:
                build.image_id = _id(self.client.images.get(rendered.reference))
            except docker.errors.ImageNotFound:
                build.error = "the build ended without an image"
        if build.error is not None:
            build.log_tail = log_tail(log_path)
        return build

    def image_facts(self, build: Build) -> ImageFacts:
        """Provenance of a built image: its id and digests, its base's, and the Python and torch in it."""
        image = self.client.images.get(build.image_id or build.image.reference)
        base_id, base_digests = None, []
        try:
            base = self.client.images.get(build.image.base_image)
            base_id, base_digests = base.id, base.attrs.get("RepoDigests", [])
        except docker.errors.ImageNotFound:
            pass
        held = self.held(_id(image))
        return {
            "reference": build.image.reference,
            "id": _id(image),
            "repo_digests": image.attrs.get("RepoDigests", []),
            "size_bytes": image.attrs.get("Size"),
            "cached": build.cached,
            "build_s": round(build.seconds, 3),
            "base": build.image.base_image,
            "base_id": base_id,
            "base_repo_digests": base_digests,
            "python": held.get("python"),
            "python_version": held.get("python_version"),
            "torch": held.get("torch"),
            "system_cudnn": held.get("system_cudnn"),
        }

    def held(self, image_id: str) -> HeldFacts:
        """What the image holds, as its build wrote it (dockerfile.FACTS_FILE): copied out of a container that
        is created, never started. Empty for an image built before images carried the file."""
        if image_id not in self._facts:
            container = self.client.containers.create(image_id, network_mode="none")
            try:
                stream, _ = container.get_archive(dockerfile.FACTS_FILE)
                with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                    member = tar.extractfile(tar.getmembers()[0])
                    held = json.loads(member.read(1 << 20)) if member is not None else {}
            except (docker.errors.NotFound, tarfile.TarError, ValueError, IndexError):
                held = {}
            finally:
                container.remove(force=True)
            self._facts[image_id] = cast(HeldFacts, held if isinstance(held, dict) else {})
        return self._facts[image_id]


def expected_cudnn(
    cell: Cell, rendered: dockerfile.RenderedImage, image: HeldFacts | ImageFacts
) -> CudnnExpectation:
    """The cuDNN the suite must find loaded: as rendered, or, for {system: image}, as the image holds
    it."""
    if cell.cudnn.kind == "disabled":
        return CudnnExpectation("disabled")
    if cell.cudnn.value == "image":
        found = image.get("system_cudnn") or {}
        lib_dir = found.get("lib_dir", "(no system cuDNN in the image)")
        return CudnnExpectation("system", lib_dir, found.get("version") or None)
    return rendered.expect_cudnn


def _id(image: Any) -> str:
    """The engine's id of an image (the SDK types it optional; the engine always gives one)."""
    image_id: str = image.attrs["Id"]
    return image_id


def _write_context(fileobj: Any, rendered: dockerfile.RenderedImage) -> None:
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        text = rendered.dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
        for name, path in sorted(rendered.context.items()):
            tar.add(path, arcname=name, recursive=False)
