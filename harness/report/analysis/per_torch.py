"""Per torch build: each cuDNN source judged against the same build's cell with the baseline's cuDNN source
(that build's local baseline), never against another build's.

A matrix of torch builds x cuDNN sources compares every cell against one baseline, so ``2.13.0 + system``
against ``installed + bundled`` mixes the torch change with the cuDNN change. Per build the question is
which cuDNN to pair with it: each source's cell is judged row by row against the build's own cell with the
baseline's source, with the verdicts' own statistics, thresholds and alpha (``row_verdicts.timing``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from harness import csvsafe
from harness.plan.model import Cell
from harness.report.analysis import families, frames, row_verdicts, stats
from harness.report.analysis.families import VERDICTS, FamilyLine

# what a local baseline judges: its build's other cells' ids -> their verdict rows (row_verdicts.timing)
Judge = Callable[[str, tuple[str, ...]], pd.DataFrame]
CSV_COLUMNS = (
    "torch",
    "cudnn",
    "cell",
    "baseline",
    "workload",
    "dtype",
    "mode",
    "knobs",
    "verdict",
    "ratio",
    "family",
    "what_ran",
)

# a row as verdict.json and per_torch.csv hold it: its mode's id (dtype) and its name (mode)
ROW_FIELDS = ("workload", "dtype", "mode", "knobs", "verdict", "ratio")


@dataclass(frozen=True)
class Row:
    """One verdict row of a source against its local baseline."""

    workload: str
    dtype: str
    knobs: str
    verdict: str
    ratio: float | None
    what_ran: str | None

    @property
    def family(self) -> str:
        return families.family_of(self.workload)

    @property
    def mode(self) -> str:
        """The precision mode's name (``precision.label``)."""
        return frames.mode(self.dtype, self.knobs)

    @property
    def is_model(self) -> bool:
        return self.family.startswith(families.MODEL)


@dataclass(frozen=True)
class SourceLine:
    """One cuDNN source under one torch build, judged against that build's local baseline."""

    torch: str  # the build, as the plan's tables show it
    cudnn: str  # the source's label (``bundled``, ``system:auto``, ``wheel:9.28.1.4``)
    cell: str  # the judged cell's id
    baseline: str | None  # the local baseline's cell id; None: the build has no cell with that source
    rows: tuple[Row, ...] = ()
    families: tuple[FamilyLine, ...] = ()  # the rows summed up by family, model rows first

    @property
    def counts(self) -> dict[str, int]:
        return {word: sum(1 for row in self.rows if row.verdict == word) for word in VERDICTS}

    @property
    def models(self) -> tuple[Row, ...]:
        return tuple(row for row in self.rows if row.is_model)


@dataclass(frozen=True)
class PerTorch:
    source: str  # the baseline's cuDNN source: every build's local baseline holds it
    lines: tuple[SourceLine, ...]  # by build, then by source, in the plan's order
    left_out: tuple[str, ...] = ()  # cells of another base image or python than the baseline's

    @property
    def unjudged(self) -> tuple[str, ...]:
        """The builds with no cell of the baseline's source: their sources are judged against nothing."""
        return tuple(dict.fromkeys(line.torch for line in self.lines if line.baseline is None))

    def to_json(self) -> list[dict[str, object]]:
        """verdict.json's ``per_torch``: a source under a build, its counts and its model rows."""
        return [
            {
                "torch": line.torch,
                "cudnn": line.cudnn,
                "cell": line.cell,
                "baseline": line.baseline,
                "rows": len(line.rows),
                "counts": line.counts,
                "models": [{k: getattr(row, k) for k in ROW_FIELDS} for row in line.models],
                "families": families.to_json(line.families),
            }
            for line in self.lines
        ]

    def to_csv(self) -> str:
        """per_torch.csv: a verdict row a line, with its build, source, local baseline and family."""
        records = [
            {
                "torch": line.torch,
                "cudnn": line.cudnn,
                "cell": line.cell,
                "baseline": line.baseline,
                **{k: getattr(row, k) for k in ROW_FIELDS},
                "family": row.family,
                "what_ran": row.what_ran,
            }
            for line in self.lines
            for row in line.rows
        ]
        return csvsafe.to_csv(pd.DataFrame(records, columns=list(CSV_COLUMNS)))


def build(
    cells: Sequence[Cell],
    baseline: str,
    frame: pd.DataFrame,
    timing: pd.DataFrame,
    threshold_pct: Callable[[str], float],
    alpha: float,
    samples: dict[tuple[str, str, str, str], list[float]],
) -> PerTorch | None:
    """Each build's sources against its local baseline, or None where the cells alike (the baseline's base
    image and python) hold fewer than two torch builds or two cuDNN sources, or nothing was measured.
    ``timing``: the verdicts against ``baseline``, which are its own build's already."""
    base = next((cell for cell in cells if cell.id == baseline), None)
    if base is None or frame.empty or "workload" not in frame:
        return None
    alike = [c for c in cells if (c.base_image, c.python) == (base.base_image, base.python)]
    builds = list(dict.fromkeys(c.torch for c in alike))
    if len(builds) < 2 or len({c.cudnn for c in alike}) < 2:
        return None

    def judge(local: str, groups: tuple[str, ...]) -> pd.DataFrame:
        if local == baseline:  # the scorecard's own verdicts: one judgement of each row, never two
            return timing[timing["group"].isin(groups)] if not timing.empty else timing
        return row_verdicts.timing(frame, local, (local, *groups), threshold_pct, alpha, samples)

    measured = set(frame.loc[frame["status"] == "ok", "group"]) if "status" in frame else set()
    lines = [
        line
        for torch in builds
        for line in _lines([c for c in alike if c.torch == torch], base, judge, measured)
    ]
    return PerTorch(base.cudnn.label, tuple(lines), tuple(c.id for c in cells if c not in alike))


def _lines(mine: list[Cell], base: Cell, judge: Judge, measured: set[str]) -> list[SourceLine]:
    """One build's sources, each against the build's cell with the baseline's source, where it has one that
    measured something (a local baseline that failed its checks judges nothing: its sources are not judged,
    never called failed for it)."""
    local = next((c for c in mine if c.cudnn == base.cudnn), None)
    others = [c for c in mine if c.cudnn != base.cudnn]
    if local is None or local.id not in measured:
        return [SourceLine(c.torch, c.cudnn.label, c.id, None) for c in others]
    verdicts = judge(local.id, tuple(c.id for c in others)) if others else pd.DataFrame()
    return [_judged(cell, local, verdicts) for cell in others]


def _judged(cell: Cell, local: Cell, verdicts: pd.DataFrame) -> SourceLine:
    """``cell``'s verdict rows among ``verdicts`` (none where its runs measured nothing), summed up."""
    if verdicts.empty:
        return SourceLine(cell.torch, cell.cudnn.label, cell.id, local.id)
    judged = verdicts[(verdicts["group"] == cell.id) & verdicts["verdict"].notna()]
    summed = families.summarize(judged, cell.label, local.label)
    return SourceLine(cell.torch, cell.cudnn.label, cell.id, local.id, _rows(judged), tuple(summed))


def _rows(judged: pd.DataFrame) -> tuple[Row, ...]:
    """The verdict rows, model rows first, the others in their order."""
    rows = [
        Row(
            str(r["workload"]),
            str(r["dtype"]),
            str(r["knobs"]),
            str(r["verdict"]),
            float(r["ratio"]) if stats.finite(r.get("ratio")) else None,
            r["what_ran"] if isinstance(r.get("what_ran"), str) else None,
        )
        for r in judged.to_dict("records")
    ]
    return tuple(sorted(rows, key=lambda row: not row.is_model))
