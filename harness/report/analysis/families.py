"""A comparison summed up by family: how many of a family's rows (a network's layers, at one pass, layout
and dtype) came out faster, slower or the same, the largest change each way, and in how many other
kernels ran.

A release changes its heuristics shape by shape, so one row's change says nothing of its family: the
summary states a release's change per family, and says where a family's rows moved both ways. Model
rows (a whole training step) are never pooled: each is its own line, first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from harness import csvsafe
from harness.report.analysis import frames, row_verdicts, stats
from harness.report.analysis.row_verdicts import TimingRow
from harness.suite.catalog import CATALOG

MODEL = "model"
VERDICTS = ("faster", "slower", "same", "inconclusive", "missing", "failed")


def family_of(workload: str) -> str:
    """The family row a workload counts in: its spec's group; a model row, its own; an id this suite
    does not know (another version's), ``other``."""
    spec = CATALOG.get(workload)
    if spec is None:
        return "other"
    group = spec.summary_group
    return f"{MODEL}: {workload}" if group == MODEL else group


@dataclass(frozen=True)
class Extreme:
    workload: str
    ratio: float

    def text(self) -> str:
        return f"{self.ratio:.3f} ({self.workload})"


@dataclass(frozen=True)
class FamilyLine:
    """One family at one dtype and knob set, in one comparison (``compared`` against ``against``)."""

    compared: str  # a release or cell label
    against: str
    family: str
    dtype: str
    knobs: str
    rows: int
    faster: int
    slower: int
    same: int
    undecided: int  # inconclusive
    failed: int  # failed or missing (as the scorecard counts them)
    ran_changed: int | None  # rows where other kernels ran (or a side's rounds differed); None: not recorded
    geomean: float | None  # of the rows' time ratios (a model row: its ratio)
    fastest: Extreme | None  # the largest change each way among rows judged so
    slowest: Extreme | None

    @property
    def is_model(self) -> bool:
        return self.family.startswith(MODEL)

    @property
    def mode(self) -> str:
        """The precision mode's name (``precision.label``)."""
        return frames.mode(self.dtype, self.knobs)

    @property
    def both_ways(self) -> bool:
        return self.faster > 0 and self.slower > 0

    @property
    def changed(self) -> bool:
        """A row judged faster, slower or failed, or other kernels run: what a summary lists."""
        return bool(self.faster or self.slower or self.failed or self.ran_changed)

    def words(self, knobs_shown: bool = False) -> str:
        """``conv forward NCHW fp32 (TF32 off): 5 of 23 rows faster (largest 0.548 (conv2d_r50_3x3)), 3
        slower (largest ...), 2 undecided, other kernels in 12``; a model row: ``model: train_resnet50 bf16:
        same, ratio 1.014, other kernels``."""
        knobs = f" [{self.knobs}]" if self.knobs and knobs_shown else ""
        head = f"{self.family} {self.mode}{knobs}"
        if self.is_model:
            ran = ", other kernels" if self.ran_changed else ""
            verdict = next(
                (
                    word
                    for word, n in (
                        ("faster", self.faster),
                        ("slower", self.slower),
                        ("failed", self.failed),
                        ("same", self.same),
                    )
                    if n
                ),
                "undecided",
            )
            return f"{head}: {verdict}" + (f", ratio {self.geomean:.3f}" if self.geomean else "") + ran
        parts = [f"{self.faster} of {self.rows} rows faster" + _largest(self.fastest)]
        parts.append(f"{self.slower} slower" + _largest(self.slowest))
        parts += [f"{n} {word}" for n, word in ((self.undecided, "undecided"), (self.failed, "failed")) if n]
        if self.ran_changed is not None:
            parts.append(f"other kernels in {self.ran_changed}")
        return f"{head}: " + ", ".join(parts)


def _largest(extreme: Extreme | None) -> str:
    return f" (largest {extreme.text()})" if extreme else ""


def summarize(verdicts: pd.DataFrame, compared: str, against: str) -> list[FamilyLine]:
    """The family lines of one comparison's verdict table (``row_verdicts.timing``'s rows of one side):
    model rows first, then the families in the order their first rows come, each dtype and knob set
    apart."""
    if verdicts.empty or not {"workload", "dtype", "verdict"} <= set(verdicts.columns):
        return []
    judged = verdicts[verdicts["verdict"].notna()]
    keyed: dict[tuple[str, str, str], list[TimingRow]] = {}
    for row in row_verdicts.records(judged):
        knobs = row.get("knobs")
        key = (family_of(str(row["workload"])), str(row["dtype"]), knobs if isinstance(knobs, str) else "")
        keyed.setdefault(key, []).append(row)
    lines = [_line(compared, against, key, rows) for key, rows in keyed.items()]
    return sorted(lines, key=lambda line: not line.is_model)  # stable: the catalog's order otherwise


def _line(compared: str, against: str, key: tuple[str, str, str], rows: list[TimingRow]) -> FamilyLine:
    count = {word: sum(1 for r in rows if r["verdict"] == word) for word in VERDICTS}
    ran = [r.get("what_ran") for r in rows]
    recorded = any(isinstance(value, str) for value in ran)
    return FamilyLine(
        compared,
        against,
        *key,
        rows=len(rows),
        faster=count["faster"],
        slower=count["slower"],
        same=count["same"],
        undecided=count["inconclusive"],
        failed=count["failed"] + count["missing"],
        ran_changed=sum(1 for value in ran if value in ("changed", "varies")) if recorded else None,
        geomean=stats.geomean(r.get("ratio") for r in rows),
        fastest=_extreme((r for r in rows if r["verdict"] == "faster"), min),
        slowest=_extreme((r for r in rows if r["verdict"] == "slower"), max),
    )


def _extreme(rows: Iterable[TimingRow], pick: Any) -> Extreme | None:
    judged = [(float(ratio), str(r["workload"])) for r in rows if stats.finite(ratio := r.get("ratio"))]
    if not judged:
        return None
    ratio, workload = pick(judged)
    return Extreme(workload, ratio)


def to_json(lines: Iterable[FamilyLine]) -> list[dict[str, object]]:
    """The lines as verdict.json holds them."""
    return [_with_mode(asdict(line), line) | {"both_ways": line.both_ways} for line in lines]


def _with_mode(record: dict[str, Any], line: FamilyLine) -> dict[str, Any]:
    """``record`` with the line's mode name right after its dtype."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        out[key] = value
        if key == "dtype":
            out["mode"] = line.mode
    return out


def to_csv(lines: Iterable[FamilyLine]) -> str:
    """families.csv: a line each, the extremes flattened."""
    records = []
    for line in lines:
        record = {k: v for k, v in _with_mode(asdict(line), line).items() if k not in ("fastest", "slowest")}
        for name in ("fastest", "slowest"):
            extreme: Extreme | None = getattr(line, name)
            record[f"{name}_ratio"] = extreme.ratio if extreme else None
            record[f"{name}_workload"] = extreme.workload if extreme else None
        record["both_ways"] = line.both_ways
        records.append(record)
    return csvsafe.to_csv(pd.DataFrame(records))
