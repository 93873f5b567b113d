"""What a report is made of, before any format: what is compared (``View``), what the analysis found
(``Analysis``), and sections of tables whose cells carry their raw number and kind beside their text
(``Value``).

The Markdown and HTML writers read only this; neither parses text the other formats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from harness.plan.model import Cell as MatrixCell
from harness.plan.model import Plan
from harness.report import release_gate
from harness.report.families import FamilyLine
from harness.report.per_torch import PerTorch
from harness.report.series import Series
from harness.suite.document import ResultDocument

Kind = Literal["text", "number", "duration", "verdict"]
VERDICT_ORDER = {"slower": 0, "failed": 1, "inconclusive": 2, "missing": 3, "faster": 4, "same": 5}
MARK = {
    "slower": "▼ slower",
    "faster": "▲ faster",
    "same": "= same",
    "inconclusive": "? inconclusive",
    "failed": "✗ failed",
    "missing": "– missing",
}


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
    cells: tuple[MatrixCell, ...] = ()  # the matrix's cells, where the groups are cells (not a compare)
    cautions: tuple[str, ...] = ()  # what a reader must read first, as its maker knows (a compare's sides)
    matrix: str | None = None  # the matrix file the groups came from, where they are its cells

    def threshold_pct(self, workload: str) -> float:
        return self.per_workload_pct.get(workload, self.default_pct)

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


@dataclass(frozen=True)
class Value:
    """A table cell: the text shown, the number it stands for (sorting goes by it), what kind of value it is,
    and, for a number taken from a result file, the file it links to (relative to the report)."""

    text: str
    number: float | None = None
    kind: Kind = "text"
    href: str | None = None
    verdict: str | None = None  # kind 'verdict': one of VERDICT_ORDER's keys


Cell = Value | str | int | float | None | list[Value]


def plain_text(value: object) -> str:
    """A plain cell's text: empty for None and NaN (a missing number in a pandas frame), as every
    format shows it."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def verdict(word: str) -> Value:
    return Value(MARK[word], kind="verdict", verdict=word)


@dataclass(frozen=True)
class Section:
    title: str
    intro: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()
    level: int = 2
    plots_after: bool = False  # the HTML page puts its plots after this section
    collapsed: bool = False  # the HTML page folds it away (<details>): reference, not the answer
    filterable: bool = False  # the HTML page hides its 'same' rows until asked, and can search its rows
    figure: str = ""  # a plot's kind (plots.Plot): the HTML page shows those plots here; Markdown has none

    @property
    def anchor(self) -> str:
        """The id GitHub gives its heading: lower case, spaces to dashes, other punctuation dropped."""
        kept = "".join(c for c in self.title.lower() if c.isalnum() or c in " -_")
        return kept.replace(" ", "-")


@dataclass(frozen=True)
class Document:
    title: str
    header: str  # prose with the few Markdown marks both writers know: **bold**, `code`, a fenced block
    sections: tuple[Section, ...]
    # link target (relative to the report) -> (result file, measurement index): one measurement's own
    # file, which render writes, so a number links to its measurement and not to a multi-MB result
    extracts: dict[str, tuple[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    markdown: Path
    html: Path
    csv: Path
    verdict_json: Path
