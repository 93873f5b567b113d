"""Load and check ``matrix.yaml``; expand it into Cells and a Plan.

A Cell is one point of the image axes (torch build x cuDNN source x base image x Python) and
gets a stable id derived from its content, so the same cell keeps its id (and its results)
when other cells are added or removed. Run knobs vary inside a cell's run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness import schemas, yamlfile
from harness.cuda_bases import CUDA_BASES
from harness.errors import InputError, Problem

CudnnKind = Literal["bundled", "disabled", "wheel", "system"]
AXES = ("torch", "cudnn", "base_image", "python")
AXIS_DEFAULTS = {"base_image": "auto", "python": "installed"}
KNOBS = ("cudnn_benchmark", "deterministic", "tf32")
# min_time_s: nvbench's 0.5 s; with it two processes of one cell agreed to p95 0.56 % on kernel-level
# workloads on an H100 (reports/gpu-aa-kernels), against 1.54 % with 0.1 s (reports/gpu-suite-default).
DEFAULT_SUITE = {
    "profile": "smoke",
    "device": "auto",
    "dtypes": ["fp32", "bf16"],
    "time_budget_s": 2.0,
    "min_time_s": 0.5,
}
DEFAULT_REGRESSION_PCT = 5.0
DEFAULT_ALPHA = 0.002  # asv's threshold for the Mann-Whitney U test; needs 7 rounds per side
DEFAULT_ROUNDS = 1
# A matrix is expanded in memory before rules apply; 10^6 cells took a minute and 1.4 GB. 1024 cells is
# already more GPU time than any qualification we run (each cell is an image and rounds of the suite).
MAX_CELLS = 1024
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
    def id(self) -> str:
        """``torch<ver>-<variant>_cudnn-<source>_<hash>``: readable, and unique by content."""
        digest = hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:10]
        torch = (
            f"torch-{self.torch}"
            if self.torch in ("installed", "image")
            else "torch" + self.torch.replace("+", "-")
        )
        source = self.cudnn.kind
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
    suite: dict[str, Any]
    regression_pct: float
    per_workload_pct: dict[str, float] = field(default_factory=dict)
    matrix_sha256: str = ""
    source: str = ""
    rounds: int = DEFAULT_ROUNDS
    alpha: float = DEFAULT_ALPHA
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
            "suite": self.suite,
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
            suite=dict(raw["suite"]),
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


def load(path: Path, known_workloads: Iterable[str] | None = None) -> Plan:
    """Read, validate and expand a matrix file. Raises InputError listing every problem found."""
    data, line_of = yamlfile.load(path)
    source = str(path)
    found = schemas.problems("matrix", data, source, line_of)
    if found:
        raise InputError(found)

    def problem(json_path: list[Any], message: str) -> Problem:
        return Problem(source, schemas.field_name(json_path), message, line_of(json_path))

    found = []
    axes = {axis: data["axes"].get(axis, [AXIS_DEFAULTS.get(axis)]) for axis in AXES}
    expanded = math.prod(len(values) for values in axes.values())
    if expanded > MAX_CELLS:
        sizes = " x ".join(f"{len(axes[a])} {a}" for a in AXES)
        raise InputError([problem(["axes"], f"expands to {expanded} cells ({sizes}); at most {MAX_CELLS}: split "
                                  "the matrix into several, or list fewer values per axis")])  # fmt: skip
    cells = [
        Cell(torch=t, cudnn=CudnnSource.from_json(c), base_image=b, python=p)
        for t, c, b, p in itertools.product(*(axes[a] for a in AXES))
    ]
    rules = data.get("rules", {})
    for i, selector in enumerate(rules.get("exclude", [])):
        kept = [c for c in cells if not c.matches(selector)]
        if len(kept) == len(cells):
            found.append(problem(["rules", "exclude", i], "matches no cell; fix or remove this rule"))
        cells = kept
    for i, raw in enumerate(rules.get("include", [])):
        extra = Cell.from_json(raw)
        if extra in cells:
            found.append(
                problem(["rules", "include", i], "is already a cell of the matrix; remove this rule")
            )
        else:
            cells.append(extra)
    if not cells:
        found.append(problem(["rules"], "the rules leave no cell to run"))
    if len(cells) > MAX_CELLS:
        found.append(problem(["rules", "include"], f"the matrix has {len(cells)} cells; at most {MAX_CELLS}"))

    backend = data.get("backend", "local")
    found += _backend_problems(backend, cells, problem)

    baseline = [c for c in cells if c.matches(data["baseline"])]
    if len(baseline) != 1:
        which = ", ".join(c.id for c in baseline[:5]) if baseline else "none"
        which += f" and {len(baseline) - 5} more" if len(baseline) > 5 else ""
        found.append(problem(["baseline"], f"must match exactly one cell; matches {which}"))

    suite = {**DEFAULT_SUITE, **data.get("suite", {})}
    thresholds = data.get("thresholds", {})
    if known_workloads is not None:
        known = set(known_workloads)
        for i, name in enumerate(suite.get("workloads", [])):
            if name not in known:
                found.append(
                    problem(
                        ["suite", "workloads", i],
                        f"unknown workload {name!r}; known: " + ", ".join(sorted(known)),
                    )
                )
        for name in thresholds.get("per_workload", {}):
            if name not in known:
                found.append(problem(["thresholds", "per_workload", name], f"unknown workload {name!r}"))
    if found:
        raise InputError(found)

    knobs = data.get("knobs", {})
    knob_sets = tuple(
        dict(zip(KNOBS, values, strict=True))
        for values in itertools.product(*(knobs.get(k, [False]) for k in KNOBS))
    )
    return Plan(
        name=data["name"],
        backend=backend,
        cells=tuple(cells),
        baseline_id=baseline[0].id,
        knob_sets=knob_sets,
        suite=suite,
        regression_pct=float(thresholds.get("regression_pct", DEFAULT_REGRESSION_PCT)),
        per_workload_pct={k: float(v) for k, v in thresholds.get("per_workload", {}).items()},
        matrix_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        source=source,
        rounds=int(data.get("rounds", DEFAULT_ROUNDS)),
        alpha=float(thresholds.get("alpha", DEFAULT_ALPHA)),
        slurm=dict(data.get("slurm", {})),
        docker=dict(data.get("docker", {})),
    )


def _backend_problems(backend: str, cells: list[Cell], problem: Any) -> list[Problem]:
    """What the chosen backend cannot realize, found before anything runs."""
    found = []
    named_images: set[str] = set()
    for cell in cells:
        kind, value = cell.cudnn.kind, cell.cudnn.value or ""
        if backend == "local":
            if cell.base_image != "auto" and cell.base_image not in named_images:
                named_images.add(cell.base_image)
                found.append(problem(["axes", "base_image"], f"{cell.base_image!r}: the local backend runs no "
                                     "image, so a base_image changes nothing; it needs backend: docker"))  # fmt: skip
            if kind == "wheel" or cell.torch == "image" or value == "image":
                what = "torch: image" if cell.torch == "image" else f"cudnn {cell.cudnn.label}"
                found.append(
                    problem(
                        ["axes", "torch" if cell.torch == "image" else "cudnn"],
                        f"cell {cell.id}: {what} needs backend: docker; the local backend realizes "
                        "torch: installed with cudnn bundled, system (a version, auto or a folder), disabled",
                    )
                )
            continue
        if cell.torch == "image":
            found += _image_torch_problems(cell, problem)
            continue
        if "installed" in (cell.torch, cell.python):
            found.append(
                problem(
                    ["axes"],
                    f"cell {cell.id}: 'installed' is for the local backend; backend: docker "
                    "needs a concrete torch (e.g. '2.11.0+cu130') and python (e.g. '3.12')",
                )
            )
        elif cell.base_image == "auto" and cell.torch.split("+")[1] not in ("cpu", *CUDA_BASES):
            found.append(problem(["axes", "torch"], f"cell {cell.id}: no CUDA base image is known for "
                                 f"{cell.torch.split('+')[1]} (known: {', '.join(CUDA_BASES)}); name one as "
                                 "base_image, or pick a known variant"))  # fmt: skip
        elif cell.torch.endswith("+cpu") and kind in ("wheel", "system"):
            found.append(
                problem(
                    ["axes", "cudnn"],
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
                problem(
                    ["axes", "cudnn"],
                    f"cell {cell.id}: backend: docker installs NVIDIA's apt package, so system needs its "
                    "full version, e.g. {system: '9.14.0.64'}, or 'image' for the cuDNN already in the base",
                )
            )
    return found


def _image_torch_problems(cell: Cell, problem: Any) -> list[Problem]:
    """torch: image runs the torch a base image already holds, with that image's own Python."""
    found = []
    if cell.base_image == "auto":
        found.append(
            problem(
                ["axes", "base_image"],
                f"cell {cell.id}: torch: image takes the torch already in the base image, so base_image "
                "must name that image (e.g. nvcr.io/nvidia/pytorch:25.10-py3), not auto",
            )
        )
    if cell.python != "installed":
        found.append(
            problem(
                ["axes", "python"],
                f"cell {cell.id}: torch: image runs the base image's own Python; leave python out and "
                "set docker.image_python if it is not /usr/bin/python3",
            )
        )
    if cell.cudnn.kind in ("wheel", "system") and cell.cudnn.value != "image":
        found.append(
            problem(
                ["axes", "cudnn"],
                f"cell {cell.id}: torch: image takes cudnn bundled (the image's torch as it is), disabled, "
                "or {system: image} (NVIDIA's cuDNN installed in the image)",
            )
        )
    return found
