"""What the analysis found, before any section or format: what is compared (``View``) and what the
analysis found in it (``Analysis``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from harness.plan.model import Cell, Plan
from harness.report.analysis import release_gate
from harness.report.analysis.families import FamilyLine
from harness.report.analysis.per_torch import PerTorch
from harness.report.analysis.series import Series
from harness.suite.document import ResultDocument


@dataclass(frozen=True)
class View:
    """What is compared with what: groups (cells, or the sides of an ad-hoc compare) and the thresholds."""

    name: str
    baseline: str
    groups: tuple[str, ...]
    labels: dict[str, str]
    default_pct: float
    alpha: float
    rounds: int  # asked for per group; 0 where unknown (ad-hoc compare)
    note: str
    per_workload_pct: dict[str, float] = field(default_factory=dict)
    cells: tuple[Cell, ...] = ()  # the matrix's cells, where the groups are cells (not a compare)
    cautions: tuple[str, ...] = ()  # what a reader must read first, as its maker knows (a compare's sides)
    matrix: str | None = None  # the matrix file the groups came from, where they are its cells
    cpu_pct: float | None = None  # every row's threshold where every result ran on a CPU (None: default_pct)

    def threshold_pct(self, workload: str) -> float:
        return self.per_workload_pct.get(workload, self.default_pct)

    def on(self, devices: set[str]) -> View:
        """The view that judges results run on ``devices``: on CPUs alone, at ``cpu_pct`` where given."""
        if self.cpu_pct is None or devices != {"cpu"}:
            return self
        return dataclasses.replace(self, default_pct=self.cpu_pct)

    @property
    def letters(self) -> dict[str, str]:
        """The short name of each group in tables and plots: A, B, ... in the order of ``groups``."""
        return {g: chr(65 + i) if i < 26 else f"G{i}" for i, g in enumerate(self.groups)}

    @classmethod
    def from_plan(cls, plan: Plan) -> View:
        return cls(
            name=plan.name,
            baseline=plan.baseline_id,
            groups=tuple(c.id for c in plan.cells),
            labels={c.id: c.label for c in plan.cells},
            default_pct=plan.regression_pct,
            alpha=plan.alpha,
            rounds=plan.rounds,
            note=f"sha256 `{plan.matrix_sha256[:12]}`, suite profile `{plan.suite.profile}`",
            per_workload_pct=plan.per_workload_pct,
            cells=plan.cells,
            matrix=plan.source,
            cpu_pct=plan.cpu_regression_pct,
        )


@dataclass(frozen=True)
class Analysis:
    frame: pd.DataFrame
    timing: pd.DataFrame
    numerics: pd.DataFrame
    beyond_tolerance: pd.DataFrame  # every group's measurements beyond their tolerance, baseline included
    autotuning: pd.DataFrame  # cudnn_benchmark off vs on within each group (autotuning.COLUMNS)
    gate: release_gate.Gate
    docs: dict[str, list[tuple[ResultDocument, str]]]  # group -> (document, file) per round
    samples: dict[tuple[str, str, str, str], list[float]]
    outside: tuple[tuple[str, str], ...] = ()  # (file, cell id) of valid results of no group: not compared
    series: Series | None = None  # along the matrix's release axis, where it has one
    families: tuple[FamilyLine, ...] = ()  # each candidate against the baseline, summed up by family
    per_torch: PerTorch | None = None  # each torch build's cuDNN sources against its own baseline source
