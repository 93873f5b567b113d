"""Across releases: each row's time along the matrix's release axis, and where each change began.

Per row, every release's time is its ratio to the baseline (the verdict table's ratio). A change begins
between two neighbouring releases where the later one is judged slower or faster than the earlier one (the
same statistics as every verdict, the earlier release as the baseline), or where different kernels ran.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness import csvsafe
from harness.plan.model import Cell
from harness.plan.releases import ReleaseAxis, release_axis
from harness.report.analysis import families, frames, row_verdicts
from harness.report.analysis.families import FamilyLine
from harness.report.analysis.frames import KEYS, NAMED

CHANGED = ("slower", "faster", "failed")  # failed: ran at the earlier release, not at the later one


@dataclass(frozen=True)
class Change:
    """Where one row changed: between two neighbouring releases."""

    workload: str
    dtype: str
    knobs: str
    before: str  # release labels
    after: str
    verdict: str  # after against before: slower, faster, or same (with other kernels)
    ratio: float | None  # after / before
    what_ran: str | None  # what ran differently, if anything

    @property
    def mode(self) -> str:
        """The precision mode's name (``precision.label``)."""
        return frames.mode(self.dtype, self.knobs)

    def line(self, knobs_shown: bool = True) -> str:
        """``<row>: <release> -> <next release>, <what changed in what ran>, <ratio>``; the knobs in the
        row's name where a matrix has several knob sets."""
        ran = self.what_ran or "the same kernels"
        ratio = f"ratio {self.ratio:.3f} ({self.verdict})" if self.ratio is not None else self.verdict
        knobs = f" [{self.knobs}]" if self.knobs and knobs_shown else ""
        return f"{self.workload} {self.mode}{knobs}: {self.before} -> {self.after}, {ran}, {ratio}"


@dataclass(frozen=True)
class Series:
    axis: ReleaseAxis
    # workload, dtype, mode, knobs, then one column per release label: its ratio to the baseline
    ratios: pd.DataFrame
    changes: tuple[Change, ...]
    baseline_label: str
    # each release against the one before it, summed up by family (``families``)
    families: tuple[FamilyLine, ...] = ()

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.axis.releases]

    def to_json(self) -> dict[str, object]:
        """The series and its change points, for verdict.json."""
        return {
            "axis": self.axis.axis,
            "releases": [
                {"label": r.label, "version": r.version, "cell": r.cell_id} for r in self.axis.releases
            ],
            "off_axis": list(self.axis.off_axis),
            "rows": [
                {
                    **{k: row[k] for k in NAMED},
                    "ratios": [_number(row[label]) for label in self.labels],
                }
                for row in self.ratios.to_dict("records")
            ],
            "changes": [
                {
                    "workload": c.workload,
                    "dtype": c.dtype,
                    "mode": c.mode,
                    "knobs": c.knobs,
                    "before": c.before,
                    "after": c.after,
                    "verdict": c.verdict,
                    "ratio": c.ratio,
                    "what_ran": c.what_ran,
                }
                for c in self.changes
            ],
            "families": families.to_json(self.families),
        }

    def changes_csv(self) -> str:
        """changes.csv: a change point a line, with the family row it counts in."""
        records = [
            {**c.__dict__, "mode": c.mode, "family": families.family_of(c.workload)} for c in self.changes
        ]
        fields = list(Change.__dataclass_fields__)
        columns = [*fields[:2], "mode", *fields[2:], "family"]  # the mode's name beside its dtype
        return csvsafe.to_csv(pd.DataFrame(records, columns=columns))


def build(
    cells: Sequence[Cell],
    bundled_versions: Mapping[str, str],
    frame: pd.DataFrame,
    timing: pd.DataFrame,
    baseline: str,
    threshold_pct: Callable[[str], float],
    alpha: float,
    samples: dict[tuple[str, str, str, str], list[float]],
) -> Series | None:
    """The release series of ``cells``, or None where they have no release axis or nothing was measured."""
    axis = release_axis(cells, bundled_versions)
    if axis is None or frame.empty or "workload" not in frame:
        return None
    measured = frame[frame["workload"].notna()]
    rows = list(dict.fromkeys(zip(measured["workload"], measured["dtype"], measured["knobs"], strict=True)))
    ratio_of = {
        (r["group"], r["workload"], r["dtype"], r["knobs"]): r["ratio"] for r in timing.to_dict("records")
    }
    table = []
    for key in rows:
        entry: dict[str, object] = dict(zip(KEYS, key, strict=True))
        entry["mode"] = frames.mode(key[1], key[2])
        for release in axis.releases:
            entry[release.label] = (
                1.0 if release.cell_id == baseline else ratio_of.get((release.cell_id, *key))
            )
        table.append(entry)
    ratios = pd.DataFrame(table, columns=[*NAMED, *(r.label for r in axis.releases)])
    changes = []
    summed: list[FamilyLine] = []
    judged = set(timing["group"]) if "group" in timing else set()
    for earlier, later in itertools.pairwise(axis.releases):
        if earlier.cell_id == baseline and later.cell_id in judged:  # judged so already: not twice
            pair = timing[timing["group"] == later.cell_id]
        else:
            pair = row_verdicts.timing(
                frame, earlier.cell_id, (earlier.cell_id, later.cell_id), threshold_pct, alpha, samples
            )
        summed += families.summarize(pair[pair["group"] == later.cell_id], later.label, earlier.label)
        for row in pair.to_dict("records"):
            ran_once = row["verdict"] == "missing" and str(row.get("reason")).startswith("no baseline")
            if row["verdict"] in CHANGED or ran_once or row.get("what_ran") == "changed":
                what = row.get("ran_change") if isinstance(row.get("ran_change"), str) else None
                if row["verdict"] == "failed" or ran_once:  # ran on one side only: say why not
                    failed_at = earlier.label if ran_once else later.label
                    why = str(row.get("reason")).split(": ", 1)[-1]
                    what = f"failed at {failed_at}: {why}"[:300]
                changes.append(
                    Change(
                        row["workload"],
                        row["dtype"],
                        row["knobs"],
                        earlier.label,
                        later.label,
                        "ran again" if ran_once else str(row["verdict"]),
                        _number(row.get("ratio")),
                        what,
                    )
                )
    ratios = _models_first(ratios)
    order = {
        key: i for i, key in enumerate(zip(ratios["workload"], ratios["dtype"], ratios["knobs"], strict=True))
    }
    changes.sort(key=lambda c: order.get((c.workload, c.dtype, c.knobs), len(order)))
    base = next((r.label for r in axis.releases if r.cell_id == baseline), baseline)
    return Series(axis, ratios, tuple(changes), base, tuple(summed))


def _models_first(ratios: pd.DataFrame) -> pd.DataFrame:
    """The table with its model rows (whole training steps) first, the others in their order."""
    if ratios.empty:
        return ratios
    model = ratios["workload"].map(lambda w: families.family_of(str(w)).startswith(families.MODEL))
    ordered: pd.DataFrame = pd.concat([ratios[model], ratios[~model]], ignore_index=True)
    return ordered


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number
