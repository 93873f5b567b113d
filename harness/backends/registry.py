"""The backends by name: what each can realize of a matrix, how to make one, and its settings as a document.

Adding a backend: a module with a class that is a ``base.Backend``, its cell rules in ``rules``, and an
entry in ``KINDS``. The local GPU pool and Slurm run any backend's cells, Kubernetes the docker backend's
images (``realizing``); a Slurm task makes its backend again from the ``Settings`` the submission wrote
(``to_json``/``from_json``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from harness import suite_listing
from harness.backends import rules
from harness.backends.base import Backend
from harness.backends.docker.dockerfile import BuildOptions
from harness.backends.packages import PackageSource
from harness.plan.model import Cell, CellProblem, Plan
from harness.suite.document import Identity

Progress = Callable[[str], None]
IdentityOf = Callable[[Cell], Identity]  # a backend's identity function for a plan


class BuildDocument(TypedDict, total=False):
    """Where a backend's packages come from, and a CA bundle for the docker backend's builds."""

    index_url: str | None
    wheelhouse: str | None  # a path, resolved
    ca_bundle: str | None


class _Required(TypedDict):
    backend: str
    timeout_s: float


class SettingsDocument(_Required, total=False):
    """``Settings`` as a document (the settings part of ``schemas/slurm-tasks.schema.json``)."""

    python: str  # local
    memory: str | None  # docker
    gpu_access: str | None  # docker
    build: BuildDocument


@dataclass(frozen=True)
class Settings:
    """How to make a backend: what the command line and the matrix say of it."""

    backend: str
    timeout_s: float = 3600.0
    python: str | None = None  # local: the interpreter with torch (default: this one)
    # docker: how images are built; local: where cell environments and cuDNN wheels come from
    memory: str | None = None  # docker: a memory limit per container
    gpu_access: str | None = None  # docker: overrides the matrix's docker.gpu_access
    gpus: str = "all"  # docker: the GPUs a container gets where a run names none
    build: BuildOptions = field(default_factory=BuildOptions)

    def to_json(self) -> SettingsDocument:
        """The settings as the Slurm tasks file holds them (``schemas/slurm-tasks.schema.json``)."""
        index_url, wheelhouse = self.build.packages.index_url, _resolved(self.build.packages.wheelhouse)
        if self.backend == "local":  # the interpreter by name, so every node runs the one asked for
            return {
                "backend": "local",
                "python": self.python or sys.executable,
                "timeout_s": self.timeout_s,
                "build": {"index_url": index_url, "wheelhouse": wheelhouse},
            }
        return {
            "backend": self.backend,
            "timeout_s": self.timeout_s,
            "memory": self.memory,
            "gpu_access": self.gpu_access,
            "build": {
                "index_url": index_url,
                "wheelhouse": wheelhouse,
                "ca_bundle": _resolved(self.build.ca_bundle),
            },
        }

    @classmethod
    def from_json(cls, raw: SettingsDocument) -> Settings:
        """Settings from a document the schema checked."""
        build = raw.get("build") or {}
        return cls(
            backend=raw["backend"],
            timeout_s=float(raw["timeout_s"]),
            python=raw.get("python"),
            memory=raw.get("memory"),
            gpu_access=raw.get("gpu_access"),
            build=BuildOptions(
                PackageSource(
                    index_url=build.get("index_url"),
                    wheelhouse=_path(build.get("wheelhouse")),
                ),
                ca_bundle=_path(build.get("ca_bundle")),
            ),
        )


def _resolved(path: Path | None) -> str | None:
    return str(path.resolve()) if path else None


def _path(text: str | None) -> Path | None:
    return Path(text) if text else None


@dataclass(frozen=True)
class Kind:
    name: str
    cell_problems: Callable[[Sequence[Cell]], list[CellProblem]]
    create: Callable[[Settings, Progress | None], Backend]
    # a kept result's identity where the backend cannot run (a Slurm login node has no Docker engine)
    identity: Callable[[Settings, Plan], IdentityOf]


def _local(settings: Settings, progress: Progress | None) -> Backend:
    from harness.backends.local.backend import LocalBackend

    source = settings.build.packages
    return LocalBackend(settings.python, timeout_s=settings.timeout_s, progress=progress, source=source)


def _local_identity(settings: Settings, plan: Plan) -> IdentityOf:
    backend = _local(settings, None)
    return lambda cell: backend.identity(cell, plan)


def _docker(settings: Settings, progress: Progress | None) -> Backend:
    from harness.backends.docker.backend import DockerBackend

    return DockerBackend(
        settings.build,
        timeout_s=settings.timeout_s,
        gpus=settings.gpus,
        memory=settings.memory,
        progress=progress,
        gpu_access=settings.gpu_access,
    )


def _docker_identity(settings: Settings, plan: Plan) -> IdentityOf:
    from harness.backends.docker import dockerfile
    from harness.backends.docker.backend import image_identity

    version = suite_listing.listing()["suite_version"]
    return lambda cell: image_identity(
        version, plan, dockerfile.render(cell, settings.build, plan.image_python).reference
    )


KINDS = {
    "local": Kind("local", rules.local, _local, _local_identity),
    "docker": Kind("docker", rules.docker, _docker, _docker_identity),
}


def cell_problems(backend: str, cells: Sequence[Cell]) -> list[CellProblem]:
    """What ``backend`` cannot realize of ``cells`` (the matrix's loader asks, through ``matrix.load``)."""
    return KINDS[backend].cell_problems(cells)


def realizing(backend: str | None) -> str | None:
    """Which backend builds the cells of a run asked with ``--backend`` (None: the matrix's own).
    Kubernetes runs the docker backend's images; Slurm runs the matrix's own backend on its nodes."""
    return {"k8s": "docker", "slurm": None}.get(backend or "", backend)


def create(settings: Settings, progress: Progress | None = None) -> Backend:
    return KINDS[settings.backend].create(settings, progress)


def identity(settings: Settings, plan: Plan) -> IdentityOf:
    return KINDS[settings.backend].identity(settings, plan)
