"""The plan's documents: a Cell (one point of the image axes), its cuDNN source, and the Plan.

A Cell is one point of the image axes (torch build x cuDNN source x base image x Python) and
gets a stable id derived from its content, so the same cell keeps its id (and its results)
when other cells are added or removed. Run knobs vary inside a cell's run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.suite.settings import SuiteSettings

CudnnKind = Literal["bundled", "disabled", "wheel", "system"]
AXES = ("torch", "cudnn", "base_image", "python")
AXIS_DEFAULTS = {"base_image": "auto", "python": "installed"}
KNOBS = ("cudnn_benchmark", "deterministic", "tf32")
DEFAULT_REGRESSION_PCT = 5.0
DEFAULT_ALPHA = 0.002  # asv's threshold for the Mann-Whitney U test; needs 7 rounds per side
DEFAULT_ROUNDS = 1
DEFAULT_IMAGE_PYTHON = "/usr/bin/python3"  # torch: image cells, unless docker.image_python names another


@dataclass(frozen=True)
class CudnnSource:
    kind: CudnnKind
    value: str | None = None  # version, 'auto' or a directory for system; version for wheel

    @classmethod
    def from_json(cls, raw: str | Mapping[str, str]) -> CudnnSource:
        if isinstance(raw, str):
            return cls(raw)  # type: ignore[arg-type]
        ((kind, value),) = raw.items()
        return cls(kind, value)  # type: ignore[arg-type]

    def to_json(self) -> str | dict[str, str]:
        return self.kind if self.value is None else {self.kind: self.value}

    @property
    def label(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value}"


@dataclass(frozen=True)
class Cell:
    torch: str
    cudnn: CudnnSource
    base_image: str = "auto"
    python: str = "installed"

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Cell:
        return cls(
            torch=raw["torch"],
            cudnn=CudnnSource.from_json(raw["cudnn"]),
            base_image=raw.get("base_image", AXIS_DEFAULTS["base_image"]),
            python=raw.get("python", AXIS_DEFAULTS["python"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "torch": self.torch,
            "cudnn": self.cudnn.to_json(),
            "base_image": self.base_image,
            "python": self.python,
        }

    @property
    def label(self) -> str:
        """Short, readable name of a cell for table headers: torch build and cuDNN source."""
        return f"{self.torch} / cuDNN {self.cudnn.label}"

    @property
    def id(self) -> str:
        """``torch<ver>-<variant>_cudnn-<source>_<hash>``: readable, and unique by content."""
        digest = hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:10]
        torch = (
            f"torch-{self.torch}"
            if self.torch in ("installed", "image")
            else "torch" + self.torch.replace("+", "-")
        )
        source: str = self.cudnn.kind
        if self.cudnn.value is not None:
            value = "path" if self.cudnn.value.startswith("/") else self.cudnn.value
            source += f"-{value}"
        return f"{torch}_cudnn-{source}_{digest}"

    def matches(self, selector: Mapping[str, Any]) -> bool:
        for axis, wanted in selector.items():
            if axis == "cudnn":
                if wanted in ("wheel", "system"):
                    if self.cudnn.kind != wanted:
                        return False
                elif CudnnSource.from_json(wanted) != self.cudnn:
                    return False
            elif getattr(self, axis) != wanted:
                return False
        return True


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
    # where a run starts: a sequential qualification's later rounds run the plan again from round n, for
    # its undecided rows only; never written to plan.json (the folder keeps the whole plan)
    first_round: int = 1
    slurm: dict[str, Any] = field(default_factory=dict)  # how 'run --backend slurm' asks for each task
    docker: dict[str, Any] = field(default_factory=dict)  # gpu_access, driver_dir, image_python

    @property
    def gpu_access(self) -> str:
        return str(self.docker.get("gpu_access", "toolkit"))

    @property
    def image_python(self) -> str:
        return str(self.docker.get("image_python", DEFAULT_IMAGE_PYTHON))

    def to_json(self) -> dict[str, Any]:
        return {
            **({"slurm": self.slurm} if self.slurm else {}),
            **({"docker": self.docker} if self.docker else {}),
            "schema_version": 1,
            "name": self.name,
            "backend": self.backend,
            "source": self.source,
            "matrix_sha256": self.matrix_sha256,
            "cells": [{"id": c.id, **c.to_json()} for c in self.cells],
            "baseline": self.baseline_id,
            "knob_sets": list(self.knob_sets),
            "suite": self.suite.to_json(),
            "thresholds": {
                "regression_pct": self.regression_pct,
                "per_workload": self.per_workload_pct,
                "alpha": self.alpha,
            },
            "rounds": self.rounds,
        }

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
            slurm=dict(raw.get("slurm", {})),
            docker=dict(raw.get("docker", {})),
        )

    def threshold_pct(self, workload: str) -> float:
        return self.per_workload_pct.get(workload, self.regression_pct)

    def cell(self, cell_id: str) -> Cell:
        return next(c for c in self.cells if c.id == cell_id)


@dataclass(frozen=True)
class CellProblem:
    """What a backend cannot realize of a cell, found before anything runs."""

    axis: str | None  # the axis to change (torch, cudnn, base_image, python); None: the axes together
    message: str
