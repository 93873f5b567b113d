"""The plan's documents: a Cell (one point of the axes, ``axes.AXES``) and the Plan.

A Cell holds one value of each axis and gets a stable id derived from its content, so the same cell
keeps its id (and its results) when other cells are added or removed. Run knobs vary inside a cell's
run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

if TYPE_CHECKING:
    from typing_extensions import NotRequired

from harness.plan.axes import AXES, BY_NAME, Axis, CudnnSource
from harness.suite.settings import SuiteSettings

KNOBS = ("cudnn_benchmark", "deterministic", "tf32")
DEFAULT_REGRESSION_PCT = 5.0
DEFAULT_ALPHA = 0.002  # asv's threshold for the Mann-Whitney U test; needs 7 rounds per side
DEFAULT_ROUNDS = 1
DEFAULT_IMAGE_PYTHON = "/usr/bin/python3"  # torch: image cells, unless docker.image_python names another


@dataclass(frozen=True)
class Cell:
    """One value of each axis (``axes.AXES``: this class's fields, in that order)."""

    torch: str
    cudnn: CudnnSource
    base_image: str = "auto"
    python: str = "installed"

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Cell:
        return cls(**{a.name: a.read(raw.get(a.name, a.default)) for a in AXES})

    def to_json(self) -> AxisValues:
        return {a.name: a.write(getattr(self, a.name)) for a in AXES}

    def text(self, axis: Axis) -> str:
        """This cell's value on ``axis`` as a table shows it."""
        return axis.text(getattr(self, axis.name))

    @property
    def label(self) -> str:
        """Short, readable name of a cell for table headers: torch build and cuDNN source."""
        return " / ".join(a.in_label + self.text(a) for a in AXES if a.in_label is not None)

    @property
    def id(self) -> str:
        """``torch<ver>-<variant>_cudnn-<source>_<hash>``: readable, and unique by content."""
        digest = hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:10]
        slugs = [a.slug(getattr(self, a.name)) for a in AXES if a.slug is not None]
        return "_".join([*slugs, digest])

    def matches(self, selector: Mapping[str, Any]) -> bool:
        return all(BY_NAME[axis].matches(getattr(self, axis), wanted) for axis, wanted in selector.items())


AxisValues = dict[str, str | dict[str, str]]  # a cell's value on each axis, as JSON holds it (``Axis.write``)


class SlurmSection(TypedDict, total=False):
    """A matrix's ``slurm:`` section: how ``run --backend slurm`` asks for each task of its array job."""

    partition: str
    account: str
    time: str  # Slurm's format: minutes, MM:SS, HH:MM:SS or D-HH:MM:SS
    gpus: int
    cpus_per_task: int


class DockerSection(TypedDict, total=False):
    """A matrix's ``docker:`` section: how the docker backend runs cells."""

    gpu_access: str  # toolkit, cdi or devices
    driver_dir: str
    image_python: str


class Thresholds(TypedDict):
    regression_pct: float
    per_workload: dict[str, float]
    alpha: float
    cpu_regression_pct: NotRequired[float]


class LeftOutDocument(TypedDict):
    cell: AxisValues  # as the matrix wrote it: cudnn may be {wheel: newest}
    why: str


class ChosenDocument(TypedDict):
    cell: str  # the id of the cell it became
    written: str | dict[str, str]  # the cuDNN source as the matrix wrote it
    how: str


ELSEWHERE = "only where the suite runs on "  # how a cell left out for its device term says why


@dataclass(frozen=True)
class LeftOut:
    """A cell of the matrix's product that a plan leaves out, as the matrix wrote it, and why: a term of its
    cuDNN source (the device the suite runs on here, or what this host cannot make). Named wherever the
    plan is shown, never run and failed."""

    cell: Cell
    why: str

    @property
    def elsewhere(self) -> bool:
        """Whether it was left out for the device the suite runs on here (not for what the host lacks)."""
        return self.why.startswith(ELSEWHERE)

    def to_json(self) -> LeftOutDocument:
        return {"cell": self.cell.to_json(), "why": self.why}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> LeftOut:
        return cls(Cell.from_json(raw["cell"]), str(raw["why"]))


@dataclass(frozen=True)
class Chosen:
    """What this host made of a conditional cuDNN source: the cell it became and how it was chosen (the
    release ``{wheel: newest}`` found, the system cuDNN ``{system: auto}`` found)."""

    cell_id: str
    written: CudnnSource
    how: str

    def to_json(self) -> ChosenDocument:
        return {"cell": self.cell_id, "written": self.written.to_json(), "how": self.how}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Chosen:
        return cls(str(raw["cell"]), CudnnSource.from_json(raw["written"]), str(raw["how"]))


class Host(Protocol):
    """What the host that plans knows of itself (``backends.host`` answers for this machine): where a cell's
    suite runs, and what it can make of a conditional cuDNN source. Each raises LookupError saying why
    where it cannot answer."""

    def device(self, cell: Cell) -> tuple[str, str]:
        """'cuda' or 'cpu': where the cell's suite runs with ``suite.device: auto``, and why, in words."""
        ...

    def source(self, cell: Cell) -> tuple[CudnnSource, str]:
        """The source the cell's cuDNN is made from here (``{wheel: newest}``: the release it is), and how
        it was found, in words."""
        ...


class PlanSections(TypedDict, total=False):
    """What of a matrix only some backends read, and what only some plans hold: in plan.json only where
    the matrix gave it or the plan made it."""

    slurm: SlurmSection
    docker: DockerSection
    left_out: list[LeftOutDocument]
    chosen: list[ChosenDocument]


class PlanDocument(PlanSections):
    """``plan.json``: a Plan as a document (``schemas/plan.schema.json``)."""

    schema_version: int
    name: str
    backend: str
    source: str
    matrix_sha256: str
    cells: list[AxisValues]
    baseline: str
    knob_sets: list[dict[str, bool]]
    suite: dict[str, Any]
    thresholds: Thresholds
    rounds: int


@dataclass(frozen=True)
class Plan:
    """Everything a run needs, derived from one matrix file; stored as ``plan.json`` with the results."""

    name: str
    backend: str
    cells: tuple[Cell, ...]
    baseline_id: str
    knob_sets: tuple[dict[str, bool], ...]
    suite: SuiteSettings
    regression_pct: float
    per_workload_pct: dict[str, float] = field(default_factory=dict)
    matrix_sha256: str = ""
    source: str = ""
    rounds: int = DEFAULT_ROUNDS
    alpha: float = DEFAULT_ALPHA
    slurm: SlurmSection = field(default_factory=lambda: SlurmSection())
    docker: DockerSection = field(default_factory=lambda: DockerSection())
    left_out: tuple[LeftOut, ...] = ()  # cells of the matrix this host does not run, and why
    chosen: tuple[Chosen, ...] = ()  # what this host made of the matrix's conditional sources
    cpu_regression_pct: float | None = None  # every row's threshold where the rows ran on a CPU

    @property
    def gpu_access(self) -> str:
        return str(self.docker.get("gpu_access", "toolkit"))

    @property
    def image_python(self) -> str:
        return str(self.docker.get("image_python", DEFAULT_IMAGE_PYTHON))

    @property
    def suite_settings_sha256(self) -> str:
        """What of the matrix shapes a cell's measurements, as a hash a result's identity holds: the suite
        section and the knob sets."""
        settings = {"suite": self.suite.to_json(), "knob_sets": list(self.knob_sets)}
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()

    def to_json(self) -> PlanDocument:
        sections = PlanSections()
        if self.slurm:
            sections["slurm"] = self.slurm
        if self.docker:
            sections["docker"] = self.docker
        if self.left_out:  # only where there are: a plan without them hashes as it always did
            sections["left_out"] = [left.to_json() for left in self.left_out]
        if self.chosen:
            sections["chosen"] = [chosen.to_json() for chosen in self.chosen]
        return {
            **sections,
            "schema_version": 1,
            "name": self.name,
            "backend": self.backend,
            "source": self.source,
            "matrix_sha256": self.matrix_sha256,
            "cells": [{"id": c.id, **c.to_json()} for c in self.cells],
            "baseline": self.baseline_id,
            "knob_sets": list(self.knob_sets),
            "suite": self.suite.to_json(),
            "thresholds": self._thresholds(),
            "rounds": self.rounds,
        }

    def _thresholds(self) -> Thresholds:
        found: Thresholds = {
            "regression_pct": self.regression_pct,
            "per_workload": self.per_workload_pct,
            "alpha": self.alpha,
        }
        if self.cpu_regression_pct is not None:  # only where set: a plan without it hashes as it always did
            found["cpu_regression_pct"] = self.cpu_regression_pct
        return found

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Plan:
        return cls(
            name=raw["name"],
            backend=raw["backend"],
            cells=tuple(Cell.from_json(c) for c in raw["cells"]),
            baseline_id=raw["baseline"],
            knob_sets=tuple(raw["knob_sets"]),
            suite=SuiteSettings.from_json(raw["suite"]),
            regression_pct=raw["thresholds"]["regression_pct"],
            per_workload_pct=dict(raw["thresholds"]["per_workload"]),
            matrix_sha256=raw.get("matrix_sha256", ""),
            source=raw.get("source", ""),
            rounds=int(raw.get("rounds", DEFAULT_ROUNDS)),
            alpha=float(raw["thresholds"].get("alpha", DEFAULT_ALPHA)),
            slurm=checked_section(raw, "slurm"),
            docker=checked_section(raw, "docker"),
            left_out=tuple(LeftOut.from_json(left) for left in raw.get("left_out", ())),
            chosen=tuple(Chosen.from_json(chosen) for chosen in raw.get("chosen", ())),
            cpu_regression_pct=raw["thresholds"].get("cpu_regression_pct"),
        )

    def threshold_pct(self, workload: str) -> float:
        return self.per_workload_pct.get(workload, self.regression_pct)

    def cell(self, cell_id: str) -> Cell:
        return next(c for c in self.cells if c.id == cell_id)


def checked_section(document: Mapping[str, Any], name: str) -> Any:
    """A copy of the section ``name`` (empty where it is left out) of a document its schema checked, which
    gave the section its type (``SlurmSection``, ``DockerSection``)."""
    return dict(document.get(name, {}))


@dataclass(frozen=True)
class CellProblem:
    """What a backend cannot realize of a cell, found before anything runs."""

    axis: str | None  # the axis to change (torch, cudnn, base_image, python); None: the axes together
    message: str
